"""The allow-rule attacks of issue 45, each asked instead of run: long options abbreviated as
getopt_long and git's parse-options accept them, sed's address flags before a command that runs
or writes, and "always" on a harmless command of a program that runs code by design."""

from __future__ import annotations

import json
import shlex

import pytest

from mini_letta.messages import ToolCall
from mini_letta.toolbox import writing_options
from mini_letta.toolbox.permissions import Permissions
from mini_letta.toolbox.writing_options import writes_or_runs


def bash(command: str) -> ToolCall:
    return ToolCall("call_1", "bash", json.dumps({"command": command}))


def allowed(rules: list[str], command: str, tmp_path) -> bool:
    permissions = Permissions(tmp_path)
    permissions.add(rules)
    return permissions.allowed_by(bash(command)) is not None


ABBREVIATED = [
    ("Bash(sed:*)", "sed --expr='1e touch /tmp/pwned' notes.txt"),
    ("Bash(sed:*)", "sed --e='1e id' notes.txt"),
    ("Bash(sed:*)", "sed --in-pl 's/a/b/' notes.txt"),
    ("Bash(sed:*)", "sed --fil=evil.sed notes.txt"),
    ("Bash(sort:*)", "sort --out=/root/.bashrc notes.txt"),
    ("Bash(sort:*)", "sort --compress-prog=sh notes.txt"),
    ("Bash(shuf:*)", "shuf --outp=/root/.bashrc notes.txt"),
    ("Bash(git grep:*)", "git grep --open-files='sh -c id' x"),
    ("Bash(git log:*)", "git log --outp=/root/.bashrc"),
    ("Bash(tar:*)", "tar --checkpoint-act=exec=id -cf a.tar ."),
    ("Bash(tar:*)", "tar --use=sh -cf a.tar ."),
    ("Bash(date:*)", "date --se=2020-01-01"),
]


@pytest.mark.parametrize(("rule", "command"), ABBREVIATED)
def test_an_abbreviated_long_option_is_not_covered_by_the_prefix(rule, command, tmp_path):
    assert not allowed([rule], command, tmp_path)


@pytest.mark.parametrize(("rule", "command"), ABBREVIATED)
def test_without_abbreviations_the_same_commands_would_run_unasked(rule, command, tmp_path, monkeypatch):
    """The protection switched off (only the whole name matches): each of them runs unasked."""
    monkeypatch.setattr(writing_options, "long_option_is",
                        lambda word, option, program: word == option or word.startswith(option + "="))
    assert allowed([rule], command, tmp_path)


@pytest.mark.parametrize(("rule", "command"), [
    ("Bash(sort:*)", "sort --reverse notes.txt"), ("Bash(sort:*)", "sort -r notes.txt"),
    ("Bash(git diff:*)", "git diff --output-indicator-new=+ x"), ("Bash(git log:*)", "git log --oneline"),
    ("Bash(sed:*)", "sed --posix -n p notes.txt"), ("Bash(sed:*)", "sed --debug p notes.txt"),
    ("Bash(sed:*)", "sed -E 's/a/b/' notes.txt"), ("Bash(tar:*)", "tar -tf a.tar"),
])
def test_other_options_are_still_covered(rule, command, tmp_path):
    assert allowed([rule], command, tmp_path)


def test_an_abbreviated_script_option_takes_the_next_word_as_the_script(tmp_path):
    assert not allowed(["Bash(sed:*)"], "sed -n --expr '1e touch /tmp/pwned' --expr p notes.txt", tmp_path)


def test_an_ambiguous_abbreviation_counts_as_each_option_it_begins(tmp_path):
    # `--o` begins git diff's --output and --output-indicator-*: git refuses it, an older git may not.
    assert not allowed(["Bash(git diff:*)"], "git diff --o=/root/.bashrc", tmp_path)


SED_SCRIPTS = [
    "sed '/re/Ie touch /tmp/pwned' notes.txt",
    "sed '/re/Me touch /tmp/pwned' notes.txt",
    "sed '/re/IMw /root/.bashrc' notes.txt",
    "sed -n '/a/I,/b/MW /root/.bashrc' notes.txt",
    "sed '\\,re,Ie id' notes.txt",
    "sed -nes/a/b/e notes.txt",
    "sed -ne p -e '1e id' notes.txt",
]


@pytest.mark.parametrize("command", SED_SCRIPTS)
def test_a_sed_script_with_address_flags_is_read_to_its_command(command, tmp_path):
    assert not allowed(["Bash(sed:*)"], command, tmp_path)


@pytest.mark.parametrize("command", SED_SCRIPTS)
def test_without_the_flags_and_clusters_read_the_scripts_would_pass(command, monkeypatch):
    """The protection switched off (address flags not skipped, option clusters not read): each is
    taken for a harmless command."""
    monkeypatch.setattr(writing_options, "_ADDRESS_FLAGS", "")
    monkeypatch.setattr(writing_options, "_SED_VALUED", "")
    assert writes_or_runs(tuple(shlex.split(command))) is None


@pytest.mark.parametrize(("harmless", "attack"), [
    ("awk '{print $1}' notes.txt", "awk 'BEGIN{system(\"touch /tmp/pwned\")}'"),
    ("gawk '{print $1}' notes.txt", "gawk 'BEGIN{system(\"id\")}'"),
    ("tar -tf a.tar", "tar --checkpoint=1 --checkpoint-action=exec='touch /tmp/pwned' -cf b.tar ."),
    ("tar -tf a.tar", "tar -I 'sh -c id' -cf b.tar ."),
    ("tar -tf a.tar", "tar -tf a.tar --to-command=id"),
    ("perl -ne print notes.txt", "perl -e 'system(\"id\")'"),
    ("python scripts/check.py", "python scripts/check.py; python -c 'import os'"),
    ("python3.11 -V", "python3.11 -c 'import os'"),
    ("env", "env sh -c id"),
    ("xargs -0 echo", "xargs sh -c id"),
    ("find . -exec ls {} +", "find . -exec sh -c id {} +"),
    ("sh -c 'echo hi'", "sh -c 'touch /tmp/pwned'"),
    ("nice ls", "nice sh -c id"),
    ("timeout 5 ls", "timeout 5 sh -c id"),
    ("ssh host uptime", "ssh host 'rm -rf ~'"),
])
def test_always_on_a_program_that_runs_code_remembers_only_the_exact_line(harmless, attack, tmp_path):
    permissions = Permissions(tmp_path)
    scopes = permissions.scopes(bash(harmless))
    assert [scope.rules for scope in scopes] == [(f"Bash({harmless})",)]
    assert scopes[0].label == "this exact command"
    permissions.remember(scopes[0])
    assert permissions.allowed_by(bash(harmless)) is not None
    assert permissions.allowed_by(bash(attack)) is None


def test_an_exact_rule_is_not_a_line_with_a_newline_where_it_had_a_space(tmp_path):
    """Spaces between words are spaces; a newline is two commands."""
    assert allowed(["Bash(echo hi rm -rf build)"], "echo  hi  rm -rf build", tmp_path)
    assert not allowed(["Bash(echo hi rm -rf build)"], "echo hi\nrm -rf build", tmp_path)


def test_a_command_read_only_at_run_time_gets_no_always(tmp_path):
    for command in ("awk \"$PROG\" notes.txt", "tar -xf *.tar", "perl $(cat x)"):
        assert Permissions(tmp_path).scopes(bash(command)) == []

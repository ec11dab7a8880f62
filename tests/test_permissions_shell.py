"""Allow rules read by tree-sitter-bash (issue 32): a table of commands, each with the rules in force,
the verdict (``allow``: runs without asking; ``ask``) and the parse as :mod:`shell_syntax` outlines
it; then one test per entry of the options that make a read-only command write files or run
programs, each shown to be allowed once its entry is taken out of the list."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mini_letta.messages import ToolCall
from mini_letta.toolbox import shell_syntax
from mini_letta.toolbox.permissions import Permissions, command_prefixes
from mini_letta.toolbox.writing_options import WRITING_OPTIONS

ROWS = [
    (['Bash(npm test:*)'], 'npm test', 'allow',
     'command(npm test)'),
    (['Bash(npm test:*)'], 'npm test -- --watch 2>&1', 'allow',
     'redirected_statement(command(npm test -- --watch) file_redirect(file_descriptor >& number))'),
    (['Bash(npm test:*)'], 'npm test a#b; touch X', 'ask',
     'command(npm test a#b) ; command(touch X)'),
    (['Bash(npm test:*)', 'Bash(touch:*)'], 'npm test a#b; touch X', 'allow',
     'command(npm test a#b) ; command(touch X)'),
    (['Bash(npm test:*)'], 'npm test #x\ntouch X', 'ask',
     'command(npm test) comment command(touch X)'),
    (['Bash(npm test:*)', 'Bash(touch:*)'], 'npm test #x\ntouch X', 'ask',
     'command(npm test) comment command(touch X)'),
    (['Bash(npm test:*)'], 'npm test\ntouch X', 'ask',
     'command(npm test) command(touch X)'),
    (['Bash(echo:*)'], 'echo pwned >| ~/.bashrc', 'ask',
     'redirected_statement(command(echo pwned) file_redirect(>| word))'),
    (['Bash(echo:*)'], 'echo pwned > ~/.bashrc', 'ask',
     'redirected_statement(command(echo pwned) file_redirect(> word))'),
    (['Bash(echo:*)'], 'echo pwned >> ~/.bashrc', 'ask',
     'redirected_statement(command(echo pwned) file_redirect(>> word))'),
    (['Bash(echo:*)'], 'echo pwned &> ~/.bashrc', 'ask',
     'redirected_statement(command(echo pwned) file_redirect(&> word))'),
    (['Bash(echo:*)'], 'echo pwned >& ~/.bashrc', 'ask',
     'redirected_statement(command(echo pwned) file_redirect(>& word))'),
    (['Bash(echo:*)'], 'echo quiet > /dev/null 2>&1', 'allow',
     'redirected_statement(command(echo quiet) file_redirect(> word) file_redirect(file_descriptor >& number))'),
    (['Bash(git log:*)'], 'git log --output=/root/.bashrc --format=%s', 'ask',
     'command(git log --output=/root/.bashrc --format=%s)'),
    (['Bash(git log:*)'], 'git log --output /root/.bashrc', 'ask',
     'command(git log --output /root/.bashrc)'),
    (['Bash(git log:*)'], 'git log --oneline -5', 'allow',
     'command(git log --oneline -5)'),
    (['Bash(git diff:*)'], 'git diff --output=x.patch', 'ask',
     'command(git diff --output=x.patch)'),
    (['Bash(git status:*)'], 'git status', 'allow',
     'command(git status)'),
    (['Bash(git status:*)'], 'git status -s && git push', 'ask',
     'list(command(git status -s) && command(git push))'),
    (['Bash(pytest:*)'], 'pytest -k x', 'allow',
     'command(pytest -k x)'),
    (['Bash(pytest:*)'], "pytest -k 'x and not y' tests/", 'allow',
     "command(pytest -k 'x and not y' tests/)"),
    (['Bash(ls:*)', 'Bash(grep:*)'], 'ls | grep x', 'allow',
     'pipeline(command(ls) | command(grep x))'),
    (['Bash(ls:*)'], 'ls | grep x', 'ask',
     'pipeline(command(ls) | command(grep x))'),
    (['Bash(cat:*)', 'Bash(grep:*)', 'Bash(sort:*)', 'Bash(uniq:*)', 'Bash(head:*)'], 'cat log.txt | grep error | sort | uniq -c | head -20', 'allow',
     'pipeline(command(cat log.txt) | command(grep error) | command(sort) | command(uniq -c) | command(head -20))'),
    (['Bash(sort:*)'], 'sort -o /etc/passwd list', 'ask',
     'command(sort -o /etc/passwd list)'),
    (['Bash(sort:*)'], 'sort -uo out.txt list', 'ask',
     'command(sort -uo out.txt list)'),
    (['Bash(cd:*)', 'Bash(make:*)'], 'cd sub && make', 'allow',
     'list(command(cd sub) && command(make))'),
    (['Bash(cd:*)', 'Bash(make:*)'], '(cd sub && make)', 'ask',
     'subshell(( list(command(cd sub) && command(make)) ))'),
    (['Bash(cat:*)'], 'cat <<EOF\nhi\nEOF', 'ask',
     'redirected_statement(command(cat) heredoc_redirect(<< heredoc_start heredoc_body heredoc_end))'),
    (['Bash(cat:*)'], 'cat <<< hi', 'ask',
     'command(cat <<< hi)'),
    (['Bash(cat:*)'], 'cat < notes.txt', 'allow',
     'redirected_statement(command(cat) file_redirect(< word))'),
    (['Bash(cat:*)'], 'cat < /dev/tcp/example.com/80', 'ask',
     'redirected_statement(command(cat) file_redirect(< word))'),
    (['Bash(diff:*)'], 'diff <(ls a) <(ls b)', 'ask',
     'command(diff <(ls a) <(ls b))'),
    (['Bash(echo:*)'], 'echo $(cat ~/.ssh/id_rsa)', 'ask',
     'command(echo $(cat ~/.ssh/id_rsa))'),
    (['Bash(echo:*)'], 'echo `whoami`', 'ask',
     'command(echo `whoami`)'),
    (['Bash(echo:*)'], 'echo "$(id)"', 'ask',
     'command(echo "$(id)")'),
    (['Bash(echo:*)'], 'echo "$HOME"', 'allow',
     'command(echo "$HOME")'),
    (['Bash(eval:*)'], "eval 'rm -rf ~'", 'ask',
     "command(eval 'rm -rf ~')"),
    (['Bash(exec:*)'], 'exec rm -rf ~', 'ask',
     'command(exec rm -rf ~)'),
    (['Bash(source:*)'], 'source ./evil.sh', 'ask',
     'command(source ./evil.sh)'),
    (['Bash(.:*)'], '. ./evil.sh', 'ask',
     'command(. ./evil.sh)'),
    (['Bash(ls:*)'], 'f() { rm -rf ~; }; ls', 'ask',
     'function_definition(word ( ) compound_statement({ command(rm -rf ~) ; })) ; command(ls)'),
    (['Bash(sleep:*)'], 'sleep 100 &', 'ask',
     'command(sleep 100) &'),
    (['Bash(npm test:*)'], 'PATH=/tmp npm test', 'ask',
     'command(PATH=/tmp npm test)'),
    (['Bash(npm test:*)'], 'sudo npm test', 'ask',
     'command(sudo npm test)'),
    (['Bash(find:*)'], "find . -name '*.py'", 'allow',
     "command(find . -name '*.py')"),
    (['Bash(find:*)'], "find . -name '*.pyc' -delete", 'ask',
     "command(find . -name '*.pyc' -delete)"),
    (['Bash(find:*)'], "find . -exec sh -c 'touch X' \\;", 'ask',
     "command(find . -exec sh -c 'touch X' \\;)"),
    (['Bash(sed:*)'], "sed -n 's/a/b/p' notes.txt", 'allow',
     "command(sed -n 's/a/b/p' notes.txt)"),
    (['Bash(sed:*)'], "sed -i 's/a/b/' notes.txt", 'ask',
     "command(sed -i 's/a/b/' notes.txt)"),
    (['Bash(sed:*)'], "sed 's/a/b/w /root/.bashrc' notes.txt", 'ask',
     "command(sed 's/a/b/w /root/.bashrc' notes.txt)"),
    (['Bash(sed:*)'], "sed '1e touch X' notes.txt", 'ask',
     "command(sed '1e touch X' notes.txt)"),
    (['Bash(ls:*)', 'Bash(tee:*)'], 'ls | tee out.txt', 'ask',
     'pipeline(command(ls) | command(tee out.txt))'),
    (['Bash(echo:*)'], "echo 'unclosed", 'ask',
     'command(echo) ERROR(ERROR)'),
    (['Bash(npm test:*)'], 'npm test \\\n && rm -rf ~', 'ask',
     'list(command(npm test) && command(rm -rf ~))'),
    (['Bash(git log:*)'], 'git log $OPTS', 'ask',
     'command(git log $OPTS)'),
    (['Bash(git log:*)'], 'git log --o*', 'ask',
     'command(git log --o*)'),
    (['Bash(ls:*)'], 'ls *.py', 'allow',
     'command(ls *.py)'),
    (['Bash(ls:*)'], '$CMD -la', 'ask',
     'command($CMD -la)'),
    (['Bash(npm:*)'], 'np\\m test', 'allow',
     'command(np\\m test)'),
    (['Bash(git status)'], 'git  status', 'allow',
     'command(git status)'),
    (['Bash(printf:*)'], "printf -v 'a[$(touch X)]' %s x", 'ask',
     "command(printf -v 'a[$(touch X)]' %s x)"),
    (['Bash(rg:*)'], 'rg --pre ./evil.sh TODO', 'ask',
     'command(rg --pre ./evil.sh TODO)'),
    (['Bash(rg:*)'], 'rg -n TODO src', 'allow',
     'command(rg -n TODO src)'),
    (['Bash'], 'f() { rm -rf ~; }; ls', 'allow',
     'function_definition(word ( ) compound_statement({ command(rm -rf ~) ; })) ; command(ls)'),
]


def verdict(rules: list[str], command: str, workspace: Path) -> str:
    permissions = Permissions(workspace)
    permissions.add(rules)
    call = ToolCall("call_1", "bash", json.dumps({"command": command}))
    return "allow" if permissions.allowed_by(call) else "ask"


@pytest.mark.parametrize(("rules", "command", "expected", "parse"), ROWS, ids=[row[1][:40] for row in ROWS])
def test_a_command_runs_unasked_only_when_every_part_it_parses_into_is_covered(rules, command, expected, parse,
                                                                                tmp_path):
    assert shell_syntax.read(command).outline == parse
    assert verdict(rules, command, tmp_path) == expected


def test_the_table_holds_the_attacks_of_the_issue_and_ordinary_commands():
    commands = {row[1] for row in ROWS}
    assert len(ROWS) >= 40
    assert {"npm test a#b; touch X", "npm test #x\ntouch X", "echo pwned >| ~/.bashrc",
            "git log --output=/root/.bashrc --format=%s", "npm test", "git status", "pytest -k x",
            "ls | grep x", "cd sub && make"} <= commands


@pytest.mark.parametrize("command", [row[1] for row in ROWS if row[2] == "ask" and row[0] != ["Bash"]])
def test_always_is_offered_only_for_what_a_prefix_rule_would_cover(command, tmp_path):
    """The same reading decides what "always" offers: a remembered scope must cover the command
    it was offered for, or none is offered."""
    prefixes = command_prefixes(command)
    if prefixes:
        assert verdict([f"Bash({prefix}:*)" for prefix in prefixes], command, tmp_path) == "allow", prefixes


def test_what_does_not_parse_cleanly_asks_and_says_why():
    for command in ("echo 'unclosed", "if true; then ls", "ls &&", "echo $((1 +", "cat <<EOF\nhi"):
        reading = shell_syntax.read(command)
        assert reading.hidden and reading.parts == (), command


def _entries():
    for words, options in WRITING_OPTIONS.items():
        for option in options:
            yield words, option


def _use(words: tuple[str, ...], option: str) -> str:
    """A command that uses ``option`` of ``words``, in the form the entry names."""
    if option == "*":
        example = "out.txt"
    elif option == "script":
        example = "'w out.txt' notes.txt"
    elif option.endswith("="):
        example = f"{option}out.bin"
    elif option.startswith("--"):
        example = f"{option}=out.txt"
    elif len(option) == 2:
        example = f"{option} out.txt"
    else:
        example = f". {option}"
    return f"{' '.join(words)} {example}"


@pytest.mark.parametrize(("words", "option"), list(_entries()), ids=[" ".join(w) + " " + o for w, o in _entries()])
def test_an_option_that_writes_or_runs_is_not_covered_by_the_commands_prefix(words, option, tmp_path, monkeypatch):
    rule = [f"Bash({' '.join(words)}:*)"]
    command = _use(words, option)
    assert verdict(rule, command, tmp_path) == "ask"
    assert command_prefixes(command) == []
    # With the entry taken out, the same command would run unasked: the entry is what stops it.
    monkeypatch.delitem(WRITING_OPTIONS[words], option)
    assert verdict(rule, command, tmp_path) == "allow"


@pytest.mark.parametrize(("command", "writes"), [
    ("sed -n 's/hello/world/p' notes.txt", False),
    ("sed -e 's/a/b/g' -e '/x/d' notes.txt", False),
    ("sed 'y/abc/xyz/;=' notes.txt", False),
    ("sed -e 's/a/b/' -e 'w out.txt' notes.txt", True),
    ("sed '/x/{p;W out.txt}' notes.txt", True),
    ("sed 's|a|b|ew' notes.txt", True),
    ("sed -ni 's/a/b/' notes.txt", True),
    ("sort -k2 -uo out.txt list", True),
    ("git log --output out.txt", True),
    ("dd if=a of=b", True),
    ("dd if=a", False),
])
def test_options_are_matched_in_every_spelling(command, writes):
    from mini_letta.toolbox.writing_options import writes_or_runs

    assert bool(writes_or_runs(shell_syntax.read(command).parts[0])) == writes


@pytest.mark.parametrize(("command", "reason", "exact"), [
    ("echo pwned >| ~/.bashrc", "it holds a redirection that overwrites a file even under noclobber (>|)", False),
    ("npm test #x\ntouch X", "it holds a comment", False),
    ("git log --output=/root/.bashrc", "git log --output writes the output to a file", True),
    ("sudo npm test", "sudo runs what it is given", True),
    ("python -c 'import os'", "python runs any code it is given", True),
])
def test_the_question_says_why_no_prefix_is_offered(command, reason, exact, tmp_path):
    """A command read completely gets "always" for its exact line; one that is not gets none."""
    call = ToolCall("call_1", "bash", json.dumps({"command": command}))
    permissions = Permissions(tmp_path)
    assert [scope.rules for scope in permissions.scopes(call)] == ([(f"Bash({command})",)] if exact else [])
    assert permissions.no_scope_reason(call) == reason


@pytest.mark.parametrize(("command", "prefixes"), [
    ("git -c core.pager='sh -c id' log", []), ("git --version", []), ("git", []), ("docker -H ssh://host ps", []),
    ("git status", ["git status"]), ("make -j4", ["make"]), ("make", ["make"]),
])
def test_a_program_of_subcommands_gets_no_always_without_one_first(command, prefixes):
    assert command_prefixes(command) == prefixes

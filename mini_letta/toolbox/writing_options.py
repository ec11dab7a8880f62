"""Options that make a read-only command write files or run programs.

``Bash(git log:*)`` is meant for reading history, but ``git log --output=~/.bashrc`` writes any file
and ``find . -exec sh -c … \\;`` runs anything. A prefix rule does not cover a command that uses one
of these (:func:`writes_or_runs`); an exact rule or ``Bash`` still does. ``WRITING_OPTIONS`` is the
list, as data: the command's first words, then each option and what it does. How an option is
matched:

- ``--name``: ``--name``, ``--name=value``, and any abbreviation of it (``--out=F`` for ``sort
  --output``, ``--in-pl`` for ``sed --in-place``), as getopt_long, argp and git's parse-options
  accept any unambiguous prefix. A prefix that is ambiguous counts as each option it begins (the
  program refuses it, or a version with fewer options takes it); a word that is exactly another
  option the program has (``mini_letta/data/long_options.json``, per program) is that option.
- ``-x`` (one letter): ``-x``, ``-xvalue`` and any cluster of short options that holds it (``-uo``).
- ``-name`` (find's single-dash words): exactly that word.
- ``name=`` (dd's operands): a word that starts with it.
- ``*``: every use (``tee`` writes the files it names, ``wget`` saves what it fetches).

An argument the shell decides when it runs (``$VAR``, a glob: a file named ``--output=x`` matches
``--o*``) could be any of these, so it is not covered either when the command has an entry.
"""

from __future__ import annotations

import functools

WRITING_OPTIONS: dict[tuple[str, ...], dict[str, str]] = {
    ("git", "log"): {"--output": "writes the output to a file", "--ext-diff": "runs an external diff program"},
    ("git", "diff"): {"--output": "writes the output to a file", "--ext-diff": "runs an external diff program"},
    ("git", "show"): {"--output": "writes the output to a file", "--ext-diff": "runs an external diff program"},
    ("git", "whatchanged"): {"--output": "writes the output to a file"},
    ("git", "format-patch"): {"-o": "writes patches into a folder", "--output-directory": "writes patches into a folder",
                              "--output": "writes the output to a file"},
    ("git", "archive"): {"-o": "writes the archive to a file", "--output": "writes the archive to a file",
                         "--exec": "runs a program on the remote side"},
    ("git", "grep"): {"-O": "opens the files found in a program", "--open-files-in-pager": "opens the files in a program"},
    ("git", "ls-remote"): {"--upload-pack": "runs a program", "-u": "runs a program"},
    ("git", "fetch"): {"--upload-pack": "runs a program"},
    ("git", "pull"): {"--upload-pack": "runs a program"},
    ("git", "clone"): {"--upload-pack": "runs a program", "-u": "runs a program"},
    ("git", "push"): {"--receive-pack": "runs a program", "--exec": "runs a program"},
    ("find",): {"-delete": "deletes files", "-exec": "runs a program", "-execdir": "runs a program",
                "-ok": "runs a program", "-okdir": "runs a program", "-fprint": "writes a file",
                "-fprint0": "writes a file", "-fprintf": "writes a file", "-fls": "writes a file"},
    ("fd",): {"-x": "runs a program", "--exec": "runs a program", "-X": "runs a program",
              "--exec-batch": "runs a program"},
    ("sort",): {"-o": "writes the output to a file", "--output": "writes the output to a file",
                "--compress-program": "runs a program"},
    ("shuf",): {"-o": "writes the output to a file", "--output": "writes the output to a file"},
    ("tee",): {"*": "writes the files it names"},
    ("sed",): {"-i": "edits files in place", "--in-place": "edits files in place",
               "-f": "reads a script that may write files or run programs",
               "--file": "reads a script that may write files or run programs",
               "script": "its script writes files (w, W) or runs programs (e)"},
    ("rg",): {"--pre": "runs a program on every file searched"},
    ("tree",): {"-o": "writes the output to a file"},
    ("less",): {"-o": "copies the input to a file", "-O": "copies the input to a file",
                "--log-file": "copies the input to a file", "--LOG-FILE": "copies the input to a file"},
    ("man",): {"-P": "runs a pager program", "--pager": "runs a pager program", "-H": "runs a browser",
               "--html": "runs a browser"},
    ("date",): {"-s": "sets the system clock", "--set": "sets the system clock"},
    ("dd",): {"of=": "writes a file"},
    ("curl",): {"-o": "writes a file", "--output": "writes a file", "-O": "writes a file",
                "--remote-name": "writes a file", "--remote-name-all": "writes files",
                "-D": "writes a file", "--dump-header": "writes a file", "-c": "writes a file",
                "--cookie-jar": "writes a file", "--trace": "writes a file", "--trace-ascii": "writes a file",
                "--stderr": "writes a file", "--libcurl": "writes a file", "-K": "reads options from a file",
                "--config": "reads options from a file"},
    ("wget",): {"*": "saves what it fetches"},
    ("tar",): {"-I": "runs a compression program", "--use-compress-program": "runs a compression program",
               "--checkpoint-action": "runs a program at checkpoints", "--to-command": "runs a program on each file",
               "--info-script": "runs a program between volumes", "-F": "runs a program between volumes",
               "--new-volume-script": "runs a program between volumes", "--rsh-command": "runs a program",
               "--rmt-command": "runs a program", "--index-file": "writes a file"},
}
# tar's first word may be its options without a dash ("tar xIf prog a.tar"), as letters.
_OLD_STYLE = {("tar",)}
# sed's short options that take a value (the rest of the word, or the next word); -i takes only the rest.
_SED_VALUED = "efl"
# GNU sed's flags after an address regex (/re/I: any case, /re/M: multi-line), before its command.
_ADDRESS_FLAGS = "IM"


@functools.lru_cache(maxsize=1)
def long_options() -> dict[str, frozenset[str]]:
    """Every long option (without ``--``) of each program in the table, by its words ("git grep")."""
    from mini_letta.resources import data

    return {name: frozenset(options) for name, options in data("long_options.json").items() if not name.startswith("_")}


def long_option_is(word: str, option: str, program: str) -> bool:
    """Whether ``word`` (``--abbrev`` or ``--abbrev=value``) may be the long ``option`` (``--name``)
    of ``program``, read as getopt_long reads it."""
    if not word.startswith("--") or len(word) < 3:
        return False
    name = word[2:].split("=", 1)[0]
    if name == option[2:]:
        return True
    if name in long_options().get(program, ()):
        return False  # exactly another option: that one
    return bool(name) and option[2:].startswith(name)


def writes_or_runs(words: tuple[str | None, ...]) -> str | None:
    """Why ``words`` (a simple command; None for a word known only when it runs) writes files or
    runs programs through an option of :data:`WRITING_OPTIONS`, or None."""
    for command, options in WRITING_OPTIONS.items():
        if tuple(words[:len(command)]) != command:
            continue
        name = " ".join(command)
        if "*" in options:
            return f"{name} {options['*']}"
        arguments = words[len(command):]
        if None in arguments:
            return f"{name} with an argument known only when it runs, which could be an option that writes files"
        for index, word in enumerate(arguments):
            old_style = index == 0 and command in _OLD_STYLE and not word.startswith("-")
            for option, does in options.items():
                if option != "script" and _matches(option, "-" + word if old_style else word, name):
                    return f"{name} {option} {does}"
        if "script" in options and any(_sed_script_writes(script) for script in _sed_scripts(arguments)):
            return f"{name}: {options['script']}"
    return None


def _matches(option: str, word: str, program: str) -> bool:
    if option.endswith("="):
        return word.startswith(option)
    if option.startswith("--"):
        return long_option_is(word, option, program)
    if len(option) == 2:
        return word.startswith("-") and not word.startswith("--") and option[1] in word[1:]
    return word == option


def _sed_scripts(arguments) -> list[str]:
    """The scripts sed will run: each ``-e``/``--expression`` value (glued, in a cluster such as
    ``-ne SCRIPT`` or ``-nes/a/b/e``, or abbreviated ``--expr=SCRIPT``), else its first operand."""
    scripts, operands, words = [], [], iter(arguments)
    for word in words:
        if word == "--":
            operands.extend(words)
        elif word.startswith("--"):
            takes = next((o for o in ("--expression", "--file", "--line-length") if long_option_is(word, o, "sed")), None)
            if takes is not None and "=" not in word:
                value = next(words, "")
            else:
                value = word.split("=", 1)[1] if "=" in word else ""
            if takes == "--expression" or (takes is None and long_option_is(word, "--expression", "sed")):
                scripts.append(value)
        elif word.startswith("-") and word != "-":
            for at, letter in enumerate(word[1:], start=2):
                if letter == "i":
                    break  # the rest is the in-place suffix
                if letter in _SED_VALUED:
                    value = word[at:] or next(words, "")
                    if letter == "e":
                        scripts.append(value)
                    break
        else:
            operands.append(word)
    return scripts or operands[:1]


def _skip_delimited(script: str, start: int, delimiter: str) -> int:
    """The index just past the next unescaped ``delimiter`` from ``start``."""
    index = start
    while index < len(script):
        if script[index] == "\\":
            index += 2
            continue
        if script[index] == delimiter:
            return index + 1
        index += 1
    return index


def _sed_script_writes(script: str) -> bool:
    """Whether a sed script has a command that writes a file or runs one (``w``, ``W``, ``e``, or an
    ``s`` with the ``w`` or ``e`` flag)."""
    index, end = 0, len(script)
    while index < end:
        char = script[index]
        if char in " \t\n;{}!,~+$" or char.isdigit():
            index += 1
        elif char == "/" or char == "\\":  # an address: /regex/ or \cregexc, then GNU's I and M flags
            delimiter = script[index + 1] if char == "\\" and index + 1 < end else "/"
            index = _skip_delimited(script, index + (2 if char == "\\" else 1), delimiter)
            while index < end and script[index] in _ADDRESS_FLAGS:
                index += 1
        elif char in "ewW":
            return True
        elif char in "sy":
            delimiter = script[index + 1] if index + 1 < end else ""
            index = _skip_delimited(script, _skip_delimited(script, index + 2, delimiter), delimiter)
            flags_end = index
            while flags_end < end and script[flags_end] not in ";\n}":
                flags_end += 1
            if char == "s" and any(flag in script[index:flags_end].split(" ")[0] for flag in "ew"):
                return True
            index = flags_end
        else:  # any other command runs to the end of its line or the next ;
            while index < end and script[index] not in ";\n":
                index += 1
    return False

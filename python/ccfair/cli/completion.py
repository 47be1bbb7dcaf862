"""``ccfair completion bash|zsh``: a shell completion script, made from the parser itself
(commands, options, choices) and the registries (preset, algorithm and builder names), so
that it never disagrees with the installed ccfair. No dependency and no Python at
completion time: the script is plain bash, and zsh runs it through ``bashcompinit``.

Example:
    >>> "complete -o default -F _ccfair ccfair" in script("bash")
    True
"""

from __future__ import annotations

import argparse
import re

from ccfair import algorithms
from ccfair.cli.parser import build_parser
from ccfair.presets import PRESETS
from ccfair.spec import builders

__all__ = ["cmd_completion", "script"]

#: A word the script may list unquoted (every command, option and name is one).
_WORD = re.compile(r"[A-Za-z0-9_.:+=-]+")


def _names() -> dict[str, list[str]]:
    """Names of the registries, by what a command's positional argument or option takes."""
    return {
        "preset": list(PRESETS),
        "algorithm": algorithms.names(),
        "builder": list(builders.BUILDERS),
    }


#: Positional arguments and options whose values are registry names: (command, option or
#: "" for the positional) -> kind of :func:`_names`.
_NAMED = {
    ("reproduce", ""): "preset",
    ("ccas", ""): "algorithm",
    ("builders", ""): "builder",
    ("validate", "--preset"): "preset",
    ("bench", "--sweep"): "preset",
}


def _words(words: list[str]) -> str:
    for w in words:
        if not _WORD.fullmatch(w):
            raise ValueError(f"{w!r} cannot be completed safely")  # a bug: names are checked
    return " ".join(words)


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse keeps its actions here; no public accessor
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _case_arms(
    commands: dict[str, argparse.ArgumentParser],
) -> tuple[list[str], list[str], list[str]]:
    """The script's case arms (values, options, positionals): read off the parser itself."""
    names = _names()
    values: list[str] = []  # case arms: "COMMAND OPTION" -> the option's values (or a file)
    options: list[str] = []  # case arms: COMMAND -> its options
    positionals: list[str] = []  # case arms: COMMAND -> names its positional argument takes
    for command, sub in commands.items():
        opts: list[str] = []
        for action in sub._actions:
            opts += action.option_strings
            kind = _NAMED.get((command, action.option_strings[0] if action.option_strings else ""))
            choices = [str(c) for c in action.choices] if action.choices else None
            if kind is not None:
                choices = names[kind]
            if action.option_strings and action.nargs != 0:  # an option that takes a value
                arms = "|".join(f'"{command} {o}"' for o in action.option_strings)
                then = f'words="{_words(choices)}"' if choices else "return 0"  # a file
                values.append(f"        {arms}) {then} ;;")
            elif not action.option_strings and choices:
                positionals.append(f'        {command}) words="{_words(choices)}" ;;')
        options.append(f'        {command}) words="{_words(opts)}" ;;')
    return values, options, positionals


def _bash_function() -> str:
    """The ``_ccfair`` bash function: plain bash, so completing runs no Python."""
    parser = build_parser()
    commands = _commands(parser)
    top = [o for a in parser._actions for o in a.option_strings]
    values, options, positionals = _case_arms(commands)
    nl = "\n"
    return f"""_ccfair() {{
    local cur prev cmd words i
    cur="${{COMP_WORDS[COMP_CWORD]}}"
    prev="${{COMP_WORDS[COMP_CWORD-1]}}"
    cmd=""
    for ((i = 1; i < COMP_CWORD; i++)); do
        case "${{COMP_WORDS[i]}}" in
            -*) ;;
            *) cmd="${{COMP_WORDS[i]}}"; break ;;
        esac
    done
    COMPREPLY=()
    if [[ -z "$cmd" ]]; then
        COMPREPLY=($(compgen -W "{_words(list(commands))} {_words(top)}" -- "$cur"))
        return 0
    fi
    words=""
    case "$cmd $prev" in
{nl.join(values)}
    esac
    if [[ -z "$words" && "$cur" == -* ]]; then
        case "$cmd" in
{nl.join(options)}
        esac
    elif [[ -z "$words" ]]; then
        case "$cmd" in
{nl.join(positionals)}
        esac
    fi
    if [[ -n "$words" ]]; then
        COMPREPLY=($(compgen -W "$words" -- "$cur"))
    fi
    return 0
}}
"""


def script(shell: str) -> str:
    """The completion script for ``shell`` (``bash`` or ``zsh``)."""
    head = f'# ccfair\'s completion for {shell}: eval "$(ccfair completion {shell})" in ~/.'
    if shell == "zsh":
        head += "zshrc, after compinit\nautoload -U +X bashcompinit && bashcompinit\n"
    else:
        head += "bashrc\n"
    return f"{head}{_bash_function()}complete -o default -F _ccfair ccfair\n"


def cmd_completion(args: argparse.Namespace) -> int:
    print(script(args.shell), end="")
    return 0

"""What the command line says when a word is almost right: "did you mean build?", "did you mean
--opt-level?". argparse names the wrong word but not the near one (its `allow_abbrev` only takes
prefixes, and a transposed letter is no prefix).

`difflib` is imported only when there is a mistake to explain: a correct command line pays nothing.
"""

from __future__ import annotations

import argparse
import re


def close_to(word: str, names: list[str] | tuple[str, ...]) -> str | None:
    """The one of `names` that `word` most likely misspells, or None."""
    import difflib

    found = difflib.get_close_matches(word, names, n=1, cutoff=0.7)
    return found[0] if found else None


_COMMAND_LIKE = re.compile(r"[A-Za-z][A-Za-z_-]*")


def unknown_command(word: str, commands: tuple[str, ...]) -> str | None:
    """The error for a first word that is neither a path nor a command but close to one, else None
    (then it is taken for the app's path, and checked as one). A word with a '/' or a '.' in it
    (`samples/`, `history.db`) is a path the user meant, whatever it resembles."""
    if not _COMMAND_LIKE.fullmatch(word):
        return None
    near = close_to(word, commands)
    return f"unknown command {word!r} (did you mean {near}?)" if near else None


def option_strings(parser: argparse.ArgumentParser) -> list[str]:
    """Every long option of `parser` and of its subcommands' parsers."""
    names = [s for s in parser._option_string_actions if s.startswith("--")]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                names.extend(option_strings(sub))
    return list(dict.fromkeys(names))


_UNRECOGNIZED = re.compile(r"^unrecognized arguments: (.*)$")


def explain_unrecognized(message: str, parser: argparse.ArgumentParser) -> str:
    """argparse's "unrecognized arguments: --opt-levle 3" with the option meant, where one is close:
    "unrecognized option --opt-levle (did you mean --opt-level?)". Other messages are kept."""
    match = _UNRECOGNIZED.match(message)
    if not match:
        return message
    known = option_strings(parser)
    for word in match.group(1).split():
        if word.startswith("--"):
            near = close_to(word.partition("=")[0], known)
            if near:
                return f"unrecognized option {word.partition('=')[0]} (did you mean {near}?)"
    return message

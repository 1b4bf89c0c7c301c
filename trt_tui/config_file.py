"""The config file: defaults for the command line's options, and the app's keys.

It is `$TRT_TUI_CONFIG`, else `config.toml` in the user config directory (platformdirs:
`~/.config/trt-tui/config.toml` on Linux). Its top-level keys are the long options' names (`jobs`,
`opt-level` or `opt_level`, `theme`, ...). Each value goes through its option's own argparse type
and choices and then becomes the parser's default, so an option is checked where it is parsed, and
the command line still wins. A key that only another subcommand takes is left to that subcommand;
one that none takes is an error. `[keys]` gives a command of the key table (`ui.commands`, by its
action) another key; only the app reads it.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .cli import UsageError

ENV = "TRT_TUI_CONFIG"
KEYS = "keys"
# Options that ask for one thing now rather than set how trt-tui works: no file gives them.
NOT_SETTINGS = frozenset({"print-config", "list-themes", "demo", "output"})


def config_path() -> Path:
    if named := os.environ.get(ENV):
        return Path(named).expanduser()
    from platformdirs import user_config_dir

    return Path(user_config_dir("trt-tui")) / "config.toml"


class FileDefault(list):
    """A repeatable option's values from the file. argparse appends the command line's values to a copy
    of the default; this copy is empty, so they replace the file's rather than add to them."""

    def __copy__(self) -> list:
        return []


@dataclass
class ConfigFile:
    path: Path
    found: bool = False
    values: dict[str, object] = field(default_factory=dict)  # dest -> value, as its option's type made it
    names: dict[str, str] = field(default_factory=dict)  # dest -> the key as the file spells it
    keys: dict[str, str] = field(default_factory=dict)  # action -> key

    def problem(self, key: str, what: str) -> UsageError:
        return UsageError(f"{self.path}: {key}: {what}")

    def blame(self, message: str, args: argparse.Namespace) -> str:
        """A later check's complaint about an option (`--theme x: ...`), with the file and key in front
        when the value it complains of is the file's."""
        option = message.split(" ", 1)[0].rstrip(":,")
        dest = option[2:].replace("-", "_")
        if option.startswith("--") and dest in self.values and vars(args).get(dest) == self.values[dest]:
            return f"{self.path}: {self.names[dest]}: {message}"
        return message


def options_of(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """The options a file may give this parser: long name -> its action."""
    options = {}
    for action in parser._actions:
        longs = [o[2:] for o in action.option_strings if o.startswith("--")]
        if longs and action.help is not argparse.SUPPRESS and action.default is not argparse.SUPPRESS \
                and longs[0] not in NOT_SETTINGS:
            options[longs[0]] = action
    return options


def parsers_in(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """The parser, or the subcommands' parsers: a subcommand's own defaults win over its parent's."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices.values())
    return [parser]


@functools.cache
def every_option() -> frozenset[str]:
    """What a file may give any command (one file serves them all)."""
    from .cli import app_parser, command_parser

    return frozenset(name for p in [app_parser(), *parsers_in(command_parser())] for name in options_of(p))


def converted(config: ConfigFile, key: str, action: argparse.Action, value: object) -> object:
    """`value` as the option's type and choices take it from the command line."""
    if action.nargs == 0:  # a flag
        if not isinstance(value, bool):
            raise config.problem(key, f"must be true or false, not {value!r}")
        return value
    repeatable = isinstance(action, argparse._AppendAction)
    items = value if repeatable and isinstance(value, list) else [value]
    result = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (str, int, float)):
            raise config.problem(key, f"must be text or a number, as {action.option_strings[-1]} takes, not {item!r}")
        text = str(item)
        try:
            item = action.type(text) if action.type is not None else text
        except argparse.ArgumentTypeError as exc:
            raise config.problem(key, str(exc)) from None
        except (TypeError, ValueError):
            raise config.problem(key, f"{text!r} is not a valid {getattr(action.type, '__name__', 'value')}") from None
        if action.choices is not None and item not in action.choices:
            raise config.problem(key, f"must be one of {', '.join(map(str, action.choices))}, not {text!r}")
        result.append(item)
    return FileDefault(result) if repeatable else result[0]


def read(path: Path, named: bool) -> dict | None:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        if named:
            raise UsageError(f"{path}: no such file (${ENV} names it)") from None
        return None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not UTF-8 text, so not a TOML file") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML: {exc}") from None


def apply_config_file(parser: argparse.ArgumentParser) -> ConfigFile:
    """Read the config file and make its values `parser`'s defaults; a bad file, key or value is a
    UsageError that names the file and the key."""
    config = ConfigFile(config_path())
    data = read(config.path, bool(os.environ.get(ENV)))
    if data is None:
        return config
    config.found = True
    keys = data.pop(KEYS, {})
    if not isinstance(keys, dict) or not all(isinstance(v, str) for v in keys.values()):
        raise config.problem(KEYS, 'must be a table of action = "key", e.g. [keys] then cancel = "x"')
    for target in parsers_in(parser):
        options = options_of(target)
        defaults = {}
        for key, value in data.items():
            name = key.replace("_", "-")
            if name in options:
                action = options[name]
                defaults[action.dest] = config.values[action.dest] = converted(config, key, action, value)
                config.names[action.dest] = key
            elif isinstance(value, dict):
                raise config.problem(key, f"no such table (the file's tables: [{KEYS}])")
            elif name not in every_option():
                raise config.problem(key, f"no such option{did_you_mean(name, options)}")
        if target.get_default("keys") is not None:  # a parser of the app (`add_config_options`)
            defaults["keys"] = config.keys = checked_keys(config, keys)
        target.set_defaults(**defaults)
    return config


def did_you_mean(name: str, options: dict) -> str:
    from difflib import get_close_matches

    close = get_close_matches(name, list(options), n=1)
    return f" (did you mean {close[0]}?)" if close else ""


def checked_keys(config: ConfigFile, keys: dict[str, str]) -> dict[str, str]:
    from .ui.commands import COMMANDS, with_keys

    remap = {action.replace("-", "_"): key for action, key in keys.items()}
    try:
        with_keys(COMMANDS, remap)
    except ValueError as exc:
        raise config.problem(KEYS, str(exc)) from None
    return remap


class ListThemes(argparse.Action):
    """`--list-themes`: the names `--theme` takes, one a line, then exit (as `--version` does)."""

    def __init__(self, option_strings, dest, **kwargs) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        from .app_checks import known_themes

        print("\n".join(known_themes()))
        parser.exit(0)


def add_config_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--print-config", action="store_true",
                        help="print the options in force and where each came from (default, config file,"
                             f" command line), then exit; the config file: ${ENV}, else {config_path()}")
    parser.add_argument("--list-themes", action=ListThemes, help="print the themes --theme takes, then exit")
    parser.set_defaults(keys={})


def print_config(config: ConfigFile, parser: argparse.ArgumentParser, argv: list[str],
                 args: argparse.Namespace) -> int:
    """Each option's value in force, as the file would spell it, and where it came from."""
    given = given_on_command_line(argv)
    state = "" if config.found else " (none there)"
    print(f"# the options in force; the config file: {config.path}{state}")
    for name, action in options_of(parser).items():
        value = vars(args)[action.dest]
        source = ("command line" if action.dest in given else str(config.path) if action.dest in config.values
                  else "default")
        if value is None:
            print(f"# {name}: not set  # {source}")
        else:
            print(f"{name} = {toml_value(value)}  # {source}")
    from .ui.commands import COMMANDS, with_keys

    print(f"[{KEYS}]")
    for command in with_keys(COMMANDS, config.keys):
        source = config.path if command.action in config.keys else "default"
        print(f"{command.action} = {toml_value(command.key)}  # {source}")
    return 0


def given_on_command_line(argv: list[str]) -> set[str]:
    """The dests that `argv` itself sets: parsed again with no defaults at all."""
    from .cli import app_parser

    bare = app_parser()
    for action in bare._actions:
        action.default = argparse.SUPPRESS
    bare._defaults.clear()
    return set(vars(bare.parse_args(argv)))


def toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    import json

    return json.dumps(str(value), ensure_ascii=False)

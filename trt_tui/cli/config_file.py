"""The config file: defaults for the command line's options, and the app's keys.

It is `$TRT_TUI_CONFIG`, else `config.toml` in the user config directory (platformdirs:
`~/.config/trt-tui/config.toml` on Linux). Its top-level keys are the long options' names (`jobs`,
`opt-level` or `opt_level`, `theme`, ...). Each value goes through its option's own argparse type
and choices and then becomes the parser's default, so an option is checked where it is parsed, and
the command line still wins. A key that only another subcommand takes is left to that subcommand;
one that none takes is an error. `[keys]` gives a command of the key table (`ui.commands`, by its
action) another key; only the app reads it. The nearest pyproject.toml's `[tool.trt-tui]` is read
after the user's file and wins; in a directory the user has not trusted, only its harmless options
apply, and each command says which of the others it ignored (`trust`). Every file is read bounded
(`user_files`).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .errors import UsageError
from .user_files import bounded_bytes, user_config_dir

ENV = "TRT_TUI_CONFIG"
KEYS = "keys"
# Options that ask for one thing now rather than set how trt-tui works: no file gives them.
NOT_SETTINGS = frozenset({"print-config", "list-themes", "demo", "output"})


def config_path() -> Path:
    if named := os.environ.get(ENV):
        return Path(named).expanduser()
    return user_config_dir() / "config.toml"


class FileDefault(list):
    """A repeatable option's values from the file. argparse appends the command line's values to a copy
    of the default; this copy is empty, so they replace the file's rather than add to them."""

    def __copy__(self) -> list:
        return []


def problem(where: str, what: str) -> UsageError:
    """`where`: the file and the key, as `file: key`."""
    return UsageError(f"{where}: {what}")


@dataclass
class ConfigFile:
    path: Path  # the user's config file
    found: bool = False
    project: Path | None = None  # the pyproject.toml whose [tool.trt-tui] is read
    values: dict[str, object] = field(default_factory=dict)  # dest -> value, as its option's type made it
    origins: dict[str, tuple[Path, str]] = field(default_factory=dict)  # dest -> the file and key that gave it
    keys: dict[str, str] = field(default_factory=dict)  # action -> key
    key_origins: dict[str, Path] = field(default_factory=dict)  # action -> the file that gave its key
    project_trusted: bool = False  # the user trusts the project's directory (`trust`)
    untrusted: list[str] = field(default_factory=list)  # the project's keys not applied, as it spells them
    ignored: dict[str, tuple[str, object]] = field(default_factory=dict)  # dest -> (such a key, the default left)

    def untrusted_warning(self, args: argparse.Namespace) -> str | None:
        """The one line saying which of an untrusted project's keys this command ignored, or None where
        it ignored none (the command takes none of them, or the command line gave them)."""
        keys = [key for dest, (key, default) in self.ignored.items() if vars(args).get(dest) == default]
        if not keys or self.project is None:
            return None
        from .trust import how_to_trust

        return (f"{self.project}: {', '.join('tool.trt-tui.' + key for key in keys)} ignored: this directory is not"
                f" trusted to set {'it' if len(keys) == 1 else 'them'} (to let it: {how_to_trust(self.project.parent)})")

    def blame(self, message: str, args: argparse.Namespace) -> str:
        """A later check's complaint about an option (`--theme x: ...`), with the file and key in front
        when the value it complains of is the file's."""
        option = message.split(" ", 1)[0].rstrip(":,")
        dest = option[2:].replace("-", "_")
        if option.startswith("--") and dest in self.values and vars(args).get(dest) == self.values[dest]:
            path, key = self.origins[dest]
            return f"{path}: {key}: {message}"
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
def every_option(every_parser: Callable[[], list[argparse.ArgumentParser]]) -> frozenset[str]:
    """What a file may give any command (one file serves them all); `every_parser()`: the app's and
    each command's parser (the CLI hands its builder in: it imports this module, not the reverse)."""
    return frozenset(name for p in every_parser() for name in options_of(p))


def converted(where: str, action: argparse.Action, value: object) -> object:
    """`value` as the option's type and choices take it from the command line."""
    if action.nargs == 0:  # a flag
        if not isinstance(value, bool):
            raise problem(where, f"must be true or false, not {value!r}")
        return value
    repeatable = isinstance(action, argparse._AppendAction)
    items = value if repeatable and isinstance(value, list) else [value]
    result = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (str, int, float)):
            raise problem(where, f"must be text or a number, as {action.option_strings[-1]} takes, not {item!r}")
        text = str(item)
        try:
            item = action.type(text) if callable(action.type) else text
        except argparse.ArgumentTypeError as exc:
            raise problem(where, str(exc)) from None
        except (TypeError, ValueError):
            raise problem(where, f"{text!r} is not a valid {getattr(action.type, '__name__', 'value')}") from None
        if action.choices is not None and item not in action.choices:
            raise problem(where, f"must be one of {', '.join(map(str, action.choices))}, not {text!r}")
        result.append(item)
    return FileDefault(result) if repeatable else result[0]


def read(path: Path, named: bool) -> dict | None:
    """The TOML file at `path`; None where there is none (and `named` is false: the user did not name it)."""
    try:
        data = bounded_bytes(path)
    except FileNotFoundError:
        if named:
            raise UsageError(f"{path}: no such file (${ENV} names it)") from None
        return None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return parsed(path, data)


def parsed(path: Path, data: bytes) -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        return tomllib.loads(data.decode())
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not UTF-8 text, so not a TOML file") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML: {exc}") from None


def project_table(start: Path) -> tuple[Path, dict] | None:
    """`[tool.trt-tui]` of the nearest pyproject.toml at or above `start`, if it has one. Only a file
    with such a table is parsed: a project's unrelated pyproject.toml is none of trt-tui's business."""
    for directory in (start, *start.parents):
        path = directory / "pyproject.toml"
        try:
            text = bounded_bytes(path)
        except FileNotFoundError:
            continue
        except OSError:
            return None
        if b"tool.trt-tui" not in text and b'tool."trt-tui"' not in text:
            return None
        table = parsed(path, text).get("tool", {}).get("trt-tui")
        return (path, table) if isinstance(table, dict) else None
    return None


def apply_config_file(parser: argparse.ArgumentParser,
                      every_parser: Callable[[], list[argparse.ArgumentParser]]) -> ConfigFile:
    """Read the config file, then the project's `[tool.trt-tui]` (nearer, so it wins), and make their
    values `parser`'s defaults; a bad file, key or value is a UsageError that names the file and key."""
    config = ConfigFile(config_path())
    layers = []
    if (data := read(config.path, bool(os.environ.get(ENV)))) is not None:
        config.found = True
        layers.append((config.path, "", data))
    if (project := project_table(Path.cwd())) is not None:
        config.project, table = project
        layers.append((config.project, "tool.trt-tui.", trusted_part(config, table, every_parser)))
    for target in parsers_in(parser):
        options = options_of(target)
        for path, prefix, data in layers:
            take(config, target, options, path, prefix, dict(data), every_parser)
        dests = {action.dest for action in options.values()}
        defaults = {dest: value for dest, value in config.values.items() if dest in dests}
        if target.get_default("keys") is not None:  # a parser of the app (`add_config_options`)
            defaults["keys"] = config.keys
        target.set_defaults(**defaults)
        for key in config.untrusted:
            if (action := options.get(key.replace("_", "-"))) is not None:
                config.ignored[action.dest] = (key, target.get_default(action.dest))
    return config


def trusted_part(config: ConfigFile, table: dict, every_parser: Callable[[], list[argparse.ArgumentParser]]) -> dict:
    """What of a project's table applies: all of it in a directory the user trusts, else its harmless
    options (`trust`); the others are noted in `config.untrusted`. A key no option has stays, to be
    refused as the user's own file's would be."""
    from .trust import HARMLESS, is_trusted

    assert config.project is not None
    config.project_trusted = is_trusted(config.project.parent)
    if config.project_trusted:
        return table
    known = every_option(every_parser)
    config.untrusted = [key for key in table if key.replace("_", "-") in known - HARMLESS]
    return {key: value for key, value in table.items() if key not in config.untrusted}


def take(config: ConfigFile, target: argparse.ArgumentParser, options: dict[str, argparse.Action], path: Path,
         prefix: str, data: dict, every_parser: Callable[[], list[argparse.ArgumentParser]]) -> None:
    """One file's values over those of the files before it; `prefix`: the table they are in."""
    keys = data.pop(KEYS, {})
    if not isinstance(keys, dict) or not all(isinstance(v, str) for v in keys.values()):
        raise problem(f"{path}: {prefix}{KEYS}", 'must be a table of action = "key", e.g. [keys] then cancel = "x"')
    for key, value in data.items():
        where, name = f"{path}: {prefix}{key}", key.replace("_", "-")
        if name in options:
            action = options[name]
            config.values[action.dest] = converted(where, action, value)
            config.origins[action.dest] = (path, prefix + key)
        elif isinstance(value, dict):
            raise problem(where, f"no such table (the file's tables: [{KEYS}])")
        elif name not in every_option(every_parser):
            raise problem(where, f"no such option{did_you_mean(name, options)}")
    if keys and target.get_default("keys") is not None:
        config.keys = checked_keys(f"{path}: {prefix}{KEYS}", {**config.keys, **keys})
        config.key_origins.update(dict.fromkeys((action.replace("-", "_") for action in keys), path))


def did_you_mean(name: str, options: dict) -> str:
    from difflib import get_close_matches

    close = get_close_matches(name, list(options), n=1)
    return f" (did you mean {close[0]}?)" if close else ""


def checked_keys(where: str, keys: dict[str, str]) -> dict[str, str]:
    from ..ui.commands import COMMANDS, with_keys

    remap = {action.replace("-", "_"): key for action, key in keys.items()}
    try:
        with_keys(COMMANDS, remap)
    except ValueError as exc:
        raise problem(where, str(exc)) from None
    return remap


class ListThemes(argparse.Action):
    """`--list-themes`: the names `--theme` takes, one a line, then exit (as `--version` does)."""

    def __init__(self, option_strings, dest, **kwargs) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        from .checks import known_themes

        print("\n".join(known_themes()))
        parser.exit(0)


def add_config_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--print-config", action="store_true",
                        help="print the options in force and where each came from (default, config file,"
                             f" command line), then exit; the config file: ${ENV}, else {config_path()}")
    parser.add_argument("--list-themes", action=ListThemes, help="print the themes --theme takes, then exit")
    parser.set_defaults(keys={})


def print_config(config: ConfigFile, parser: argparse.ArgumentParser, argv: list[str],
                 args: argparse.Namespace, bare_parser: Callable[[], argparse.ArgumentParser]) -> int:
    """Each option's value in force, as the file would spell it, and where it came from."""
    given = given_on_command_line(argv, bare_parser())
    state = "" if config.found else " (none there)"
    also = f"; then [tool.trt-tui] of {config.project}" if config.project else ""
    print(f"# the options in force; the config file: {config.path}{state}{also}")
    print_trust(config)
    for name, action in options_of(parser).items():
        value = vars(args)[action.dest]
        source = ("command line" if action.dest in given else config.origins[action.dest][0]
                  if action.dest in config.origins else "default")
        if value is None:
            print(f"# {name}: not set  # {source}")
        else:
            print(f"{name} = {toml_value(value)}  # {source}")
    from ..ui.commands import COMMANDS, with_keys

    print(f"[{KEYS}]")
    for command in with_keys(COMMANDS, config.keys):
        source = config.key_origins.get(command.action, "default")
        print(f"{command.action} = {toml_value(command.key)}  # {source}")
    return 0


def print_trust(config: ConfigFile) -> None:
    """Whether the project file is trusted, what of it is ignored, and which directories are trusted."""
    from .trust import how_to_trust, store_path, trusted_directories

    if config.project is not None:
        directory = config.project.parent
        if config.project_trusted:
            print(f"# {directory}: trusted, its [tool.trt-tui] sets any option (undo: {how_to_trust(directory, True)})")
        else:
            ignored = f": ignored: {', '.join(config.untrusted)}" if config.untrusted else ""
            print(f"# {directory}: not trusted, its [tool.trt-tui] sets only harmless options{ignored}"
                  f" (to let it set any: {how_to_trust(directory)})")
    trusted = trusted_directories()
    print(f"# trusted projects ({store_path()}): {', '.join(map(str, trusted)) if trusted else 'none'}")


def given_on_command_line(argv: list[str], bare: argparse.ArgumentParser) -> set[str]:
    """The dests that `argv` itself sets: parsed again (`bare`, a fresh app parser) with no defaults."""
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

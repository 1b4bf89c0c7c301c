"""What the commands check before anything starts: the models, the engines they would write, and
(before the full-screen app takes the terminal) the terminal, the paths and the theme. A mistake
there is one line on stderr and exit 2, where a build would fail late, or the app would open on
nothing, or draw its escape codes into a log file and wait for keys that never come.

The `*_problem` checks return the line to print, or None when all is well; the others raise
`UsageError`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from .errors import UsageError

if TYPE_CHECKING:
    from ..core.history.records import History

T = TypeVar("T")


def check_model_readable(path: Path) -> str | None:
    """What the build would say of a model it cannot read, and of an empty file, before any build starts."""
    from ..core.build.driver import model_problem

    if (problem := model_problem(path)) is not None:
        return problem
    if path.stat().st_size == 0:
        return f"{path}: empty file, not an ONNX model"
    return None


def unique_models(paths: list[str]) -> list[Path]:
    """The models as given, a model named twice (by any path to the same file) built once."""
    from ..core.build.driver import is_same_file

    models: list[Path] = []
    for text in paths:
        path = Path(text)
        if not any(is_same_file(path, known) for known in models):
            models.append(path)
    return models


def outputs_for(models: list[Path], output: str | None) -> list[Path]:
    """Each model's engine: `-o` a file (one model) or a directory (several), else beside the model."""
    from ..core.build.driver import default_output

    if output is None:
        return [default_output(m) for m in models]
    out = Path(output)
    as_dir = out.is_dir() or output.endswith(os.sep)
    if len(models) > 1 and not as_dir:
        raise UsageError(f"-o {output}: with several models -o must be an existing directory or end with '/'")
    if not as_dir:
        if out.parent != Path("") and not out.parent.is_dir():
            problem = "is not a directory" if out.parent.exists() else "does not exist"
            raise UsageError(f"{out}: output directory {out.parent} {problem}")
        return [out]
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{out}: cannot create output directory: {exc.strerror}") from None
    engines = [out / (m.stem + ".engine") for m in models]
    clashes = {e for e in engines if engines.count(e) > 1}
    if clashes:
        raise UsageError(f"{sorted(clashes)[0]}: two models would write the same engine; build them separately")
    return engines


def _identity(path: Path) -> set[tuple]:
    """What `is_same_file` compares, taken once: the absolute path, the resolved path and, for a file
    that exists, its device and inode. Two paths name one file where their identities meet."""
    keys: set[tuple] = {("abs", os.path.abspath(path))}
    try:
        keys.add(("real", str(path.resolve())))
        st = os.stat(path)
        keys.add(("inode", st.st_dev, st.st_ino))
    except (OSError, RuntimeError):
        pass
    return keys


def check_outputs(models: list[Path], outputs: list[Path], force: bool) -> None:
    """Before any build starts: no engine on its own model or on another model, none on a file trt-tui
    did not write (unless --force), no two builds onto one engine. Each path is resolved once: a batch
    of 150 models compared pairwise resolved paths 45,000 times, a second of the CLI's before the first
    build (BENCHMARKS.md, "A batch on 16 cores")."""
    from ..core.build.driver import BuildError, BuildSpec, check_output_replaceable

    model_of: dict[tuple, Path] = {}
    for model in reversed(models):  # the first model of a clash is named
        model_of.update(dict.fromkeys(_identity(model), model))
    seen: set[tuple] = set()
    for model, output in zip(models, outputs):
        identity = _identity(output)
        if identity & seen:
            raise UsageError(f"{output}: two models would write the same engine; build them separately")
        seen |= identity
        clash = next((model_of[key] for key in identity if key in model_of), None)
        if clash is not None:
            raise UsageError(f"{output}: the engine of {model} would overwrite the model {clash}; choose another -o")
        try:
            check_output_replaceable(BuildSpec(model, output, force=force, replace=force))
        except BuildError as exc:
            raise UsageError(str(exc)) from None


def check_history(named: str | None) -> None:
    """A history file named (--history, $TRT_TUI_HISTORY) that trt-tui did not write is refused in one
    line before anything starts: builds would otherwise run without their history, or (older trt-tui)
    change another program's database."""
    from ..core.history.records import foreign, history_path

    if (path := history_path(named)) is not None:
        try:
            problem = foreign(path.expanduser())
        except OSError:
            problem = None  # unreadable: the session says so and builds without history
        if problem is not None:
            raise UsageError(problem)


def read_history(path: Path, read: Callable[[History], T]) -> T:
    """`read(history)` of the history at `path`, opened as it is (never created); an unreadable or
    foreign file is one line (UsageError)."""
    import sqlite3

    from ..core.history.records import History, HistoryError

    try:
        with History(path, create=False) as history:
            return read(history)
    except HistoryError as exc:
        raise UsageError(str(exc)) from None
    except sqlite3.Error as exc:
        raise UsageError(f"{path}: cannot read build history: {exc}") from None


def terminal_problem(stdin=None, stdout=None) -> str | None:
    """The app reads keys from stdin and draws on stdout: both must be a terminal."""
    stdin = sys.stdin if stdin is None else stdin
    stdout = sys.stdout if stdout is None else stdout
    missing = [name for name, stream in (("stdin", stdin), ("stdout", stdout))
               if stream is None or not stream.isatty()]
    if not missing:
        return None
    return (f"the app needs a terminal ({' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not one);"
            " for scripts and CI use `trt-tui build MODEL...` (or `trt-tui watch DIR`)")


def path_problem(paths: list[str], watch: bool) -> str | None:
    """A path that does not exist, or a directory with no ONNX file under it (where watching it for
    models to come was not asked for)."""
    for text in paths:
        path = Path(text)
        if not path.exists():
            return f"{text}: no such file or directory"
        if path.is_dir() and not watch and not _has_onnx(path):
            return f"no .onnx files under {text} (write the samples there with `trt-tui samples {text}`)"
    return None


def _has_onnx(directory: Path) -> bool:
    """Whether any `.onnx` file is under `directory`; stops at the first one (a large tree is not walked)."""
    for root, _dirs, files in os.walk(directory):
        if any(name.endswith(".onnx") and os.path.isfile(os.path.join(root, name)) for name in files):
            return True
    return False


def theme_problem(name: str | None) -> str | None:
    """An unknown `--theme`, with the names there are (trt-tui's and the user's first, then Textual's)."""
    if not name:
        return None
    known = known_themes()
    if name in known:
        return None
    return f"--theme {name}: no such theme; known themes: {', '.join(known)}"


def known_themes() -> list[str]:
    """The names `--theme` takes: trt-tui's and the user's first, then Textual's."""
    from textual.theme import BUILTIN_THEMES

    from ..ui.themes import load_themes

    return list(dict.fromkeys([*(theme.name for theme in load_themes()), *BUILTIN_THEMES]))


def watched_models(args) -> list[Path] | None:
    """The models under the paths of a command that watches them (`watch`, `serve`), their trace
    checked against them; each unreadable path said in one line. None where nothing can be watched
    (no model and no directory to wait in): the command exits 2."""
    from ..core.build.driver import default_output
    from ..core.history.output_paths import check_trace
    from ..core.model.discover import find_models

    models, errors = find_models(args.paths)
    check_trace(args.trace, models, [default_output(m) for m in models], args.history, args.force)
    for err in errors:
        print(f"trt-tui: {err}", file=sys.stderr)
    if errors and not models and not any(Path(p).is_dir() for p in args.paths):
        return None
    return models

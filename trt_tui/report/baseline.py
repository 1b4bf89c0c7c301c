"""`--save-baseline FILE` keeps each model's figures (build time, peak memory, engine size); a later run
of the same command with `--baseline FILE` compares its builds with them and trips a gate where a figure
grew beyond its tolerance: one line per figure, naming the model, the figure, before and after.

Only growth trips a gate: a faster build or a smaller engine is no regression; build time only once it
grew by more than a second too (`Figure.slack`). A model the baseline has
no figures for, and a build that did not run (skipped as up to date, failed), is not compared.
Tolerances are percentages: `DEFAULT_TOLERANCES`, changed by `--tolerance`, either one figure for all
(`10%`) or per figure (`time=50%,peak=20%,size=1%`), or both (`10%,size=0%`).

The file is JSON that starts with `MARK`: a later run replaces a baseline of ours, and no other file
without --force; one without it is not read as a baseline.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..core.files.atomic import write_text
from ..core.files.units import human_bytes, human_seconds
from .results import ModelResult

__all__ = ["BaselineError", "DEFAULT_TOLERANCES", "FIGURES", "baseline_written_by_us", "compare", "load_baseline",
           "parse_tolerances", "save_baseline"]

MARK = '{\n "writer": "trt-tui",\n "kind": "baseline",'
VERSION = 1


@dataclass(frozen=True)
class Figure:
    key: str  # in the file
    label: str  # in a gate's line
    show: Callable[[float], str]  # the value as a person reads it
    slack: float = 0.0  # growth this small never trips, whatever the percentage


# A build of a second or less varies by a large part of itself on a shared CI runner: its time trips a
# gate only once it grew by more than `slack` as well.
FIGURES = {"time": Figure("seconds", "build time", human_seconds, slack=1.0),
           "peak": Figure("peak_bytes", "peak memory", lambda n: human_bytes(int(n))),
           "size": Figure("engine_bytes", "engine size", lambda n: f"{int(n):,} bytes")}  # a few bytes count
# Build time on a shared CI runner varies by tens of percent from run to run; an engine's size does not.
DEFAULT_TOLERANCES = {"time": 50.0, "peak": 20.0, "size": 1.0}


class BaselineError(Exception):
    """A baseline or tolerance that cannot be used; the message is the one line the user sees."""


def _percent(text: str, where: str) -> float:
    number = text.strip().removesuffix("%")
    try:
        value = float(number)
    except ValueError:
        raise BaselineError(f"--tolerance {where}: {text!r} is not a percentage (e.g. 10%)") from None
    if not value >= 0 or value == float("inf"):
        raise BaselineError(f"--tolerance {where}: {text!r} must be a percentage of 0 or more")
    return value


def parse_tolerances(text: str | None) -> dict[str, float]:
    tolerances = dict(DEFAULT_TOLERANCES)
    if not text:
        return tolerances
    given: dict[str, float] = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        if not sep:
            tolerances = {figure: _percent(part, text) for figure in FIGURES}
            continue
        name = name.strip()
        if name not in FIGURES:
            raise BaselineError(f"--tolerance {text}: unknown figure {name!r}; the figures are {', '.join(FIGURES)}")
        given[name] = _percent(value, text)
    tolerances.update(given)
    return tolerances


def baseline_document(results: list[ModelResult]) -> str:
    models = {r.model: {FIGURES[f].key: getattr(r, FIGURES[f].key) for f in FIGURES} for r in results if r.built}
    document = json.dumps({"writer": "trt-tui", "kind": "baseline", "version": VERSION, "models": models}, indent=1)
    assert document.startswith(MARK)
    return document + "\n"


def save_baseline(path: Path, results: list[ModelResult]) -> None:
    """The figures of the models that built, atomically (`atomic`)."""
    write_text(path, baseline_document(results))


def baseline_written_by_us(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(MARK)) == MARK.encode()
    except OSError:
        return False


def load_baseline(path: Path) -> dict[str, dict[str, float]]:
    """Each model's figures; `BaselineError` naming the file where it is not a baseline trt-tui saved."""
    try:
        with open(path, "rb") as f:  # the mark first: a model or an engine named by mistake is not read whole
            if f.read(len(MARK)) != MARK.encode():
                raise BaselineError(f"--baseline {path}: is not a baseline trt-tui saved (--save-baseline)")
            text = MARK + f.read().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"--baseline {path}: cannot read it: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        data = json.loads(text)
        models = data["models"]
        if data.get("version") != VERSION or not isinstance(models, dict):
            raise ValueError("unknown version")
        return {str(m): {k: float(v) for k, v in figures.items() if isinstance(v, (int, float))}
                for m, figures in models.items() if isinstance(figures, dict)}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise BaselineError(f"--baseline {path}: not a baseline this trt-tui reads ({exc})") from None


def compare(baseline: dict[str, dict[str, float]], results: list[ModelResult],
            tolerances: dict[str, float]) -> list[str]:
    """One line for each figure of each build that grew beyond its tolerance (none: the gate holds)."""
    lines = []
    for result in results:
        before_figures = baseline.get(result.model)
        if not result.built or before_figures is None:
            continue
        for name, figure in FIGURES.items():
            before, after = before_figures.get(figure.key), getattr(result, figure.key)
            if before is None or after is None:
                continue
            limit = before * (1 + tolerances[name] / 100)
            if after > limit and after - before > figure.slack:
                growth = f"+{(after - before) / before * 100:.1f}%" if before > 0 else "from nothing"
                lines.append(f"{result.model}: {figure.label} {figure.show(before)} → {figure.show(after)}"
                             f" ({growth}, tolerance {tolerances[name]:g}%)")
    return lines

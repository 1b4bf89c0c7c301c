"""The batch as a Markdown table in the job's summary on GitHub Actions, where `$GITHUB_STEP_SUMMARY`
names the file the runner shows: appended, as GitHub asks every step to do (the file is the runner's,
and other steps' summaries are in it), never replaced."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..core.files.units import human_bytes, human_seconds

if TYPE_CHECKING:  # `trt-tui build` reads VARIABLE at every end; the results load only to write one
    from .results import ModelResult

VARIABLE = "GITHUB_STEP_SUMMARY"


def _cell(text: str) -> str:
    """A table cell's text: a `|` or a line break would end the cell or the row."""
    return " ".join(text.replace("|", "\\|").split())


def summary_table(results: list[ModelResult], seconds: float) -> str:
    lines = ["### trt-tui build", "", "| model | state | time | peak memory | engine size |",
             "| --- | --- | ---: | ---: | ---: |"]
    for r in results:
        state = r.state_text + (f": {r.error}" if r.error else "")
        lines.append("| " + " | ".join(_cell(c) for c in (
            r.model, state,
            human_seconds(r.seconds) if r.seconds is not None else "—",
            human_bytes(r.peak_bytes) if r.peak_bytes else "—",
            human_bytes(r.engine_bytes) if r.engine_bytes else "—")) + " |")
    built = sum(r.built for r in results)
    lines += ["", f"{built} of {len(results)} built in {human_seconds(seconds)}", ""]
    return "\n".join(lines) + "\n"


def append_step_summary(results: list[ModelResult], seconds: float, environ: Mapping[str, str] = os.environ) -> str | None:
    """Append the table where the variable names a file; returns the problem, where there is one, as
    one line (a summary that cannot be written is no reason to fail the builds)."""
    target = environ.get(VARIABLE)
    if not target:
        return None
    try:
        with open(target, "a", encoding="utf-8") as f:
            f.write(summary_table(results, seconds))
    except OSError as exc:
        return f"${VARIABLE} {target}: cannot append the summary: {exc.strerror or exc}"
    return None

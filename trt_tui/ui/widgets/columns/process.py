"""What a build's process says: the vitals' verdict and the TensorRT that builds."""

from __future__ import annotations

from rich.text import Text

from ..outside_text import shown
from ..palette import Palette, verdict_text
from .base import BuildColumn, BuildRow

SHORT_BACKENDS = {"tensorrt-rtx": "RTX", "tensorrt": "TRT"}


def backend_label(backend: str | None, asked: str = "auto") -> str:
    """"RTX 1.7.1.116" for the "tensorrt-rtx 1.7.1.116" a build reports (the title keeps the full
    name), or what was asked for until the build says."""
    if not backend:
        return asked
    name, _, version = backend.partition(" ")
    return f"{SHORT_BACKENDS.get(name, name)} {version}".strip()


class VitalsColumn(BuildColumn):
    """Working, stalled or stopped while it runs; a finished build is neither ("-")."""

    name = "Vitals"
    width = 7  # "stalled"
    drop_rank = 7

    def render(self, row: BuildRow, palette: Palette) -> Text:
        return verdict_text(None if row.state.final else row.verdict, palette)


class BackendColumn(BuildColumn):
    """Last to come and first to go: the build's title names the backend too."""

    name = "Backend"
    width = 13  # "RTX 1.7.1.116"
    drop_rank = 9

    def render(self, row: BuildRow, palette: Palette) -> Text:
        asked = row.spec.backend if row.spec is not None else "auto"
        return shown(backend_label(row.build.backend, asked))  # a program may report any name

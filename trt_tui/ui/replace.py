"""Submitting a build from the app, and what `f` (force) may replace.

Forcing a rebuild is not leave to replace a file trt-tui did not write (a user's engine from another
tool, anything else at the engine's path): the app asks first (`ReplaceScreen`), and a served tab,
whose user may not own the server's files, refuses. The build itself refuses too unless the spec says
`replace`, so what the app decides here is the user's answer, not the only guard.
"""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Button, Static

from ..core.build import sidecar
from ..core.build.driver import BuildSpec, default_output
from .services import AppServices


class ReplaceScreen(ModalScreen[bool]):
    """Yes or No: replace `engine`, a file trt-tui did not write, with a forced build."""

    DEFAULT_CSS = """
    ReplaceScreen { align: center middle; }
    ReplaceScreen > Vertical { width: 72; height: auto; border: thick $warning; background: $surface; padding: 1 2; }
    ReplaceScreen Horizontal { height: auto; align-horizontal: right; margin-top: 1; }
    ReplaceScreen Button { margin-left: 2; }
    """
    BINDINGS = [Binding("y", "answer(True)", "Yes"), Binding("n,escape", "answer(False)", "No")]

    def __init__(self, engine: Path) -> None:
        super().__init__()
        self.engine = engine

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"{self.engine} exists and is not an engine trt-tui wrote.\n"
                         "Replace it with a forced build?", markup=False)
            with Horizontal():
                yield Button("Yes, replace", variant="warning", id="yes")
                yield Button("No", variant="primary", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()  # Enter on the dialog keeps the file

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


def foreign_file(engine: Path) -> bool:
    """Something is at the engine's path that is not an engine trt-tui wrote."""
    if not (engine.exists() or engine.is_symlink()):
        return False
    return engine.is_symlink() or not engine.is_file() or not sidecar.written_by_us(engine)


def force_rebuild(pane: Widget, services: AppServices, model: str) -> None:
    """`f`: rebuild `model` whatever the cache says; a foreign file at its engine's path is replaced
    only once the user said yes (on a screen over `pane`'s), and never from a served tab."""
    engine = default_output(Path(model))
    builder = services.builder
    if not foreign_file(engine):
        builder.submit(model, force=True)
    elif services.mode.served:
        pane.notify(f"{engine} exists and is not an engine trt-tui wrote: a served session does not replace"
                    " it (remove it on the server, or build it there with --force)", severity="warning",
                    timeout=10, markup=False)
    else:
        def answered(yes: bool | None) -> None:
            if yes:
                builder.submit(model, force=True, replace=True)

        pane.app.push_screen(ReplaceScreen(engine), answered)


def submit_once(app, spec: BuildSpec):
    """`app.scheduler.submit(spec)`, or None with a notification where the scheduler refuses it (a build
    of that engine is already queued or running, here or on the build server)."""
    try:
        return app.scheduler.submit(spec)
    except RuntimeError as exc:
        app.notify(str(exc), severity="warning", markup=False)
        return None

"""The screens: the main one that composes the panes, and the stack viewer.

`MainScreen` only lays out the widgets (the layout is in `app.tcss`); the app drives them. Once they
are mounted it calls the app back, which then starts discovering models and sampling.
Below `NARROW` columns the screen takes the class `-narrow`: the model details and the machine panes
give their room to the phase tree and the log; below `COMPACT` the panes stack, the builds list
over the phases, at the whole width. Observing a program (`trt-tui run`), it takes the
class `-observing`: there are no models to pick, so the picker, its filter and details are hidden.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.events import Resize
from textual.screen import ModalScreen, Screen
from textual.widgets import Header, Static

from .action_host import ActionHost
from .widgets.build_list import BuildList
from .widgets.filter_prompt import FilterPrompt
from .widgets.key_bar import KeyBar
from .widgets.log_pane import LogPane
from .widgets.log_prompt import LogPrompt
from .widgets.machine_panes import MachinePanes
from .widgets.model_details import ModelDetails
from .widgets.model_picker import PickerTable
from .widgets.phase_tree import PhaseTreeView
from .widgets.vitals_panel import VitalsPanel

NARROW = 120  # columns
COMPACT = 100  # columns: below, the panes stack (`app.tcss`)


HEADER_ICON = "≡"


class MainScreen(Screen):
    """Models, their details, the builds, the selected build's vitals and the machine on the left;
    the selected build's phases and log on the right. A zoomed pane (`z`) shows with the key bar."""

    ALLOW_IN_MAXIMIZED_VIEW = "KeyBar"

    def __init__(self, on_mount: Callable[[MainScreen], None]) -> None:
        """`on_mount`: called once the panes are mounted, before any key is handled, so that the
        app fills and focuses them first (a message would arrive after the first keys)."""
        super().__init__()
        self._mounted = on_mount

    def compose(self) -> ComposeResult:
        app = cast(ActionHost, self.app)  # the main screen is the app's own
        # Textual's default icon (U+2B58) is in no common monospace font: the README's pictures and
        # many terminals showed an empty box. "≡" is in every one, and says "menu" (it opens the palette).
        yield Header(show_clock=False, icon=HEADER_ICON)
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield FilterPrompt(id="filter-prompt")
                yield PickerTable(id="models")
                yield ModelDetails(id="details")
                yield Static("Builds", id="builds-title", classes="pane-title")
                yield BuildList(id="builds")
                yield VitalsPanel(id="vitals")
                yield MachinePanes(app.gpu_sampler, app.host_reader, app.config.gpu_interval,
                                   id="machine")
            with Vertical(id="right"):
                yield PhaseTreeView(id="phases")
                yield Static(f"Log · level {app.config.log_level} (l to change)", id="log-title",
                             classes="pane-title")
                yield LogPrompt(id="log-prompt")
                yield LogPane(id="log")
        yield KeyBar()

    def on_mount(self) -> None:
        self._mounted(self)

    def on_resize(self, event: Resize) -> None:
        self.set_class(event.size.width < NARROW, "-narrow")
        self.set_class(event.size.width < COMPACT, "-compact")


class StackScreen(ModalScreen):
    """One build's stacks as py-spy printed them: select and copy (Ctrl+C), `y` copies it all."""

    DEFAULT_CSS = """
    StackScreen { align: center middle; }
    StackScreen > Vertical { width: 90%; height: 85%; border: thick $accent; background: $surface; }
    StackScreen TextArea { height: 1fr; }
    StackScreen .stack-title { height: 1; padding: 0 1; background: $panel; text-style: bold; }
    """
    BINDINGS = [Binding("escape,q,s", "dismiss", "Close"), Binding("y", "copy_all", "Copy all")]

    def __init__(self, job: int, text: str, taken: str = "now") -> None:
        super().__init__()
        self.job, self.text, self.taken = job, text, taken

    def compose(self) -> ComposeResult:
        from textual.widgets import TextArea  # a heavy import, paid only when stacks are shown

        with Vertical():
            yield Static(f"Stacks of build #{self.job}, taken {self.taken} · y copies all · Esc closes",
                         classes="stack-title", markup=False)
            yield TextArea(self.text, read_only=True, soft_wrap=False, id="stack-text")

    def action_copy_all(self) -> None:
        self.app.copy_to_clipboard(self.text)
        self.notify("Stacks copied to the clipboard")

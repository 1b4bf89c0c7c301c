"""The stack viewer: one build's stacks over the main screen (`main_screen`), to read and copy."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from .widgets.outside_text import plain_lines


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
            yield TextArea(plain_lines(self.text), read_only=True, soft_wrap=False, id="stack-text")

    def action_copy_all(self) -> None:
        self.app.copy_to_clipboard(self.text)
        self.notify("Stacks copied to the clipboard")

"""A modal panel: what differs between a finished build and the previous build of its model."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ...core.history_diff import format_comparison


class DiffPanel(ModalScreen[None]):
    """Shows `history diff` of two builds (the same lines the CLI prints); Esc, q or D closes it."""

    DEFAULT_CSS = """
    DiffPanel {
        align: center middle;
    }
    DiffPanel > VerticalScroll {
        width: 90%;
        max-height: 80%;
        height: auto;
        border: round $accent;
        background: $surface;
        padding: 0 1;
    }
    """

    BINDINGS = [
        Binding("escape", "dismiss", "Close"),
        Binding("q", "dismiss", "Close", show=False),
        Binding("D", "dismiss", "Close", show=False),
    ]

    def __init__(self, result: dict, reason: str | None = None) -> None:
        super().__init__()
        self.result = result
        self.lines = format_comparison(result, top=12)
        if reason:
            self.lines.insert(1, f"why it built: {reason}")

    def compose(self) -> ComposeResult:
        text = Text()
        for i, line in enumerate(self.lines):
            style = "bold" if i == 0 or not line.startswith(" ") else ""
            text.append(line + "\n", style=style)
        with VerticalScroll():
            yield Static(text, id="diff-text")

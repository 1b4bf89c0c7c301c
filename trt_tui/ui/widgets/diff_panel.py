"""A modal panel: what differs between a finished build and the previous successful build of its model.

The builds are named as the app shows them (`#N`): a build's number is its history id, the one
`trt-tui history` lists (`history.numbering`), in this session or an earlier one.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ...core.history.diff import compare, format_comparison
from ...core.history.records import History
from .outside_text import plain


class NothingToCompare(Exception):
    """Why a build has no diff to show; the message is one line for a notification."""


def diff_of_build(history: History | None, recorded: dict[int, int], job: int, reason: str | None) -> DiffPanel:
    """The panel for the app's build `job`, against the build of its model that succeeded before it.
    `recorded` maps the app's build numbers to their history ids (the recorder's: the same numbers,
    `history.numbering`); an earlier session's build is named by its history id."""
    record_id = recorded.get(job)
    if history is None or record_id is None or (record := history.get(record_id)) is None:
        raise NothingToCompare("This build is not in the build history")
    previous = history.previous(record)
    if previous is None:
        raise NothingToCompare(f"No earlier successful build of {record.name} to compare with")
    shown_as = {history_id: number for number, history_id in recorded.items()}
    before = f"#{shown_as.get(previous.id, previous.id)}"  # a build's number is its history id
    return DiffPanel(compare(previous, record), reason, labels=(before, f"#{job}"))


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

    def __init__(self, result: dict, reason: str | None = None, labels: tuple[str, str] | None = None) -> None:
        super().__init__()
        self.result = result
        self.lines = format_comparison(result, top=12, labels=labels)
        if reason:
            self.lines.insert(1, f"why it built: {reason}")

    def compose(self) -> ComposeResult:
        text = Text()
        for i, line in enumerate(self.lines):
            style = "bold" if i == 0 or not line.startswith(" ") else ""
            text.append(plain(line) + "\n", style=style)  # names files, options: outside text
        with VerticalScroll():
            yield Static(text, id="diff-text")

"""The log's prompt, on one line above the log: a search (`ctrl+f`, Find) or where to save it (`S`).

Like the filter prompt, it takes every key while it has the focus (its input is a `FilterInput`, so
the app's letter commands stand aside), Enter gives the text to the app (`LogPrompt.Done`) and Esc
gives None; leaving it another way (Tab, a click) is Esc. A search follows the text as it is typed
(its log, given to the prompt, highlights and moves to the first match at each key), as a pager's
incremental search does; Esc ends it, there or later in the log (`LogPane`'s own Esc).
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Input, Static

from .filter_prompt import FilterInput
from .log_pane import LogPane

LABELS = {"search": "find in log:", "save": "save log to:"}
HINTS = {"search": "text to find, any case, found as typed · ⏎ keeps · esc ends the search", "save": "a file · ⏎ saves · esc cancels"}


class LogInput(FilterInput):
    BINDINGS = [
        Binding("enter", "keep", "Done", key_display="⏎"),
        Binding("escape", "clear", "Cancel", key_display="esc"),
    ]

    def action_keep(self) -> None:
        self.query_ancestor(LogPrompt).done(self.value)

    def action_clear(self) -> None:
        self.query_ancestor(LogPrompt).done(None)


class LogPrompt(Horizontal):
    DEFAULT_CSS = """
    LogPrompt {
        height: 1;
        display: none;
        background: $boost;
        &.-open { display: block; }
        & > Static { width: auto; padding: 0 1; color: $accent; text-style: bold; }
    }
    """

    class Done(Message):
        """`text`: what was typed (Enter), None where the prompt was left (Esc, Tab, a click)."""

        def __init__(self, mode: str, text: str | None) -> None:
            super().__init__()
            self.mode, self.text = mode, text

    mode = "search"

    def __init__(self, log: LogPane, **kwargs) -> None:
        """`log`: the pane a search highlights as it is typed."""
        super().__init__(**kwargs)
        self.log_pane = log

    def compose(self) -> ComposeResult:
        yield Static(LABELS["search"], id="log-prompt-label")
        yield LogInput(id="log-input")

    @property
    def input(self) -> LogInput:
        return self.query_one(LogInput)

    def open(self, mode: str, text: str = "") -> None:
        self.mode = mode
        self.query_one("#log-prompt-label", Static).update(LABELS[mode])
        self.input.placeholder = HINTS[mode]
        self.input.value = text
        self.add_class("-open")
        self.input.focus()
        self.input.cursor_position = len(text)

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        if self.mode == "search" and self.has_class("-open"):
            self.log_pane.search(event.value)

    def done(self, text: str | None) -> None:
        if self.has_class("-open"):
            self.remove_class("-open")
            self.post_message(self.Done(self.mode, text))

    def on_descendant_blur(self) -> None:
        self.done(None)

"""The model filter's prompt: `/` opens it, and then every key is text until Enter or Esc.

A filter that started by typing in the list could not tell a model's name from a command (`c` then
`a` cancelled, then built everything; a name starting with `q` quit). Here the two never mix: while
the prompt has the focus it takes every printable key, the key bar says only how to leave it, and the
commands work again once it is left. Enter keeps the filter (the prompt stays, showing it), Esc (or
an empty filter) clears it and hides the prompt.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Input, Static


class FilterInput(Input):
    DEFAULT_CSS = """
    FilterInput, FilterInput:focus { height: 1; border: none; padding: 0; width: 1fr; background: transparent; }
    """
    BINDINGS = [
        Binding("enter", "keep", "Keep filter", key_display="⏎"),
        Binding("escape", "clear", "Clear filter", key_display="esc"),
        Binding("down", "keep", "Keep filter", show=False),
    ]

    def action_keep(self) -> None:
        self.post_message(FilterPrompt.Closed(self.value))

    def action_clear(self) -> None:
        self.value = ""
        self.post_message(FilterPrompt.Closed(""))


class FilterPrompt(Horizontal):
    """`/ text▏` on one line; hidden while there is no filter and the prompt is closed."""

    DEFAULT_CSS = """
    FilterPrompt {
        height: 1;
        display: none;
        background: $boost;
        &.-open, &.-kept { display: block; }
        & > .filter-prompt--slash { width: 2; padding: 0 0 0 1; color: $accent; text-style: bold; }
        &.-kept > FilterInput { color: $text-accent; }
    }
    """

    class Closed(Message):
        """The prompt gave the focus back; `text` is the filter that stays ("" for none)."""

        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def compose(self) -> ComposeResult:
        yield Static("/", classes="filter-prompt--slash")
        yield FilterInput(placeholder="filter models · ⏎ keeps · esc clears", id="filter")

    @property
    def input(self) -> FilterInput:
        return self.query_one(FilterInput)

    @property
    def is_open(self) -> bool:
        return self.has_class("-open")

    def open(self) -> None:
        self.add_class("-open")
        self.input.focus()

    def on_descendant_blur(self) -> None:
        """Left another way (Tab, a click): the filter typed so far stays."""
        if self.is_open:
            self.close(self.input.value)

    def close(self, text: str) -> None:
        self.remove_class("-open")
        self.set_class(bool(text), "-kept")

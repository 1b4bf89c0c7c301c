"""A list's filter prompt: `/` opens the one of the list that has the focus (the models', the builds'),
and then every key is text until Enter or Esc.

A filter that started by typing in the list could not tell a model's name from a command (`c` then
`a` cancelled, then built everything; a name starting with `q` quit). Here the two never mix: while
the prompt has the focus it takes every printable key, the key bar says only how to leave it, and the
commands work again once it is left. The list follows each key typed; Enter keeps the filter (the
prompt stays, showing it) and gives the focus back to the list, Esc (or an empty filter) clears it
and hides the prompt; Esc in the list clears a kept filter too (`Filterable`'s own binding).
"""

from __future__ import annotations

from typing import Protocol, cast

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.dom import DOMNode
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input, Static


class Filterable(Protocol):
    """A list a prompt filters: it shows only the rows whose name contains `filter_text`."""

    filter_text: str

    def set_filter(self, text: str) -> None: ...

    def focus(self, scroll_visible: bool = True) -> Widget: ...


class KeepsFilter:
    """What a list a prompt filters does with its filter (`Filterable`): follow it (`_refilter`, the
    list's own), and clear a kept one on Esc (bind Esc to `clear_filter`), which passes Esc on where
    there is none. The models' and the builds' lists both are one."""

    filter_text: str = ""

    def _refilter(self) -> None:
        """Show the rows the filter lets through."""
        raise NotImplementedError

    def set_filter(self, text: str) -> None:
        if text != self.filter_text:
            self.filter_text = text
            self._refilter()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return action != "clear_filter" or bool(self.filter_text)  # Esc passes on where there is none

    def action_clear_filter(self) -> None:
        """Esc: the filter kept with Enter goes, and its prompt with it."""
        prompt = prompt_of(cast(DOMNode, self), self)
        if prompt is not None:
            prompt.clear()
        else:
            self.set_filter("")


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
    """`/ text▏` on one line over its list (`target`); hidden while there is no filter and the prompt
    is closed."""

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

    def __init__(self, target: Filterable, what: str, *, input_id: str, **kwargs) -> None:
        """`what`: the rows the list shows ("models"), for the prompt's hint."""
        super().__init__(**kwargs)
        self.target = target
        self._what, self._input_id = what, input_id

    def compose(self) -> ComposeResult:
        yield Static("/", classes="filter-prompt--slash")
        yield FilterInput(placeholder=f"filter {self._what} · ⏎ keeps · esc clears", id=self._input_id)

    @property
    def input(self) -> FilterInput:
        return self.query_one(FilterInput)

    @property
    def is_open(self) -> bool:
        return self.has_class("-open")

    def open(self) -> None:
        self.add_class("-open")
        self.input.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        """The list follows the filter as it is typed."""
        event.stop()
        if self.is_open:
            self.target.set_filter(event.value)

    def on_filter_prompt_closed(self, event: Closed) -> None:
        event.stop()
        self.close(event.text)
        self.target.focus()

    def on_descendant_blur(self) -> None:
        """Left another way (Tab, a click): the filter typed so far stays."""
        if self.is_open:
            self.close(self.input.value)

    def close(self, text: str) -> None:
        self.remove_class("-open")
        self.set_class(bool(text), "-kept")
        self.target.set_filter(text)

    def clear(self) -> None:
        """No filter, and no prompt (Esc in the list)."""
        self.input.value = ""
        self.close("")


def prompt_of(node: DOMNode, target: object) -> FilterPrompt | None:
    """The prompt that filters `target`, among `node`'s screen's."""
    return next((prompt for prompt in node.screen.query(FilterPrompt) if prompt.target is target), None)


def prompt_for_focus(node: DOMNode) -> FilterPrompt | None:
    """The prompt of the list that has the focus; else the first whose list is shown (the models')."""
    prompts = list(node.screen.query(FilterPrompt))
    focused = node.screen.focused
    return (next((prompt for prompt in prompts if prompt.target is focused), None)
            or next((prompt for prompt in prompts if isinstance(prompt.target, Widget) and prompt.target.display),
                    None))

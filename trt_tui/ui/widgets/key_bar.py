"""The key bar at the bottom of the screen: the keys that work now, drawn as one line.

It shows what Textual's `Footer` shows (the focused widget's and the screen's bindings with
`show=True`, one key per action, a disabled one dimmed, the command palette's key on the right) and
answers a click the same way, by pressing the key. It is one widget instead of a container of one
widget per key, because the `Footer` rebuilds all those widgets, each styled anew, whenever the
bindings change: five times before the first frame here (focus settling, the screen resuming), a
good part of the app's start-up. Here a change of bindings repaints one line, and only if what it shows
changed. Short of room, it leaves out the last keys first, but never the ones it is told are
essential (help and quit, `commands.ESSENTIAL_ACTIONS`): from help a user finds every other key. A key
whose command cannot act here (the screen says which: `hides`) is left out, though it still answers
when pressed, saying why.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual import events
from textual.widget import Widget


@dataclass(frozen=True)
class _Key:
    action: str
    key: str  # what a click presses
    display: str
    description: str
    enabled: bool
    tooltip: str


class KeyBar(Widget, can_focus=False):
    ALLOW_SELECT = False
    COMPONENT_CLASSES = {"key-bar--key", "key-bar--description", "key-bar--hover"}
    DEFAULT_CSS = """
    KeyBar {
        dock: bottom;
        height: 1;
        color: $footer-foreground;
        background: $footer-background;
    }
    KeyBar > .key-bar--key {
        color: $footer-key-foreground;
        background: $footer-key-background;
        text-style: bold;
    }
    KeyBar > .key-bar--description {
        color: $footer-description-foreground;
        background: $footer-description-background;
    }
    KeyBar > .key-bar--hover {
        background: $block-hover-background;
    }
    """

    def __init__(self, *, essential: Collection[str] = (), hides: Callable[[str], bool] = lambda action: False,
                 id: str | None = None) -> None:
        """`essential`: the actions whose keys stay when the bar is short of room. `hides(action)`: its
        command cannot act now (asked whenever the bindings change: `Screen.refresh_bindings`)."""
        super().__init__(id=id)
        self._essential = frozenset(essential)
        self._hides = hides
        self._keys: tuple[_Key, ...] = ()
        self._palette: _Key | None = None
        self._spans: list[tuple[int, int, _Key]] = []  # cells each key takes, as last drawn
        self._hover: _Key | None = None

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self._bindings_changed(self.screen)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    @property
    def keys(self) -> tuple[str, ...]:
        """The descriptions shown, in order (the palette's last): what a user reads."""
        shown = [key.description for key in self._keys]
        return (*shown, self._palette.description) if self._palette else tuple(shown)

    def _bindings_changed(self, screen) -> None:
        if screen is not self.screen:
            return
        active = screen.active_bindings
        keys: dict[str, _Key] = {}
        for _node, binding, enabled, tooltip in active.values():
            if binding.show and binding.action not in keys and not self._hides(binding.id or binding.action):
                keys[binding.action] = _Key(binding.action, binding.key, self.app.get_key_display(binding), binding.description,
                                            enabled, tooltip or binding.description)
        palette = None
        if self.app.ENABLE_COMMAND_PALETTE and self.app.COMMAND_PALETTE_BINDING in active:
            _node, binding, enabled, tooltip = active[self.app.COMMAND_PALETTE_BINDING]
            palette = _Key(binding.action, binding.key, self.app.get_key_display(binding), binding.description, enabled,
                           binding.tooltip or binding.description)
        shown = tuple(keys.values())
        if (shown, palette) != (self._keys, self._palette):
            self._keys, self._palette = shown, palette
            self.refresh()

    def render(self) -> Text:
        key_style = self.get_component_rich_style("key-bar--key", partial=True)
        text_style = self.get_component_rich_style("key-bar--description", partial=True)
        hover_style = self.get_component_rich_style("key-bar--hover", partial=True)

        def label(key: _Key) -> Text:
            text = Text.assemble((f" {key.display} ", key_style), (f"{key.description} ", text_style))
            if not key.enabled:
                text.stylize(Style(dim=True))
            if key is self._hover:
                text.stylize(hover_style)
            return text

        spans: list[tuple[int, int, _Key]] = []
        palette = label(self._palette) if self._palette is not None else None
        room = max(0, self.size.width - (1 + palette.cell_len if palette is not None else 0))
        labels = {key: label(key) for key in self._keys}
        while sum(text.cell_len for text in labels.values()) > room:
            extra = [key for key in labels if key.action not in self._essential]
            if not extra:
                break
            del labels[extra[-1]]
        line = Text(no_wrap=True, overflow="crop", end="")
        for key, text in labels.items():
            start, end = line.cell_len, line.cell_len + text.cell_len
            line.append_text(text)
            if end > room:
                break  # shown cut off, if at all: not a place to click
            spans.append((start, end, key))
        line.truncate(room)
        if palette is not None and self._palette is not None:
            line.pad_right(room - line.cell_len)
            spans.append((room + 1, room + 1 + palette.cell_len, self._palette))  # after the divider
            line.append_text(Text("▏", style=Style(dim=True)) + palette)  # dim under the palette's own styles
        self._spans = spans
        return line

    def _key_at(self, x: int) -> _Key | None:
        return next((key for start, end, key in self._spans if start <= x < end), None)

    def on_click(self, event: events.Click) -> None:
        key = self._key_at(event.x)
        if key is None:
            return
        event.stop()
        if key.enabled:
            self.app.simulate_key(key.key)
        else:
            self.app.bell()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        key = self._key_at(event.x)
        if key is not self._hover:
            self._hover = key
            self.tooltip = key.tooltip if key is not None else None
            self.refresh()

    def on_leave(self, event: events.Leave) -> None:
        if self._hover is not None:
            self._hover = None
            self.refresh()

"""Every command of the main screen, once: its key, its action and its words.

The app's bindings (and so the footer and the `?` help panel, which Textual draws from them), the
command palette's entries and the keys the model picker leaves alone (any other printable key
starts its filter) are all made from `COMMANDS`, so a new command appears in each of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding


@dataclass(frozen=True)
class Command:
    key: str  # Textual's key name ("question_mark", "C")
    action: str  # the app's `action_<action>`
    description: str
    show: bool = True  # in the footer
    palette: bool = True  # in the command palette
    key_display: str | None = None

    @property
    def char(self) -> str | None:
        """The printable character this key types, if it types one."""
        named = {"question_mark": "?", "slash": "/", "space": " "}
        key = named.get(self.key, self.key)
        return key if len(key) == 1 else None

    def binding(self) -> Binding:
        return Binding(self.key, self.action, self.description, show=self.show, key_display=self.key_display)


COMMANDS: tuple[Command, ...] = (
    Command("enter", "build", "Build", palette=False, key_display="⏎"),
    Command("a", "build_all", "Build all"),
    Command("c", "cancel", "Cancel"),
    Command("C", "cancel_all", "Cancel all", key_display="C"),
    Command("r", "rebuild", "Rebuild"),
    Command("f", "force_rebuild", "Force rebuild", show=False),
    Command("w", "toggle_watch", "Watch"),
    Command("l", "cycle_log", "Log level"),
    Command("D", "diff", "Diff with previous build", show=False, key_display="D"),
    Command("s", "stack", "Stack"),
    Command("slash", "filter", "Filter", show=False, palette=False, key_display="/"),
    Command("tab", "focus_next", "Next pane", show=False, palette=False),
    Command("question_mark", "help", "Help", key_display="?"),
    Command("q", "quit", "Quit"),
)

BINDINGS = [command.binding() for command in COMMANDS]
# Keys the picker leaves to the app's bindings; any other printable key starts the filter.
RESERVED_KEYS = frozenset(command.char for command in COMMANDS if command.char) | {" "}
PALETTE = [command for command in COMMANDS if command.palette]

"""The selected build's action menu (`m`, or Enter in the builds list): the commands of the command
table that can act on that build, each with its key; Enter runs one, Esc closes."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from .commands import Command

SAVE_LOG_ACTION = "save_log"  # the log pane's "save the build's whole log": in the menu once it is a command
MENU = (  # (action, what the menu says)
    ("cancel", "Cancel"),
    ("rebuild", "Rebuild"),
    ("diff", "Diff with the previous build"),
    ("copy_engine_path", "Copy the engine's path"),
    (SAVE_LOG_ACTION, "Save the log"),
    ("bundle", "Write a report bundle"),
    ("stack", "Stacks"),
)


class ActionMenu(ModalScreen[str | None]):
    """The screen's result is the action chosen (None: closed)."""

    DEFAULT_CSS = """
    ActionMenu { align: center middle; }
    ActionMenu > OptionList { width: 50; height: auto; border: round $accent; background: $surface; }
    """
    BINDINGS = [Binding("escape,q,m", "dismiss", "Close")]

    def __init__(self, title: str | Text, actions: list[tuple[str, str]], commands: Sequence[Command]) -> None:
        """`actions`: (action, label) of `MENU`; `commands`: the app's, whose keys the menu names."""
        super().__init__()
        self.title_text, self.actions = title, actions
        self.keys = {command.action: command.keys_text for command in commands}

    def compose(self) -> ComposeResult:
        menu = OptionList(*(Option(Text.assemble(label, (f"  {self.keys[action]}", "dim")), id=action)
                            for action, label in self.actions), id="action-menu")
        menu.border_title = self.title_text
        yield menu

    @property
    def labels(self) -> list[str]:
        return [label for _, label in self.actions]

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

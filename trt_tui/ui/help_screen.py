"""`?`: trt-tui's own help, the keys of the main screen (from `commands.COMMANDS`, the ones that work
here), the keys of each pane, and what each pane shows. Textual's generic key panel lists widget
bindings such as "Move cursor left" and none of what a user of this app needs to know."""

from __future__ import annotations

from collections.abc import Iterable

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from .commands import Command
from .widgets.columns import BUILD_COLUMNS

PANE_KEYS = (
    ("Phase tree", "↑ ↓ Home End", "move through the phases"),
    ("Phase tree", "⏎ or space", "fold or unfold the phase under the cursor"),
    ("Builds", "↑ ↓ or a click", "select a build: the right side shows it"),
    ("Builds", "⏎", "the selected build's actions (as m)"),
    ("History (h)", "space / d", "mark a build / compare the two marked (or the marked and the highlighted)"),
    ("Filter", "⏎ / esc", "keep the filter and return to the list / clear it"),
    ("Log", "↑ PgUp / End", "scrolling up holds the log still for reading; End follows the newest line again"),
    ("Log search / save", "⏎ / esc", "search (or save) / leave the prompt; esc in the search ends it"),
    ("Stacks (s)", "y", "copy all the stacks (for a bug report); esc closes"),
    ("Anywhere", "tab", "next pane; ctrl+p opens the command palette"),
)

PANES = (
    ("Models", "every .onnx found: size, inputs, the state of its last build; the highlighted one's details"),
    ("Builds", f"one row per build: {', '.join(column.described for column in BUILD_COLUMNS[2:])} "
               "(columns drop from the right on a narrow screen); its title: the queue paused, builds at "
               "once, the sort, skipped hidden, build all's progress and ETA"),
    ("Vitals", "the selected build's process: CPU and memory, and whether it is working or stalled"),
    ("Host / GPU", "the machine: CPU and memory, and each GPU NVML reports"),
    ("Phases", "the selected build's TensorRT phases as TensorRT nests them: ▸ runs, ✗ was stopped; "
               "bar, steps and time; the ETA once the model has history"),
    ("Log", "the selected build's TensorRT log, at the level l chooses: every line is kept (the oldest on "
            "disk) and S saves them all; the title says when it is held still, wrapped or searched"),
)


def _keys_table(commands: Iterable[Command]) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    for command in commands:
        table.add_row(command.keys_text, command.help)
    return table


def _pane_table() -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(no_wrap=True)
    table.add_column()
    for pane, keys, what in PANE_KEYS:
        table.add_row(pane, keys, what)
    return table


def _panes_table() -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    for pane, what in PANES:
        table.add_row(pane, what)
    return table


class HelpScreen(ModalScreen):
    """The keys that work on the main screen now, then each pane's; `?`, esc or q closes it."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 90%; max-width: 110; height: auto; max-height: 90%;
        border: thick $accent; background: $surface; padding: 0 1;
    }
    HelpScreen .help-heading { text-style: bold; color: $accent; margin-top: 1; }
    """
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close")]

    def __init__(self, commands: Iterable[Command]) -> None:
        super().__init__()
        self.commands = tuple(commands)

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(Text("trt-tui keys · esc closes", style="bold"))
            yield Static("Main screen", classes="help-heading")
            yield Static(_keys_table(self.commands), id="help-keys")
            yield Static("In a pane", classes="help-heading")
            yield Static(_pane_table(), id="help-pane-keys")
            yield Static("Panes", classes="help-heading")
            yield Static(_panes_table(), id="help-panes")

    def text(self) -> str:
        """All the help as plain lines (what a user reads; used by tests)."""
        lines = [f"{command.keys_text}  {command.help}" for command in self.commands]
        lines += [f"{pane}  {keys}  {what}" for pane, keys, what in PANE_KEYS]
        lines += [f"{pane}  {what}" for pane, what in PANES]
        return "\n".join(lines)

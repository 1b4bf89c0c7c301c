"""Every command of the main screen, once: its key, its action and its words.

The main screen's and the app's bindings (and so the key bar), the command palette's entries and the `?` help screen are
all made from `COMMANDS`, so a new command appears in each of them. Letters are commands only
outside the filter prompt (`/`), which takes every key until Enter or Esc.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from textual.binding import Binding, BindingType
from textual.keys import Keys, _character_to_key


@dataclass(frozen=True)
class Command:
    key: str  # Textual's key name ("question_mark", "C")
    action: str  # the main screen's `action_<action>` (the app's for `APP_ACTIONS` and `session`)
    description: str  # the key bar's and the palette's title
    words: str  # one line: what it does; `{key}` is its own key, as the user knows it (`help`)
    show: bool = True  # in the key bar
    palette: bool = True  # in the command palette
    key_display: str | None = None
    picks_models: bool = False  # acts on the model picker: not offered where there is none (`trt-tui run`)
    session: bool = False  # acts on the whole session (the queue, watching, the log's level): the app's

    @property
    def keys_text(self) -> str:
        return self.key_display or self.key

    @property
    def help(self) -> str:
        """What it does, for the palette and the help screen, naming its key as the config file sets it."""
        return self.words.format(key=self.keys_text)

    @property
    def target(self) -> str:
        """The binding's action: the app's (`app.`) for a session's command, bound on the main screen
        all the same, so that a screen pushed over it takes its key."""
        return f"app.{self.action}" if self.session else self.action

    def binding(self) -> Binding:
        # The action is the binding's id: the config file's `[keys]` rebinds it through Textual's keymap.
        return Binding(self.key, self.target, self.description, show=self.show, key_display=self.key_display,
                       id=self.action)


COMMANDS: tuple[Command, ...] = (
    Command("enter", "build", "Build", "build the highlighted model (skipped when its engine is current)",
            key_display="⏎", picks_models=True),
    Command("a", "build_all", "Build all", "build every model the filter shows", picks_models=True),
    Command("c", "cancel", "Cancel", "cancel the selected build; a second {key} forces it (kills its process)"),
    Command("C", "cancel_all", "Cancel all", "cancel every running and queued build", key_display="C",
            session=True),
    Command("r", "rebuild", "Rebuild", "build the selected build's model again (skipped when current)"),
    Command("f", "force_rebuild", "Force rebuild", "rebuild even when the engine is current", show=False),
    Command("w", "toggle_watch", "Watch", "watch the models' directories: a changed model rebuilds",
            picks_models=True, session=True),
    Command("n", "toggle_follow", "Follow newest", "a new build takes the selection (off: the selection stays)",
            show=False, session=True),
    Command("l", "cycle_log", "Log level", "cycle the log's minimum severity: warning, info, verbose, error",
            session=True),
    Command("D", "diff", "Diff with previous build", "what differs from the previous build of the model",
            show=False, key_display="D"),
    Command("s", "stack", "Stack", "the selected build's native and Python stacks, read now (py-spy)"),
    Command("m", "build_menu", "Actions", "the selected build's actions (also Enter in the builds list): cancel, "
            "rebuild, diff, copy the engine's path, stacks", show=False),
    Command("y", "copy_engine_path", "Copy engine path", "copy the selected build's engine path to the clipboard",
            show=False),
    Command("h", "history", "History", "the highlighted model's past builds and their duration trend; space marks "
            "two, d compares them", show=False),
    Command("o", "sort", "Sort builds", "sort the builds list by the next column (then back to the order added)",
            show=False),
    Command("O", "reverse_sort", "Reverse sort", "reverse the builds list's order", show=False, key_display="O"),
    Command("H", "hide_skipped", "Hide skipped", "hide or show the builds skipped because their engine is current",
            show=False, key_display="H"),
    Command("x", "clear_finished", "Clear finished", "remove the finished builds from the builds list", show=False),
    Command("P", "pause_queue", "Pause queue", "pause the queue (running builds go on, queued ones wait); "
            "again resumes", show=False, key_display="P", session=True),
    Command("plus", "more_jobs", "More at once", "one more build at once, from now on", show=False, key_display="+",
            session=True),
    Command("minus", "fewer_jobs", "Fewer at once", "one build fewer at once (running builds go on)", show=False,
            key_display="-", session=True),
    Command("left_square_bracket", "queue_up", "Queue earlier", "move the selected queued build up the queue",
            show=False, key_display="["),
    Command("right_square_bracket", "queue_down", "Queue later", "move the selected queued build down the queue",
            show=False, key_display="]"),
    Command("slash", "filter", "Filter", "filter the list that has the focus (models or builds) as you type:"
            " every key goes to the filter until Enter keeps it or Esc clears it", key_display="/"),
    # The zoom's and the log's, after the others: the key bar drops the last first where it is short.
    Command("z", "zoom", "Zoom", "the focused pane fills the screen; z again shows every pane"),
    Command("F", "toggle_log_follow", "Follow log",
            "the log follows its newest line, or holds still (scrolling the log up holds it, End follows)",
            show=False, key_display="F"),
    Command("ctrl+f", "search_log", "Find", "find text in the log: matches are highlighted, F3 goes to the next",
            key_display="^f"),
    Command("f3", "next_match", "Next match", "the log's next line that matches the search", show=False,
            key_display="F3"),
    Command("shift+f3", "previous_match", "Previous match", "the log's previous line that matches the search",
            show=False, key_display="⇧F3"),
    Command("e", "next_problem", "Next warning", "the log's next warning or error", show=False),
    Command("W", "toggle_wrap", "Wrap log", "fold the log's long lines, or cut them", show=False, key_display="W"),
    Command("S", "save_log", "Save log",
            "save every line of the selected build's log, to MODEL-ID.log here or a file you name", key_display="S"),
    Command("b", "bundle", "Report bundle",
            "write the selected finished build's report bundle (trt-tui-bundle-ID.tar.gz here: the command to"
            " rebuild, versions, log, model)", show=False),
    Command("tab", "focus_next", "Next pane", "move to the next pane", show=False, palette=False),
    Command("question_mark", "help", "Help", "this help: the keys and what each pane shows", key_display="?"),
    Command("q", "quit", "Quit", "cancel the running builds, wait for them, and quit"),
)

# The app's own commands (help, quit, moving between panes) work over any screen; the rest are bound on
# the main screen (a screen pushed over it takes its keys), which hands each to the pane whose data it
# acts on, or to the app for the session's (`Command.session`).
APP_ACTIONS = frozenset({"focus_next", "help", "quit"})
APP_BINDINGS: list[BindingType] = [command.binding() for command in COMMANDS if command.action in APP_ACTIONS]
SCREEN_BINDINGS: list[BindingType] = [command.binding() for command in COMMANDS if command.action not in APP_ACTIONS]
COMMAND_ACTIONS = frozenset(command.action for command in COMMANDS) - {"focus_next"}
PALETTE = [command for command in COMMANDS if command.palette]
PICKER_ACTIONS = frozenset(command.action for command in COMMANDS if command.picks_models)
# The key bar drops these last when it is short of room: without them a user cannot find the rest.
ESSENTIAL_ACTIONS = ("help", "quit")


MODIFIERS = ("ctrl", "shift", "alt", "meta", "super", "hyper")


def key_name(text: str) -> str:
    """Textual's name for a key as a user writes it: `x`, `?`, `ctrl+x`, `f5`, `enter`."""
    *modifiers, key = text.strip().split("+")
    if len(key) == 1:
        key = _character_to_key(key)
    elif key not in set(Keys) and not any(key == _character_to_key(chr(c)) for c in range(33, 127)):
        raise ValueError(f"{text!r} is not a key (write x, ?, ctrl+x, f5, enter…)")
    if any(m not in MODIFIERS for m in modifiers) or len(set(modifiers)) < len(modifiers):
        raise ValueError(f"{text!r}: a key's modifiers are {', '.join(MODIFIERS)}, each once")
    return "+".join([*modifiers, key])


def with_keys(commands: tuple[Command, ...], keys: Mapping[str, str]) -> tuple[Command, ...]:
    """`commands` with `keys` (action -> key, as a user writes it) in place of their own keys (and in
    their help, where it names them: `Command.help`); a
    ValueError names an action that is no command's, a key that is not one, or two commands on one key."""
    actions = {command.action for command in commands}
    for action in keys:
        if action not in actions:
            raise ValueError(f"{action!r} is not a command; the commands are {', '.join(sorted(actions))}")
    names = {action: key_name(text) for action, text in keys.items()}
    remapped = tuple(replace(c, key=names[c.action], key_display=keys[c.action].strip()) if c.action in names else c
                     for c in commands)
    taken: dict[str, str] = {}
    for command in remapped:
        if (other := taken.setdefault(command.key, command.action)) != command.action:
            theirs, ours = sorted((other, command.action), key=lambda action: action not in keys)
            raise ValueError(f"{keys[theirs].strip()!r} for {theirs} is already the key of {ours}")
    return remapped


def keymap(commands: tuple[Command, ...], remapped: Mapping[str, str]) -> dict[str, str]:
    """Textual's keymap (binding id -> key) for the `remapped` actions of `commands` (`with_keys`'). Only
    those: Textual applies a keymap to every binding each time it works out which keys do what."""
    return {command.action: command.key for command in commands if command.action in remapped}

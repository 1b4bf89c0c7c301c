"""The app's commands on what the screen shows: the log pane's (follow, search, next warning or
error, wrap, save) and the zoom. A mixin of `MainScreen`, so that each is the screen's `action_<name>`
as the command table wants, without growing the screen's module.
"""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

from ..core.build.log_store import NotOurs, save_log
from .action_host import MainScreenHost
from .widgets.log_pane import LogPane
from .widgets.log_prompt import LogPrompt


class ViewActions(MainScreenHost):
    """Needs the app's `log_pane` (`host`) and the selected build (`state`)."""

    @property
    def log_prompt(self) -> LogPrompt:
        self.screen.minimize()  # a zoomed pane would hide the prompt, which sits above the log
        return self.screen.query_one(LogPrompt)

    def _selected_view(self):
        return self.state.selected_view

    def retitle_log(self) -> None:
        pane = self.host.log_pane
        self.query_one("#log-title", Static).update(
            f"Log · level {pane.min_severity.label} (l to change){pane.status()}")

    def on_log_pane_changed(self, message: LogPane.Changed) -> None:
        self.retitle_log()

    # Following, wrapping and moving through the log are the log pane's own actions.

    def action_toggle_log_follow(self) -> None:
        self.host.log_pane.action_toggle_follow()

    def action_search_log(self) -> None:
        self.log_prompt.open("search", self.host.log_pane.query_text)

    def action_next_match(self, step: int = 1) -> None:
        self.host.log_pane.action_next_match(step)

    def action_previous_match(self) -> None:
        self.action_next_match(-1)

    def action_next_problem(self) -> None:
        self.host.log_pane.action_next_problem()

    def action_toggle_wrap(self) -> None:
        self.host.log_pane.action_toggle_wrap()

    def action_save_log(self) -> None:
        view = self._selected_view()
        if view is None:
            self.notify("No build selected", severity="warning")
            return
        self.log_prompt.open("save", f"{Path(view.model).stem}-{view.id}.log")

    def on_log_prompt_done(self, message: LogPrompt.Done) -> None:
        self.host.log_pane.focus()
        if message.mode == "search":  # Esc (no text) ends the search, as it clears the filter
            if not self.host.log_pane.search(message.text or "") and message.text:
                self.notify(f"“{message.text}” is not in the log shown", markup=False)
        elif message.text:
            self._save_log(Path(message.text).expanduser())

    def _save_log(self, path: Path) -> None:
        view = self._selected_view()
        if view is None:
            return
        path = path if path.is_absolute() else Path.cwd() / path
        title = f"build #{view.id} {view.model} · {view.state.value}"
        try:
            count = save_log(view.logs, path, title)
        except NotOurs as exc:
            self.notify(str(exc), title="Log not saved", severity="error", timeout=10, markup=False)
        except OSError as exc:
            self.notify(f"{path}: {exc.strerror or exc}", title="Log not saved", severity="error", timeout=10,
                        markup=False)
        else:
            self.notify(f"{count} lines of #{view.id} saved to {path}", title="Log saved", timeout=10,
                        markup=False)

    def action_zoom(self) -> None:
        """The focused pane fills the screen (the key bar stays); again, back to every pane."""
        screen = self.screen
        if screen.maximized is not None:
            screen.minimize()
        elif screen.focused is None or not screen.maximize(screen.focused, container=False):
            self.notify("Move to a pane (Tab) to zoom it", severity="warning")

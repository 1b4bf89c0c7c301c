"""The app's state as plain data: the builds it shows and which one is selected, how a new build is
placed, the log's level, the latest "build all", whether the user changed the queue's limit, whether
it is quitting.

The app holds one `AppState` and gives it to the main screen and its panes (`services.AppServices`),
whose actions read and change it directly; the widgets keep their own data (the builds list its rows
and order, the log pane its lines) and the actions on it. Nothing here knows Textual: a test can
build one by hand.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .build_view import BuildView


@dataclass
class AppState:
    views: dict[int, BuildView] = field(default_factory=dict)  # every build the app shows, by id
    selected: int | None = None  # the selected build's id
    follow_newest: bool = False  # a new build takes the selection only when asked for (or `n`)
    user_placed: bool = False  # the user chose a build (asked for one, moved the cursor)
    log_level_index: int = 0  # into `log_level.LOG_LEVELS`
    dropped: set[int] = field(default_factory=set)  # builds a change on disk started that found the engine current
    due_vitals: set[int] = field(default_factory=set)  # builds with a reading not yet shown
    batch: list[int] = field(default_factory=list)  # the builds of the latest "build all"
    limit_changed: bool = False  # the user changed how many build at once (the title then says it)
    quitting: bool = False

    @property
    def selected_view(self) -> BuildView | None:
        return self.views.get(self.selected) if self.selected is not None else None

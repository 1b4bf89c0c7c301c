"""The app as its action mixins (`build_actions`, `queue_control`, `view_actions`) see it: a Textual
`App` holding the parts `TrtTuiApp` sets up. The mixins keep the app's module small; naming here what
they use of the app lets the type checker hold both sides to it. At run time `ActionHost` is plain
`object`, so mixing it in changes nothing of the app's classes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.app import App

    from ..core.job import BuildJob
    from ..core.scheduler import BuildScheduler
    from ..core.session import Session
    from .build_view import BuildView
    from .config import AppConfig
    from .modes import AppSession
    from .widgets.build_list import BuildList
    from .widgets.log_pane import LogPane
    from .widgets.model_picker import ModelPicker

    class ActionHost(App[int]):
        config: AppConfig
        session: Session
        scheduler: BuildScheduler
        mode: AppSession  # own builds, a served tab's, or a program's: what differs between them
        views: dict[int, BuildView]  # every build the app shows, by id
        selected: int | None  # the selected build's id
        picker: ModelPicker
        builds: BuildList
        log_pane: LogPane

        def submit(self, model: str, force: bool = False, replace: bool = False) -> BuildJob | None:
            """Build `model`; None where it was not submitted (the app said why)."""
            ...
else:
    ActionHost = object

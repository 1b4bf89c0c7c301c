"""The main screen's model picker with the actions on its data, the models: build the highlighted one
(Enter), build it again with `r` or `f` while the picker has the focus (a key acts on the focused
pane's highlighted row), build every model the filter shows (`a`), and the highlighted model's
history (`h`). It reaches the session through the services it is given (`services.AppServices`).
"""

from __future__ import annotations

from textual import on
from textual.widgets import DataTable

from .history_screen import SHOWN, HistoryScreen
from .replace import force_rebuild
from .services import AppServices
from .widgets.model_picker import PickerTable


class ModelList(PickerTable):
    def __init__(self, services: AppServices, **kwargs) -> None:
        super().__init__(services.session.history, **kwargs)  # its models' latest builds are the history's
        self.services = services

    @on(DataTable.RowSelected)
    def _selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key.value is not None:
            self.services.builder.submit(event.row_key.value)

    def build(self, force: bool = False) -> bool:
        """Build the highlighted model (`force`: whatever the engine cache says, asking before a file
        trt-tui did not write is replaced); False where none is highlighted."""
        path = self.highlighted_path()
        if path is None:
            return False
        if force:
            force_rebuild(self, self.services, path)
        else:
            self.services.builder.submit(path)
        return True

    def build_all(self) -> None:
        """Every model the filter shows, as one batch whose progress the builds list's title shows; the
        longest build starts first (`queue_order`) and keeps the selection, so that the running build is
        the one shown and in view (the queued ones below it), not the batch's last."""
        from ..core.execution.queue_order import longest_first_by_history

        paths = longest_first_by_history(self.visible_paths(), self.services.session.history)
        submit, batch = self.services.builder.submit, list[int]()
        for path in paths:
            job = submit(path, select=not batch)
            if job is not None:
                batch.append(job)
        self.services.state.batch = batch

    def show_history(self, model: str | None = None) -> None:
        """The past builds of `model` (the highlighted one unless given), with its duration trend."""
        services = self.services
        history, state = services.session.history, services.state
        model = model or self.highlighted_path()
        if model is None:
            self.notify("No model highlighted", severity="warning")
            return
        if history is None:
            self.notify("The build history is off: there are no past builds to show", severity="warning")
            return
        records = history.builds(model, limit=SHOWN)
        if not records:
            self.notify(f"No build of {model} in the history yet", markup=False)
            return
        recorded = services.session.recorder.recorded if services.session.recorder is not None else {}
        numbers = {history_id: job for job, history_id in recorded.items()}
        reasons = {history_id: reason for job, history_id in recorded.items()
                   if job in state.views and (reason := state.views[job].reason)}
        name = self.display_name(model) if services.mode.has_picker else model
        self.app.push_screen(HistoryScreen(name, records, numbers, reasons))

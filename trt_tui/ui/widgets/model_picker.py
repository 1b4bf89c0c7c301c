"""Every ONNX file under the paths given, with size, inputs and the state of its latest build
(running or done); the filter (`/`) matches the name shown, not the directories above it.
`PickerTable`, the main screen's, reads its models' info itself, on a thread worker, and their
latest builds from the history it is given (before a build of this session says more)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TypedDict, cast

from rich.text import Text
from textual import on, work
from textual.binding import Binding
from textual.events import Resize
from textual.widgets import DataTable
from textual.worker import Worker

from ...core.build.events import State
from ...core.files.units import compact_bytes
from ...core.history.records import History, HistoryError
from ...core.model.modelinfo import ModelInfo, ModelInfoError, read_model_info
from .filter_prompt import KeepsFilter
from .guard import FailureSink
from .messages import LastBuildRead, ModelInfoRead, SampleWritten
from .outside_text import shown
from .palette import PLAIN, Palette, state_text

STATES = frozenset(state.value for state in State)
COLUMNS = ("Model", "Size", "Inputs", "Last build")


MIN_WIDTHS = (8, 4, 6, 10)  # the model's name and its inputs are cut before its size and its last build
INPUTS = 2
CUT_ORDER = (INPUTS, 0)  # the inputs first (the details pane shows them whole), then the name
PADDING = 2  # a DataTable's cell padding, on both sides


def fit_widths(rows: list[list[int]], room: int) -> list[int | None]:
    """Each column's width for cells of these widths in `room` cells: as wide as their widest cell and
    header, then the inputs and the name narrowed (to their minimum) until the table fits; where it
    still does not, the inputs leave (None), and the name takes back what they leave it."""
    natural = [max([len(name), *(row[i] for row in rows)]) for i, name in enumerate(COLUMNS)]
    widths: list[int | None] = list(natural)
    over = sum(natural) + PADDING * len(natural) - room
    for i in CUT_ORDER:
        cut = min(max(0, over), natural[i] - MIN_WIDTHS[i] if natural[i] > MIN_WIDTHS[i] else 0)
        widths[i] = natural[i] - cut
        over -= cut
    if over > 0:
        over -= (widths[INPUTS] or 0) + PADDING
        widths[INPUTS] = None
        widths[0] = min(natural[0], (widths[0] or 0) - min(0, over))
    return widths


def cut(cell: Text, width: int) -> Text:
    """The cell whole where it fits, else cut to `width` ending in "…"."""
    if cell.cell_len <= width:
        return cell
    cell = cell.copy()
    cell.truncate(width, overflow="ellipsis")
    return cell


class ModelEntry(TypedDict):
    """What the picker knows of a model: its info or why it could not be read (neither, until read),
    and the state of its latest build."""

    info: ModelInfo | None
    error: str | None
    state: State | None


class ModelPicker(KeepsFilter, DataTable):
    """Rows keyed by the model's path. `filter_text` hides rows whose shown name (the path under the
    directory it was found in) does not contain it: every model lives under that directory, so
    matching the whole path would let a filter such as `tmp` keep them all."""

    BINDINGS = [Binding("enter", "select_cursor", "Build"),
                Binding("escape", "clear_filter", "Clear filter", show=False)]

    def __init__(self, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.models: dict[str, ModelEntry] = {}  # by path
        self.filter_text = ""
        self.roots: list[Path] = []  # shown paths are relative to the directory they were found under
        self.palette: Palette = PLAIN

    def display_name(self, path: str) -> str:
        p = Path(path)
        for root in self.roots:
            if p.is_relative_to(root):
                return str(p.relative_to(root))
        return str(p)

    def on_mount(self) -> None:
        self._render_rows()

    def set_model(self, path: str, info: ModelInfo | None = None, error: str | None = None) -> None:
        entry = self.models.setdefault(path, ModelEntry(info=None, error=None, state=None))
        entry["info"], entry["error"] = info, error
        self._render_rows()

    def remove_model(self, path: str) -> None:
        if self.models.pop(path, None) is not None:
            self._render_rows()

    def set_last_state(self, path: str, state: State) -> None:
        """`path`: the model as a build names it, which may be another spelling of the picker's
        (a program observed gives its own, absolute or relative to its own directory)."""
        path = self.key_of(path)
        entry = self.models.get(path)
        if entry is None:
            return
        entry["state"] = state
        if path in self._visible():
            self.update_cell(path, "Last build", state_text(state, self.palette))

    def key_of(self, path: str) -> str:
        """The picker's key of the model at `path`: itself, or the key naming the same file."""
        if path in self.models:
            return path
        try:
            resolved = Path(path).resolve()
            return next((known for known in self.models if Path(known).resolve() == resolved), path)
        except OSError:
            return path

    def recolor(self, palette: Palette) -> None:
        self.palette = palette
        self._render_rows()

    def highlighted_entry(self) -> ModelEntry | None:
        """The highlighted model's info and error, as read so far."""
        path = self.highlighted_path()
        return self.models.get(path) if path is not None else None

    def _refilter(self) -> None:
        self._render_rows()

    def _visible(self) -> list[str]:
        needle = self.filter_text.lower()
        return [p for p in sorted(self.models) if needle in self.display_name(p).lower()]

    def _render_rows(self) -> None:
        keep = self.highlighted_path()
        rows = []
        for path in self._visible():
            entry = self.models[path]
            info, error = entry["info"], entry["error"]
            size = compact_bytes(info.size if info else (Path(path).stat().st_size if Path(path).exists() else None))
            inputs = shown(error, self.palette["failed"]) if error else shown(info.inputs_text() if info else "…")
            state = entry["state"]
            last = state_text(state, self.palette) if state else Text("-", style=self.palette["muted"])
            rows.append((path, [shown(self.display_name(path)), Text(size), inputs, last]))  # a str cell reads markup
        widths = fit_widths([[cell.cell_len for cell in cells] for _, cells in rows],
                            self.size.width - self.styles.scrollbar_size_vertical if self.size.width else 10_000)
        self.clear(columns=True)  # a column keeps the width of its widest cell so far: narrower ones too
        for name, width in zip(COLUMNS, widths):
            if width is not None:
                self.add_column(name, key=name)
        for path, cells in rows:
            self.add_row(*(cut(cell, width) for cell, width in zip(cells, widths) if width is not None), key=path)
        if keep is not None and keep in self._visible():
            self.move_cursor(row=self._visible().index(keep))

    def on_resize(self, event: Resize) -> None:
        self._render_rows()

    def highlighted_path(self) -> str | None:
        if self.row_count == 0:
            return None
        row_key, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        return row_key.value

    def visible_paths(self) -> list[str]:
        return self._visible()


class PickerTable(ModelPicker):
    """The main screen's model picker: its keys are the app's commands (`/` filters). It reads its
    models' size, inputs and shapes itself, on a thread worker (`ModelInfoRead` then bubbles on to the
    app, which shows the highlighted model's details), and their latest builds from `history` first
    (a lookup each, where reading a large model takes seconds)."""

    def __init__(self, history: History | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.history = history

    @work(thread=True, group="model-info", exit_on_error=False)
    def read_infos(self, paths: list[str]) -> None:
        if self.history is not None:
            self._read_last_builds(self.history, paths)
        for path in paths:
            try:
                info, error = read_model_info(Path(path)), None
            except ModelInfoError as exc:
                info, error = None, str(exc)
            self.post_message(ModelInfoRead(path, info, error))

    @on(ModelInfoRead)
    def _info_read(self, message: ModelInfoRead) -> None:
        if message.path in self.models:
            self.set_model(message.path, message.info, message.error)

    def _read_last_builds(self, history: History, paths: list[str]) -> None:
        """A history that cannot be read leaves the column as it is; the models' info is read all the same."""
        try:
            for path in paths:
                latest = history.builds(path, limit=1)
                if latest and latest[0].state in STATES:
                    self.post_message(LastBuildRead(path, State(latest[0].state)))
        except (HistoryError, sqlite3.Error):
            pass

    @work(thread=True, group="samples", exit_on_error=False)
    def write_samples(self, directory: Path) -> None:
        """`--demo`: the sample models written into `directory` (empty) one by one, quickest to
        build first, each listed as it lands; meanwhile the app takes keys as ever."""
        from ...core.model.samples import SAMPLES, write_samples  # numpy and onnx: only for the demo

        names = list(SAMPLES)  # quickest to build first
        for left, name in enumerate(names, 1):
            path = write_samples(directory, [name])[0]
            self.post_message(SampleWritten(str(path), len(names) - left))

    @on(SampleWritten)
    def _sample_written(self, message: SampleWritten) -> None:
        """Listed, its info read; the first (the quickest to build) highlighted, and the highlight
        then stays where it is (`_render_rows`) as the others come. The message goes on to the app,
        which says how many are still to come."""
        first = not self.models
        self.set_model(message.path)
        self.read_infos([message.path])
        if first:
            self.move_cursor(row=0)

    @on(LastBuildRead)
    def _last_build_read(self, message: LastBuildRead) -> None:
        entry = self.models.get(message.path)
        if entry is not None and entry["state"] is None:  # a build of this session says more
            self.set_last_state(message.path, message.state)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        cast(FailureSink, self.app).on_worker_state_changed(event)  # one handler for every worker's failure

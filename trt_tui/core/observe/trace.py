"""A build's phases as Chrome trace-event JSON, for Perfetto (ui.perfetto.dev) or chrome://tracing.

Each phase becomes one complete event (`"ph": "X"`) on its build's track: children nest inside their
parents because their spans do, so the viewer draws the phase tree as a flame chart with TensorRT's
own timings. Builds that ran at once get one track (tid) each and show as parallel lanes. State
changes (parsing, writing, the final state) are instant events (`"ph": "i"`) on the same track.
Vitals become counter events (`"ph": "C"`): one "CPU %" and one "RSS MiB" track per build, so the
viewer shows what the build's process was doing during a step that reported nothing.

Times in the file are microseconds. They are computed from whole nanoseconds so that a child's span
never pokes out of its parent's through rounding (sub-microsecond phases are common in small builds).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterable
from pathlib import Path

from ..build.events import Finished, State, StateEvent, Vitals
from ..build.phases import PhaseTree
from ..build.tracker import BuildTracker, What
from ..files.atomic import atomic_file

__all__ = ["TRACE_MARK", "TraceWriter", "trace_document", "trace_events", "trace_written_by_us", "write_trace"]

# First in every trace trt-tui writes (`trace_document`), in Chrome's place for a trace's own
# metadata: a file that starts with these bytes is a trace of ours, found without parsing the rest.
TRACE_MARK = {"writer": "trt-tui"}
_PREFIX = b'{"otherData":{"writer":"trt-tui"}'

_READINGS = (What.VITALS, What.VERDICT)


def _state_args(change: StateEvent) -> dict:
    """What a state says beyond its name: the error, the detail, the engine's size."""
    args: dict[str, object] = {"error": change.error, "detail": change.detail}
    if isinstance(change, Finished):
        args["engine_bytes"] = change.result.engine_bytes
    return {key: value for key, value in args.items() if value is not None}


def _ns(seconds: float) -> int:
    return round(seconds * 1e9)


def _us(ns: int) -> float:
    return ns / 1000


def trace_events(
    tree: PhaseTree,
    *,
    pid: int,
    tid: int,
    name: str,
    t0: float = 0.0,
    process_name: str | None = None,
    states: Iterable[StateEvent] = (),
    vitals: Iterable[Vitals] = (),
) -> list[dict]:
    """Metadata naming the track, then one "X" event per phase of `tree` in depth-first start order.

    `t0` (seconds) is added to every time, to place this build on a timeline shared with others.
    A phase still running (or left running by a cancel or a crash) ends at `tree.last_t`, the last
    time the build reported anything, and has `args.unfinished`. `states` adds one instant event per
    state change after QUEUED, with the error or detail in its args. `vitals` add counter tracks
    named after the track ("#1 mnist.onnx CPU %", "... RSS MiB").
    """
    events: list[dict] = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": tid, "args": {"name": process_name or name}},
        {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}},
        {"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": tid}},
    ]
    base = _ns(t0)
    last = _ns(tree.last_t)
    spans: dict[int, tuple[int, int]] = {}  # phase id -> (start, end) in ns since the build's start
    for _, phase in tree.walk():
        start = _ns(phase.started)
        end = _ns(phase.finished) if phase.finished is not None else max(last, start)
        parent = spans.get(phase.parent) if phase.parent is not None else None
        if parent is not None:  # nest strictly, whatever the recorded times say
            start = min(max(start, parent[0]), parent[1])
            end = min(max(end, start), parent[1])
        end = max(end, start)
        spans[phase.id] = (start, end)
        # A phase the tree closed because its build was cancelled or crashed never finished.
        unfinished = phase.finished is None or phase.unfinished
        args = {"steps": f"{phase.steps_done}/{phase.num_steps}", "finished_early": phase.finished_early and not unfinished}
        if unfinished:
            args["unfinished"] = True
        events.append({
            "name": phase.name, "cat": "phase", "ph": "X", "pid": pid, "tid": tid,
            "ts": _us(max(0, base + start)), "dur": _us(end - start), "args": args,
        })
    for change in states:
        if change.state is State.QUEUED:
            continue
        args = _state_args(change)
        events.append({
            "name": change.state.value, "cat": "state", "ph": "i", "s": "t", "pid": pid, "tid": tid,
            "ts": _us(max(0, base + _ns(max(0.0, change.t)))), "args": args,
        })
    for sample in vitals:
        ts = _us(max(0, base + _ns(max(0.0, sample.t))))
        events.append({"name": f"{name} CPU %", "cat": "vitals", "ph": "C", "pid": pid, "tid": tid, "ts": ts,
                       "args": {"cpu": round(sample.cpu_percent, 1)}})
        events.append({"name": f"{name} RSS MiB", "cat": "vitals", "ph": "C", "pid": pid, "tid": tid, "ts": ts,
                       "args": {"rss": round(sample.rss_bytes / 2**20, 1)}})
    return events


def trace_document(events: list[dict]) -> dict:
    """The mark of a trace trt-tui wrote comes first (`TRACE_MARK`): a later run may replace this
    file, and no other, without --force (`core.history.output_paths`)."""
    return {"otherData": dict(TRACE_MARK), "traceEvents": events, "displayTimeUnit": "ms"}


def trace_written_by_us(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(_PREFIX)) == _PREFIX
    except OSError:
        return False


def write_trace(path: Path, events: list[dict]) -> None:
    """Atomically (see `atomic`), so a viewer never reads half a file."""
    with atomic_file(path, "w", encoding="utf-8") as f:
        json.dump(trace_document(events), f, separators=(",", ":"))


class _Track:
    """One build on the trace: its tracker, and the state changes and readings the trace shows."""

    __slots__ = ("build", "tid", "states", "vitals")

    def __init__(self, build: BuildTracker, tid: int) -> None:
        self.build = build
        self.tid = tid
        self.states: list[StateEvent] = []
        self.vitals: list[Vitals] = []


class TraceWriter:
    """A Scheduler subscriber: folds each build's events (`tracker`), and writes the trace of every
    build seen so far to `path` as each build ends and on `close()`.

    Called on the pump thread it never raises (the first error goes to stderr); `close()` raises
    `OSError` naming the file if the trace cannot be written.
    """

    def __init__(self, path: Path, *, process_name: str = "trt-tui builds", pid: int | None = None) -> None:
        self.path = Path(path)
        self.process_name = process_name
        self.pid = os.getpid() if pid is None else pid
        self.errors = 0
        self._tracks: dict[int, _Track] = {}
        self._lock = threading.Lock()

    def __call__(self, job: int, events: list) -> None:
        try:
            with self._lock:
                track = self._tracks.get(job)
                if track is None:
                    track = self._tracks[job] = _Track(BuildTracker(job), job)
                ended = False
                for event in events:
                    change = track.build.apply(event)
                    if change.state is not None:
                        track.states.append(change.state)
                        ended = ended or change.ended
                    elif change.what in _READINGS and track.build.last_vitals is not None:
                        track.vitals.append(track.build.last_vitals)
                if ended:
                    self._write()
        except Exception as exc:
            self.errors += 1
            if self.errors == 1:
                try:
                    print(f"trt-tui: trace {self.path}: {type(exc).__name__}: {exc}", file=sys.stderr)
                except Exception:
                    pass

    def events(self) -> list[dict]:
        """Every build's events, on one timeline that starts when the first build did."""
        tracks = sorted(self._tracks.values(), key=lambda t: t.tid)
        if not tracks:
            return []
        origins = {track.tid: track.build.origin or 0.0 for track in tracks}
        zero = min(origins.values())
        events: list[dict] = []
        for track in tracks:
            build = track.build
            events.extend(trace_events(
                build.tree, pid=self.pid, tid=track.tid, name=f"#{build.job} {build.name}",
                t0=origins[track.tid] - zero, process_name=self.process_name, states=track.states,
                vitals=track.vitals,
            ))
        return events

    def _write(self) -> None:
        write_trace(self.path, self.events())

    def close(self) -> None:
        with self._lock:
            try:
                self._write()
            except OSError as exc:
                raise OSError(f"{self.path}: cannot write the trace: {exc.strerror or exc}") from None

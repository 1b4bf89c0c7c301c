"""The typed build events: one event per fact, each with its payload, turned into version 1's flat
`state` object only at the edge (`wire`) and told apart again when read back; they pickle (the
process and Ray executors send them); the tracker says what each changed."""

from __future__ import annotations

import json
import pickle
from dataclasses import replace
from pathlib import Path

from trt_tui.core.build.driver import BuildSpec
from trt_tui.core.build.events import (
    BuildResult,
    CacheReport,
    Finished,
    Forecast,
    Log,
    PhaseStart,
    Queued,
    Severity,
    Stage,
    Started,
    State,
    Vitals,
    Waiting,
)
from trt_tui.core.build.protocol import encode
from trt_tui.core.build.tracker import BuildTracker, What
from trt_tui.core.build.wire import event_from_dict, event_to_dict

SPEC = BuildSpec(Path("/m/mnist.onnx"), Path("/m/mnist.engine")).summary()
FACTS = [
    Queued(1, 0.0, SPEC, Forecast(6 << 30, "fitted", 0.18, 12 << 20), at=100.0),
    Waiting(1, 0.0, "waiting: needs ~6.0 GiB, 3.2 GiB free"),
    Started(1, 0.01, State.PARSING, reason="no engine yet", at=101.0),
    Stage(1, 0.5, State.BUILDING, backend="tensorrt-rtx 1.7.1"),
    Finished(1, 2.5, BuildResult(State.SUCCEEDED, engine_bytes=1234, peak_rss_bytes=300 << 20,
                                 backend="tensorrt-rtx 1.7.1", engine_sha256="ab" * 32, key={"model_hash": "h"},
                                 fingerprint={"model": {"hash": "h"}}), at=103.5),
]


def test_every_state_fact_is_the_v1_state_object_it_always_was() -> None:
    """A v1 reader (the C++ reporter, a script) sees one flat `state` object with every field, as before."""
    queued, waiting, started, stage, finished = (event_to_dict(e) for e in FACTS)
    fields = ["event", "job", "t", "state", "error", "detail", "engine_bytes", "reason", "peak_rss_bytes", "backend",
              "forecast", "spec", "at", "engine_sha256", "heap_bytes", "key", "cache"]
    assert all(list(d) == fields for d in (queued, waiting, started, stage, finished))
    assert queued["forecast"] == {"peak_bytes": 6 << 30, "basis": "fitted", "spread": 0.18, "text": "~6.0 GiB ±18%",
                                  "model_bytes": 12 << 20}
    assert queued["spec"]["model"] == "/m/mnist.onnx" and queued["at"] == 100.0 and queued["state"] == "queued"
    assert (waiting["state"], waiting["detail"]) == ("queued", "waiting: needs ~6.0 GiB, 3.2 GiB free")
    assert (started["state"], started["reason"], started["at"]) == ("parsing", "no engine yet", 101.0)
    assert (stage["state"], stage["backend"], stage["at"]) == ("building", "tensorrt-rtx 1.7.1", None)
    assert finished["engine_bytes"] == 1234 and finished["key"] == {"model_hash": "h"}
    assert "fingerprint" not in finished  # in process only
    assert finished["cache"] is None  # no shared cache was asked
    json.loads(encode(finished))


def test_a_fetched_end_says_what_the_shared_cache_did_and_comes_back_as_itself() -> None:
    """A build whose engine came from the shared cache ends SKIPPED, its result's `cache` a hit."""
    report = CacheReport("hit", "cd" * 32, "s3://engines/team", bytes_fetched=1234, saved_seconds=41.5)
    fetched = Finished(2, 0.0, BuildResult(State.SKIPPED, detail="fetched from s3://engines/team", engine_bytes=1234,
                                           cache=report), reason="fetched", at=104.0)
    data = event_to_dict(fetched)
    assert data["cache"] == {"result": "hit", "key": "cd" * 32, "url": "s3://engines/team", "bytes_fetched": 1234,
                             "bytes_stored": 0, "saved_seconds": 41.5}
    again = event_from_dict(json.loads(json.dumps(data)))
    assert again == fetched and isinstance(again, Finished) and again.result.fetched
    missed = replace(fetched, result=replace(fetched.result, cache=replace(report, result="miss")))
    assert not missed.result.fetched and not FACTS[-1].result.fetched


def test_each_fact_comes_back_as_itself_and_pickles() -> None:
    for event in FACTS:
        again = event_from_dict(json.loads(json.dumps(event_to_dict(event))))
        expected = event
        if isinstance(event, Finished):  # the fingerprint never leaves the process
            expected = replace(event, result=replace(event.result, fingerprint=None))
        assert again == expected, type(event).__name__
        assert pickle.loads(pickle.dumps(event)) == event


def test_the_tracker_says_what_each_event_changed() -> None:
    build = BuildTracker(1)
    whats = [build.apply(e).what for e in FACTS[:4]]
    assert whats == [What.QUEUED, What.WAITING, What.STARTED, What.STAGE]
    assert build.forecast is not None and build.forecast.peak_bytes == 6 << 30 and build.spec == SPEC
    change = build.apply(PhaseStart(1, 0.6, 0, "Building engine", None, 3))
    assert change.what is What.PHASE_STARTED and change.phase is not None and change.phase.name == "Building engine"
    line = Log(1, 0.7, Severity.WARNING, "careful")
    assert build.apply(line).log == line
    reading = dict(pid=9, cpu_percent=90.0, rss_bytes=1, peak_rss_bytes=1, threads=2)
    assert build.apply(Vitals(1, 1.0, verdict="working", **reading)).what is What.VITALS
    assert build.apply(Vitals(1, 2.0, verdict="stalled", **reading)).what is What.VERDICT
    end = build.apply(FACTS[4])
    assert end.ended and build.result is not None and build.result.engine_bytes == 1234
    assert build.reason == "no engine yet" and build.backend_name_version == ("tensorrt-rtx", "1.7.1")
    assert build.started_at == 101.0 - 0.01 and build.duration == 2.5
    assert build.apply(Waiting(1, 3.0, "late")).what is What.NOTHING  # nothing comes after the end

"""The parts of the CI reports that need no build: tolerances, the baseline comparison, where two
engines first differ, and text a build reported that would break a report's format."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from trt_tui.core.build.events import State
from trt_tui.report.baseline import BaselineError, compare, parse_tolerances
from trt_tui.report.junit import junit_document
from trt_tui.report.repro import first_difference
from trt_tui.report.results import ModelResult
from trt_tui.report.step_summary import summary_table


def test_tolerances_take_one_figure_for_all_and_figures_of_their_own() -> None:
    assert parse_tolerances(None) == {"time": 50.0, "peak": 20.0, "size": 1.0}
    assert parse_tolerances("10%") == {"time": 10.0, "peak": 10.0, "size": 10.0}
    assert parse_tolerances("10%,size=0%") == {"time": 10.0, "peak": 10.0, "size": 0.0}
    assert parse_tolerances("size=0,time=5%") == {"time": 5.0, "peak": 20.0, "size": 0.0}


@pytest.mark.parametrize(("text", "says"), [("speed=5%", "unknown figure 'speed'"),
                                            ("time=fast", "'fast' is not a percentage"),
                                            ("size=-1%", "must be a percentage of 0 or more")])
def test_a_tolerance_that_means_nothing_is_refused_by_name(text, says) -> None:
    with pytest.raises(BaselineError, match=says):
        parse_tolerances(text)


def _built(model: str, seconds: float, peak: int, size: int) -> ModelResult:
    return ModelResult(model, State.SUCCEEDED, seconds=seconds, peak_bytes=peak, engine_bytes=size)


def test_only_growth_beyond_the_tolerance_trips_the_gate() -> None:
    baseline = {"a.onnx": {"seconds": 10.0, "peak_bytes": 1000.0, "engine_bytes": 1000.0},
                "b.onnx": {"seconds": 10.0, "peak_bytes": 1000.0, "engine_bytes": 1000.0}}
    tolerances = parse_tolerances("time=50%,peak=20%,size=1%")
    results = [_built("a.onnx", 15.0, 1200, 1010),  # each at its limit: holds
               _built("b.onnx", 2.0, 500, 1011),  # faster, smaller in memory; the engine grew past 1%
               _built("c.onnx", 99.0, 99, 99),  # not in the baseline
               ModelResult("a.onnx", State.SKIPPED, engine_bytes=5000)]  # not built: nothing measured
    assert compare(baseline, results, tolerances) == ["b.onnx: engine size 1,000 bytes → 1,011 bytes (+1.1%, tolerance 1%)"]


def test_build_time_trips_only_once_it_grew_by_more_than_a_second() -> None:
    """A build of a fraction of a second doubles its time on a busy runner: no regression worth a red build."""
    baseline = {"a.onnx": {"seconds": 0.3}, "b.onnx": {"seconds": 2.0}}
    results = [_built("a.onnx", 1.2, 1, 1), _built("b.onnx", 3.5, 1, 1)]
    assert compare(baseline, results, parse_tolerances("time=10%")) == [
        "b.onnx: build time 2.0s → 3.5s (+75.0%, tolerance 10%)"]


def test_where_two_files_first_differ(tmp_path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    data = bytes(range(256)) * 10000  # more than one chunk
    a.write_bytes(data)
    b.write_bytes(data)
    assert first_difference(a, b) is None
    changed = bytearray(data)
    changed[1_500_000] ^= 1
    b.write_bytes(bytes(changed))
    assert first_difference(a, b) == 1_500_000
    b.write_bytes(data[:1234])
    assert first_difference(a, b) == 1234  # one is the other's start: where the shorter ends


def test_text_a_build_reported_cannot_break_the_report_or_the_table() -> None:
    """An error with a control character (XML 1.0 cannot hold one) and a model with a `|` in its name."""
    results = [ModelResult("x|y.onnx", State.FAILED, seconds=1.0, error="bad \x1b[31mcolour\x00 here")]
    root = ET.fromstring(junit_document(results, 1.0))
    assert root.find("testsuite/testcase/failure").get("message") == "bad \ufffd[31mcolour\ufffd here"
    row = next(line for line in summary_table(results, 1.0).splitlines() if line.startswith("| x"))
    assert row.count(" | ") == 4 and row.startswith("| x\\|y.onnx | failed: bad")

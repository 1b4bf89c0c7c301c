"""`trt-tui build --junit FILE`: the batch as JUnit XML, the format GitHub's test reporters, GitLab's
`artifacts:reports:junit` and Jenkins' `junit` step read as is.

The document keeps to the strictest schema those readers share, Jenkins' "JUnit 10" (xunit-plugin's
`junit-10.xsd`, in `tests/data`): a test case there has no properties, so each model is a test suite of
its own, its figures (build time, peak memory, engine size) the suite's properties, holding the one test
case. A failed build's case has a `failure` with the error, an unreadable model's an `error`, a skipped
(up to date) or cancelled one's a `skipped`. Text a build reported (a file name, TensorRT's error) is
kept to the characters XML 1.0 can hold: a control character would make the whole file unreadable.

The file starts with `MARK`: a later run replaces a report of ours, and no other file without --force.
"""

from __future__ import annotations

import re
import socket
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from ..core.build.events import State
from ..core.files.atomic import atomic_file
from .results import ModelResult

__all__ = ["MARK", "junit_document", "junit_written_by_us", "write_junit"]

MARK = '<?xml version="1.0" encoding="UTF-8"?>\n<!-- written by trt-tui build -->\n'
CLASSNAME = "trt-tui.build"
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _text(value: str) -> str:
    return _NOT_XML.sub("\ufffd", value)


def _seconds(value: float | None) -> str:
    return f"{value or 0.0:.3f}"


def _case(suite: ET.Element, result: ModelResult) -> None:
    case = ET.SubElement(suite, "testcase", name=_text(result.name), classname=CLASSNAME,
                         time=_seconds(result.seconds))
    message = _text(result.error or result.detail or result.state_text)
    if result.state is None:
        ET.SubElement(case, "error", type="unreadable", message=message).text = message
    elif result.state is State.FAILED:
        ET.SubElement(case, "failure", type="build failed", message=message).text = message
    elif result.state in (State.SKIPPED, State.CANCELLED):
        ET.SubElement(case, "skipped", message=message)


def _suite(parent: ET.Element, result: ModelResult, stamp: str, host: str) -> dict[str, int]:
    counts = {"tests": 1, "failures": int(result.state is State.FAILED), "errors": int(result.state is None),
              "skipped": int(result.state in (State.SKIPPED, State.CANCELLED))}
    attributes = {"name": _text(result.model), **{k: str(v) for k, v in counts.items()},
                  "time": _seconds(result.seconds), "timestamp": stamp, "hostname": _text(host)}
    suite = ET.SubElement(parent, "testsuite", attributes)
    properties = ET.SubElement(suite, "properties")
    figures = {"state": result.state_text, "build_time_s": result.seconds, "peak_rss_bytes": result.peak_bytes,
               "engine_bytes": result.engine_bytes}
    for name, value in figures.items():
        if value is not None:
            text = f"{value:.3f}" if isinstance(value, float) else str(value)
            ET.SubElement(properties, "property", name=name, value=text)
    _case(suite, result)
    return counts


def junit_document(results: list[ModelResult], seconds: float, *, now: float | None = None) -> str:
    """The report of a batch that took `seconds` of wall time and ended at `now` (unix time)."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() if now is None else now))
    host = socket.gethostname()
    root = ET.Element("testsuites", name="trt-tui build", time=_seconds(seconds))
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for result in results:
        counts = _suite(root, result, stamp, host)
        for key in totals:
            totals[key] += counts[key]
    root.attrib.update({k: str(v) for k, v in totals.items()})
    ET.indent(root)
    return MARK + ET.tostring(root, encoding="unicode") + "\n"


def junit_written_by_us(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(MARK)) == MARK.encode()
    except OSError:
        return False


def write_junit(path: Path, results: list[ModelResult], seconds: float) -> None:
    """Atomically (`atomic`): a CI step that reads it never finds half a report."""
    with atomic_file(path, "w", encoding="utf-8") as f:
        f.write(junit_document(results, seconds))

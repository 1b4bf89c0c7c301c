"""What `trt-tui build` tells a CI system: the JUnit report, the GitHub step summary, the baseline gate
and the reproducibility check, each through the real command line as its own process, with real
TensorRT-RTX builds of the MNIST sample (and a scripted builder whose engines differ, for a mismatch).

The JUnit report is checked against Jenkins' "JUnit 10" schema (tests/data/junit-10.xsd, the strictest
of what GitHub's reporters, GitLab and Jenkins read) without a schema library (none is allowed here):
`schema_problems` reads the XSD with xml.etree and checks every element of the report against it:
the element is declared, each attribute declared, required attributes present, each child one its
element refers to, text only where the element is mixed or a string, and the SUREFIRE_TIME pattern for
attributes of that type. That covers every rule of this schema but the counts of a `sequence` (its
content models are choices and unbounded sequences, so order never matters).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from support.commands import run_command
from support.nondeterministic_build import PREFIX, SIZE, nondeterministic_build

from trt_tui.core.build.driver import BuildOptions, spec_for
from trt_tui.core.build.tracker import Trackers
from trt_tui.core.execution.executors import ProcessExecutor
from trt_tui.core.execution.scheduler import Scheduler
from trt_tui.report.repro import repro_outputs, verdict

XSD = Path(__file__).parent.parent / "data" / "junit-10.xsd"
XS = "{http://www.w3.org/2001/XMLSchema}"
EXIT_GATE = 3  # documented in the README's "In CI" and `trt-tui build --help`


def _schema(path: Path) -> tuple[dict[str, dict], dict[str, str]]:
    """Each declared element: its attributes (name -> (type, required)), the elements it may hold, and
    whether it may hold text; and each simple type's pattern."""
    root = ET.parse(path).getroot()
    patterns = {t.get("name"): t.find(f".//{XS}pattern").get("value") for t in root.findall(f"{XS}simpleType")}
    named_types = {t.get("name"): t for t in root.findall(f"{XS}complexType")}
    elements = {}
    for element in root.findall(f"{XS}element"):
        complex_type = element.find(f"{XS}complexType")
        if complex_type is None and element.get("type") in named_types:
            complex_type = named_types[element.get("type")]
        if complex_type is None:  # a simple type (xs:string): text, nothing else
            elements[element.get("name")] = {"attributes": {}, "children": set(), "text": True}
            continue
        attributes = {a.get("name"): (a.get("type"), a.get("use") == "required")
                      for a in complex_type.findall(f"{XS}attribute")}
        children = {e.get("ref") or e.get("name") for e in complex_type.iter(f"{XS}element")}
        elements[element.get("name")] = {"attributes": attributes, "children": children,
                                         "text": complex_type.get("mixed") == "true"}
    return elements, patterns


def schema_problems(document: str, path: Path = XSD) -> list[str]:
    elements, patterns = _schema(path)
    problems: list[str] = []

    def check(node: ET.Element, where: str) -> None:
        rule = elements.get(node.tag)
        if rule is None:
            problems.append(f"{where}: element {node.tag} is not in the schema")
            return
        for name, value in node.attrib.items():
            if name not in rule["attributes"]:
                problems.append(f"{where}: attribute {name} is not allowed")
            elif (kind := rule["attributes"][name][0]) in patterns and not re.fullmatch(patterns[kind], value):
                problems.append(f"{where}: {name}={value!r} does not match {kind}")
        for name, (_, required) in rule["attributes"].items():
            if required and name not in node.attrib:
                problems.append(f"{where}: required attribute {name} is missing")
        if not rule["text"] and (node.text or "").strip():
            problems.append(f"{where}: text is not allowed")
        for child in node:
            if child.tag not in rule["children"]:
                problems.append(f"{where}: {child.tag} is not allowed in {node.tag}")
            check(child, f"{where}/{child.tag}")

    root = ET.fromstring(document)
    check(root, root.tag)
    return problems


def test_the_schema_check_finds_what_the_schema_forbids() -> None:
    """Properties inside a test case (what many reporters write, and Jenkins' schema refuses: the reason
    each model is a suite of its own), an unknown attribute, a time with a unit, a missing name."""
    bad = ('<testsuites><testsuite name="m" tests="1" failures="0" errors="0" time="1.5s" colour="red">'
           '<testcase><properties><property name="a" value="1"/></properties></testcase></testsuite></testsuites>')
    problems = schema_problems(bad)
    assert any("time='1.5s' does not match SUREFIRE_TIME" in p for p in problems), problems
    assert any("attribute colour is not allowed" in p for p in problems), problems
    assert any("properties is not allowed in testcase" in p for p in problems), problems
    assert any("testcase: required attribute name is missing" in p for p in problems), problems


def _build(trt_tui_command, cli_env, *args, env: dict | None = None):
    return run_command(trt_tui_command, {**cli_env, **(env or {})}, "build", *args, timeout=240)


def _properties(suite: ET.Element) -> dict[str, str]:
    return {p.get("name"): p.get("value") for p in suite.find("properties")}


@pytest.fixture
def models(tmp_path: Path, sample_dir: Path) -> tuple[Path, Path]:
    """MNIST, and a copy of it cut short: one that builds and one whose build fails (it parses no ONNX)."""
    mnist = tmp_path / "mnist.onnx"
    data = (sample_dir / "mnist.onnx").read_bytes()
    mnist.write_bytes(data)
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(data[: len(data) // 3])
    return mnist, broken


def test_the_junit_report_holds_to_the_schema_and_says_what_each_build_did(
        trt_tui_command, cli_env, models, tmp_path) -> None:
    mnist, broken = models
    out, report, summary = tmp_path / "out", tmp_path / "report.xml", tmp_path / "summary.md"
    out.mkdir()
    summary.write_text("an earlier step's summary\n")
    result = _build(trt_tui_command, cli_env, mnist, broken, "-o", out, "--junit", report,
                    env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert result.returncode == 1, result.stderr  # a build failed: the report does not change that

    document = report.read_text()
    assert schema_problems(document) == []
    root = ET.fromstring(document)
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("2", "1", "0")
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {str(mnist), str(broken)}
    built = suites[str(mnist)]
    case = built.find("testcase")
    assert case.get("name") == "mnist.onnx" and list(case) == []  # passed
    figures = _properties(built)
    assert figures["state"] == "succeeded"
    assert int(figures["engine_bytes"]) == (out / "mnist.engine").stat().st_size
    assert int(figures["peak_rss_bytes"]) > 50 << 20  # TensorRT-RTX alone takes more than that
    assert float(figures["build_time_s"]) == float(case.get("time")) > 0
    failure = suites[str(broken)].find("testcase/failure")
    assert failure is not None and "cannot parse ONNX" in failure.get("message")
    assert failure.get("message") in result.stderr  # the error the log gave

    table = summary.read_text()
    assert table.startswith("an earlier step's summary\n")  # appended, as GitHub asks
    rows = [line for line in table.splitlines() if line.startswith(f"| {tmp_path}")]
    assert len(rows) == 2
    assert rows[0].startswith(f"| {mnist} | succeeded |") and "KiB |" in rows[0]
    assert rows[1].startswith(f"| {broken} | failed: ") and "cannot parse ONNX" in rows[1]

    # Again: the engine is up to date, its case skipped; the report is replaced (it is ours).
    again = _build(trt_tui_command, cli_env, mnist, "-o", out / "mnist.engine", "--junit", report)
    assert again.returncode == 0, again.stderr
    document = report.read_text()
    assert schema_problems(document) == []
    root = ET.fromstring(document)
    skipped = root.find("testsuite/testcase/skipped")
    assert [s.get("name") for s in root.findall("testsuite")] == [str(mnist)]
    assert skipped is not None and "up to date" in skipped.get("message")
    assert root.find("testsuite").get("skipped") == "1"


def test_a_file_trt_tui_did_not_write_is_not_replaced_by_a_report(trt_tui_command, cli_env, models,
                                                                  tmp_path) -> None:
    mnist, _ = models
    for option in ("--junit", "--save-baseline"):
        theirs = tmp_path / f"theirs{option}"
        theirs.write_text("someone's notes\n")
        result = _build(trt_tui_command, cli_env, mnist, "-o", tmp_path / "mnist.engine", option, theirs)
        assert result.returncode == 2
        assert result.stderr.strip() == (f"trt-tui: {option} {theirs}: exists and is not"
                                         f" {'a JUnit report' if option == '--junit' else 'a baseline'}"
                                         " trt-tui wrote; use --force to replace it")
        assert theirs.read_text() == "someone's notes\n"
        assert not (tmp_path / "mnist.engine").exists()  # refused before any build


def test_the_baseline_gate_trips_on_a_grown_engine_and_holds_on_the_same_one(
        trt_tui_command, cli_env, models, tmp_path) -> None:
    mnist, _ = models
    engine, baseline = tmp_path / "mnist.engine", tmp_path / "baseline.json"
    saved = _build(trt_tui_command, cli_env, mnist, "-o", engine, "--save-baseline", baseline)
    assert saved.returncode == 0, saved.stderr
    size = engine.stat().st_size
    figures = json.loads(baseline.read_text())["models"][str(mnist)]
    assert figures["engine_bytes"] == size and figures["seconds"] > 0 and figures["peak_bytes"] > 0

    # The same engine again (TensorRT-RTX builds the same bytes): within every tolerance. Build time
    # on this shared machine varies too much for a figure, so the time's is wide here.
    held = _build(trt_tui_command, cli_env, mnist, "-o", engine, "--force", "--baseline", baseline,
                  "--tolerance", "time=1000%,peak=50%,size=0%")
    assert held.returncode == 0, held.stderr
    assert "gate" not in held.stderr

    # A baseline whose engine was smaller by more than 1%: the engine grew, the gate trips.
    smaller = size - size // 50
    document = json.loads(baseline.read_text())
    document["models"][str(mnist)]["engine_bytes"] = smaller
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(document, indent=1))
    tripped = _build(trt_tui_command, cli_env, mnist, "-o", engine, "--force", "--baseline", edited,
                     "--tolerance", "time=1000%,peak=50%,size=1%")
    assert tripped.returncode == EXIT_GATE, tripped.stderr
    gates = [line for line in tripped.stderr.splitlines() if line.startswith("trt-tui: gate: ")]
    assert gates == [f"trt-tui: gate: {mnist}: engine size {smaller:,} bytes → {size:,} bytes"
                     f" (+{(size - smaller) / smaller * 100:.1f}%, tolerance 1%)"]
    assert engine.stat().st_size == size  # the build itself stands


def test_repro_3_finds_mnist_reproducible_and_leaves_the_users_engine_alone(
        trt_tui_command, cli_env, models, tmp_path) -> None:
    mnist, _ = models
    out, temporary = tmp_path / "out", tmp_path / "tmp"
    out.mkdir()
    temporary.mkdir()
    result = _build(trt_tui_command, cli_env, mnist, "-o", out / "mnist.engine", "--repro", "3",
                    "--require-reproducible", env={"TMPDIR": str(temporary)})
    assert result.returncode == 0, result.stderr
    size = (out / "mnist.engine").stat().st_size
    lines = [line for line in result.stdout.splitlines() if line.startswith("trt-tui: repro: ")]
    assert lines[-1].startswith(f"trt-tui: repro: {mnist}: reproducible: 3 builds in separate processes")
    assert lines[-1].endswith(f", {size:,} bytes")
    assert sorted(p.name for p in out.iterdir()) == ["mnist.engine", "mnist.engine.build.json"]
    assert list(temporary.iterdir()) == []  # the copies are gone


def test_a_builder_whose_engines_differ_is_reported_with_where_they_differ(tmp_path) -> None:
    model = tmp_path / "scripted.onnx"
    model.write_bytes(b"not parsed")
    executor = ProcessExecutor(vitals=None, warm=False)
    executor.build = nondeterministic_build  # sent to each child by reference
    scheduler = Scheduler(max_jobs=2, executor=executor)
    trackers = Trackers()
    scheduler.subscribe(trackers.fold)
    try:
        directory = tmp_path / "copies"
        directory.mkdir()
        outputs = repro_outputs(model, 3, directory)
        jobs = [scheduler.submit(spec_for(model, BuildOptions(), output=o, force=True)).id for o in outputs]
        assert scheduler.wait(60)
    finally:
        scheduler.shutdown(timeout=30)
    judged = verdict(str(model), [(o, trackers.get(j)) for o, j in zip(outputs, jobs)])
    assert not judged.reproducible
    assert judged.sizes == [SIZE] * 3
    assert f"first differing byte at offset {len(PREFIX):,}" in judged.line()
    assert judged.line().startswith(f"{model}: NOT reproducible: 3 different engines in 3 builds; build 1: {SIZE:,} bytes")



@pytest.mark.parametrize(("args", "says"), [
    (["--repro", "1"], "--repro 1: needs 2 builds or more to compare"),
    (["--require-reproducible"], "--require-reproducible needs --repro N"),
    (["--repro", "2", "--executor", "thread"], "--repro builds each copy in a process of its own; --executor thread does not"),
    (["--tolerance", "size=1%"], "--tolerance needs --baseline FILE"),
    (["--baseline", "{model}", "--tolerance", "size=1%"], "--baseline {model}: is not a baseline trt-tui saved (--save-baseline)"),
    (["--baseline", "{missing}"], "--baseline {missing}: cannot read it: No such file or directory"),
    (["--baseline", "{baseline}", "--tolerance", "size=big"], "--tolerance size=big: 'big' is not a percentage (e.g. 10%)"),
])
def test_ci_options_that_cannot_work_are_refused_before_any_build(trt_tui_command, cli_env, models, tmp_path,
                                                                  args, says) -> None:
    mnist, _ = models
    baseline = tmp_path / "baseline.json"
    baseline.write_text('{\n "writer": "trt-tui",\n "kind": "baseline",\n "version": 1,\n "models": {}\n}\n')
    names = {"model": mnist, "missing": tmp_path / "missing.json", "baseline": baseline}
    result = _build(trt_tui_command, cli_env, mnist, "-o", tmp_path / "mnist.engine",
                    *[a.format(**names) for a in args])
    assert result.returncode == 2
    assert result.stderr.strip() == f"trt-tui: {says.format(**names)}"
    assert not (tmp_path / "mnist.engine").exists()

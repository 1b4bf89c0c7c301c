"""Every event of real runs is version 1 and matches the shipped schema.
"""

from __future__ import annotations

import copy
import json
import signal
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from trt_tui.core.build import protocol

TIMEOUT = 120


PROGRAMS = Path(__file__).parent.parent / "programs"


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    """The shipped schema, made strict: a field it does not describe is an error here (a reader may
    ignore unknown fields; the schema must still name every field trt-tui writes)."""
    schema = copy.deepcopy(protocol.load_schema())
    for definition in schema["$defs"].values():
        definition["additionalProperties"] = False
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def events_of(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def assert_valid(validator, events: list[dict]) -> None:
    assert events
    for event in events:
        assert event.get("v") == 1, event
        assert next(iter(event)) == "v", event  # the version comes first: a reader sees it at once
        errors = sorted(validator.iter_errors(event), key=str)
        assert not errors, f"{event}: {errors[0].message}"


@pytest.fixture(scope="module")
def real_events(cli_env, trt_tui_command, sample_dir, unsupported_op_model, tmp_path_factory) -> dict[str, list]:
    out = tmp_path_factory.mktemp("protocol")
    runs: dict[str, list] = {}

    def run(*args) -> subprocess.CompletedProcess:
        return subprocess.run([*map(str, args)], capture_output=True, text=True, env=cli_env, cwd=out,
                              timeout=TIMEOUT, check=False)

    done = run(*trt_tui_command, "build", sample_dir / "mnist.onnx", unsupported_op_model, "-o", out, "--json")
    assert done.returncode == 1, done.stderr  # one of the two failed
    runs["build --json, a good and a bad model"] = events_of(done.stdout)

    proc = subprocess.Popen([*trt_tui_command, "build", str(sample_dir / "densenet.onnx"), "-o", str(out / "d.engine"),
                             "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env)
    lines = []
    interrupted = False
    try:
        for line in proc.stdout:
            lines.append(line)
            if '"event": "phase_start"' in line and not interrupted:
                proc.send_signal(signal.SIGINT)  # once: a second Ctrl-C exits at once, without final events
                interrupted = True
        assert proc.wait(TIMEOUT) == 130
    finally:
        proc.kill()
    runs["build --json, cancelled"] = events_of("".join(lines))

    done = run(*trt_tui_command, "run", "--json", "--", sys.executable, PROGRAMS / "own_monitor.py",
               sample_dir / "mnist.onnx", out / "own.engine")
    assert done.returncode == 0, done.stderr
    runs["run --json"] = events_of(done.stdout)

    done = run(sys.executable, PROGRAMS / "api_build.py", sample_dir / "mnist.onnx", out / "api.engine",
               "--display", "json")
    assert done.returncode == 0, done.stderr
    runs["observe(display='json')"] = events_of(done.stderr)
    return runs


def test_every_event_of_real_runs_is_version_1_and_matches_the_schema(real_events, validator) -> None:
    for name, events in real_events.items():
        try:
            assert_valid(validator, events)
        except AssertionError as exc:
            raise AssertionError(f"{name}: {exc}") from None
    seen = {event["event"] for events in real_events.values() for event in events}
    assert {"phase_start", "step", "phase_finish", "log", "state", "vitals", "message", "output"} <= seen, seen
    states = {event["state"] for events in real_events.values() for event in events if event["event"] == "state"}
    assert {"succeeded", "failed", "cancelled"} <= states

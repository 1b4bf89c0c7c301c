"""The versioned event protocol: every JSON event trt-tui writes carries `"v": 1` and matches the schema
shipped in the package; a reader refuses a newer version in one line.

The events checked come from real runs: `build --json` of a good and a bad model, a build cancelled
with Ctrl-C, `run --json` of a build script, and a script using `trt_tui.observe(display="json")`.
"""

from __future__ import annotations

import copy
import json
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import jsonschema
import pytest

from trt_tui.core import protocol
from trt_tui.core.remote import RemoteError, RemoteScheduler

TIMEOUT = 120
PROGRAMS = Path(__file__).parent / "programs"


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


def test_the_schema_ships_in_the_package() -> None:
    import trt_tui

    path = protocol.schema_path()
    assert path.parent == Path(trt_tui.__file__).parent / "schema"
    pyproject = (Path(__file__).parent.parent / "pyproject.toml").read_text()
    assert '"schema/*.json"' in pyproject
    assert protocol.load_schema()["title"].endswith("protocol version 1")


def test_a_newer_version_is_refused_in_one_line() -> None:
    assert protocol.decode('{"v": 1, "event": "message", "message": "hi"}', "x")["message"] == "hi"
    assert protocol.decode('{"event": "message", "message": "hi"}', "x")["event"] == "message"  # before versions
    with pytest.raises(protocol.ProtocolError) as refused:
        protocol.decode('{"v": 2, "event": "state"}', "events.jsonl")
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith("events.jsonl: events of protocol version 2") and "upgrade trt-tui" in message


def test_served_client_refuses_a_newer_server_in_one_line(tmp_path) -> None:
    """A tab of `trt-tui serve` reading a newer server's lines says so, instead of misreading them
    or waiting for a `ready` that it cannot understand."""
    path = tmp_path / "server.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(1)

    def serve() -> None:
        conn, _ = listener.accept()
        conn.sendall(b'{"v":2,"t":"ready"}\n')
        conn.recv(1)  # until the client hangs up

    threading.Thread(target=serve, daemon=True).start()
    client = RemoteScheduler(path)
    with pytest.raises(RemoteError) as refused:
        client.connect(timeout=TIMEOUT)
    assert str(refused.value) == (f"{path}: events of protocol version 2; this trt-tui reads version 1:"
                                  " upgrade trt-tui to read them")
    listener.close()


def test_the_schema_describes_every_event_type_and_field() -> None:
    """A field added to an event (a dataclass in `core/events.py`) must be added to the schema too."""
    from dataclasses import fields

    from trt_tui.core.events import EVENT_TYPES

    definitions = protocol.load_schema()["$defs"]
    for name, cls in EVENT_TYPES.items():
        assert name in definitions, f"no schema for {name!r} events"
        described = set(definitions[name]["properties"])
        missing = {f.name for f in fields(cls)} - described
        assert not missing, f"{name}: fields {sorted(missing)} not in {protocol.schema_path().name}"

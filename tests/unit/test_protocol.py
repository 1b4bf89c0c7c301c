"""The versioned event protocol: every JSON event trt-tui writes carries `"v": 1` and matches the schema
shipped in the package; a reader refuses a newer version in one line.

The events checked come from real runs: `build --json` of a good and a bad model, a build cancelled
with Ctrl-C, `run --json` of a build script, and a script using `trt_tui.observe(display="json")`.
"""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from trt_tui.core.build import protocol
from trt_tui.serve.build_server import RemoteError, RemoteScheduler

TIMEOUT = 120
PROGRAMS = Path(__file__).parent.parent / "programs"


def test_the_schema_ships_in_the_package() -> None:
    import trt_tui

    path = protocol.schema_path()
    assert path.parent == Path(trt_tui.__file__).parent / "schema"
    pyproject = (Path(__file__).parent.parent.parent / "pyproject.toml").read_text()
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
    """A field added to an event (a dataclass in `core/build/events.py`) must be added to the schema too."""
    from dataclasses import fields

    from trt_tui.core.build.events import EVENT_TYPES

    definitions = protocol.load_schema()["$defs"]
    for name, cls in EVENT_TYPES.items():
        assert name in definitions, f"no schema for {name!r} events"
        described = set(definitions[name]["properties"])
        missing = {f.name for f in fields(cls)} - described
        assert not missing, f"{name}: fields {sorted(missing)} not in {protocol.schema_path().name}"

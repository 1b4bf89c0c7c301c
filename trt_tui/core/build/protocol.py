"""The versioned JSON form of trt-tui's events: one encoder for every JSON line trt-tui writes, and
the check every reader of those lines makes.

Each line is a JSON object whose first key is `"v"`, the protocol's version, then `"event"` (or, on
the build server's socket, `"t"`) and the fields. The events of version 1 are described by the JSON
Schema shipped in the package (`schema_path()`). Within one version fields may be added, never
removed or changed in meaning; a reader ignores what it does not know. A line of a newer version is
refused with one line saying so, since its fields may mean what this reader cannot tell. A line with
no `"v"` comes from a trt-tui that wrote events before they were versioned: those are version 1.
"""

from __future__ import annotations

import json
from pathlib import Path

VERSION = 1
SCHEMA_FILE = "events-v1.json"


class ProtocolError(ValueError):
    """A line this trt-tui cannot read: a newer protocol version, or not a JSON object."""


def encode(data: dict, compact: bool = False) -> str:
    """One line of the protocol: `data` with the version first."""
    line = {"v": VERSION}
    line.update(data)
    return json.dumps(line, separators=(",", ":")) if compact else json.dumps(line)


def check(data: object, source: str) -> dict:
    """`data` if this trt-tui can read it, else `ProtocolError` naming `source` (a file, a socket)."""
    if not isinstance(data, dict):
        raise ProtocolError(f"{source}: not a trt-tui event (a JSON object was expected)")
    version = data.get("v", VERSION)
    if type(version) is not int or version < 1:
        raise ProtocolError(f"{source}: event protocol version {version!r} is not a version trt-tui knows")
    if version > VERSION:
        raise ProtocolError(f"{source}: events of protocol version {version}; this trt-tui reads version"
                            f" {VERSION}: upgrade trt-tui to read them")
    return data


def decode(line: str | bytes, source: str) -> dict:
    """One line of the protocol, checked (`ProtocolError` for bad JSON too)."""
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise ProtocolError(f"{source}: not JSON: {exc}") from None
    return check(data, source)


def schema_path() -> Path:
    """The JSON Schema of every event of this version, as installed with the package."""
    return Path(__file__).resolve().parent.parent.parent / "schema" / SCHEMA_FILE


def load_schema() -> dict:
    return json.loads(schema_path().read_text(encoding="utf-8"))

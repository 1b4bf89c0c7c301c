"""Two builds from the history, compared: what `trt-tui history diff` and the app's diff panel show.

Picking the builds (by two ids, or a model's last two that succeeded) is here; the comparison itself
is the pure `fingerprint.diff` of the two records' fingerprints and phase timings.
"""

from __future__ import annotations

import time
from pathlib import Path

from ..build.events import State
from ..cache.fingerprint import Fingerprint, diff, fingerprint_changes, format_diff
from ..files.printable import escaped
from ..files.units import plural
from .records import BuildRecord, History

__all__ = ["DiffError", "compare", "format_comparison", "pick", "why_built"]


class DiffError(Exception):
    """The builds to compare cannot be found; the message is one line."""


def pick(history: History, targets: list[str]) -> tuple[BuildRecord, BuildRecord]:
    """(A, B) for `diff A B` (two ids, as `trt-tui history` lists them: any two builds) or `diff MODEL`
    (the model's last two builds that succeeded, older first: a cancelled or failed build stopped
    part of the way, and its phases would read as changes). A file name that builds in two
    directories had is refused, naming both: the user says which."""
    if len(targets) == 2 and all(t.isdigit() for t in targets):
        found = []
        for text in targets:
            # An id past SQLite's integers is no build's (and would overflow the query).
            record = history.get(int(text)) if int(text) < 2**63 else None
            if record is None:
                raise DiffError(f"no build with id {text} in {history.path} (see `trt-tui history`)")
            found.append(record)
        return found[0], found[1]
    if len(targets) != 1:
        raise DiffError("give two build ids (`history diff 3 7`) or one model (`history diff resnet50.onnx`)")
    model = targets[0]
    records = history.builds(model, limit=200)
    paths = list(dict.fromkeys(r.model for r in records))
    if len(paths) > 1:
        raise DiffError(f"{model}: builds of {len(paths)} models have this name: {', '.join(paths)}; give one path")
    records = [r for r in records if r.state == State.SUCCEEDED.value]
    if len(records) < 2:
        raise DiffError(f"{model}: {plural(len(records), 'successful build')} in history, need two to compare"
                        f" (two ids compare any builds: see `trt-tui history {model}`)")
    return records[1], records[0]


def compare(a: BuildRecord, b: BuildRecord) -> dict:
    """The JSON form: both builds as `history --json` lists them, then the diff."""
    fa = Fingerprint.from_dict(a.fingerprint) if a.fingerprint else None
    fb = Fingerprint.from_dict(b.fingerprint) if b.fingerprint else None
    return {"a": a.as_json(), "b": b.as_json(), **diff(fa, fb, a.phases, b.phases, a.engine_bytes, b.engine_bytes)}


def format_comparison(result: dict, top: int = 10, labels: tuple[str, str] | None = None) -> list[str]:
    """The diff's lines under a title naming both builds: by their history ids (what `trt-tui history`
    lists), or by `labels` where the caller shows the builds under other names."""
    a, b = result["a"], result["b"]
    first, second = labels or (f"#{a['id']}", f"#{b['id']}")
    title = (f"{Path(a['model']).name} {first} ({_when_of(a)}, {a['state']}) → "
             f"{Path(b['model']).name} {second} ({_when_of(b)}, {b['state']})")
    return [escaped(line) for line in format_diff(result, top=top, title=title)]  # names from the history


def _when_of(data: dict) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(data["started"]))


# What a user changes to make a model build again; the host, the GPU and trt-tui's version are in
# the diff, but they do not make a cached engine stale.
_CAUSES = ("model", "option", "backend")


def why_built(record: BuildRecord, older: BuildRecord | None) -> str:
    """One line: what differs from the build of the model before it (`older`, any state), as far as
    the two fingerprints tell; a skipped build says why it was skipped."""
    if record.state == State.SKIPPED.value:
        return record.error or "up to date"
    if older is None:
        return "first build in the history"
    if not record.fingerprint or not older.fingerprint:
        return "not recorded"
    changes = [c for c in fingerprint_changes(Fingerprint.from_dict(older.fingerprint),
                                              Fingerprint.from_dict(record.fingerprint)) if c["what"] in _CAUSES]
    if not changes:
        return "same model, options and backend"
    return "; ".join(c["change"] if c["what"] != "backend" else f"backend {c['change']}" for c in changes)

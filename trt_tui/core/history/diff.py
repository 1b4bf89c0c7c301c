"""Two builds from the history, compared: what `trt-tui history diff` and the app's diff panel show.

Picking the builds (by two ids, or a model's last two that succeeded) is here; the comparison itself
is the pure `fingerprint.diff` of the two records' fingerprints and phase timings.
"""

from __future__ import annotations

import time
from pathlib import Path

from ..build.events import State
from ..cache.fingerprint import Fingerprint, diff, fingerprint_changes
from ..files.printable import escaped
from ..files.units import human_bytes, human_seconds, plural
from .records import BuildRecord, History
from .table import source

__all__ = ["TOO_SHORT", "DiffError", "compare", "format_comparison", "format_diff", "pick", "why_built"]

# Phases under this many seconds in both builds are left out of the text: timer noise, not a change
# ("0.000s → 0.000s 2.74×"); the text says how many it left out, the JSON keeps them all.
TOO_SHORT = 0.010


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


def _seconds(value: float) -> str:
    """Phases of small models take milliseconds: show them, where human_seconds rounds to 0.0s."""
    return f"{value:.3f}s" if value < 10 else human_seconds(value)


def format_diff(result: dict, top: int = 10, title: str | None = None) -> list[str]:
    """The diff as lines for a terminal: changes, then the `top` phases that changed most, then size.
    Phases too short to compare are counted, not listed; a build that did not finish (cancelled,
    failed) gets no speed ratio, its phases stopped part of the way: a mark says so instead."""
    lines = [title] if title else []
    changes, missing = result["changes"], result.get("no_fingerprint") or []
    if missing:
        lines.append("fingerprint: no fingerprint for " + ("either build" if len(missing) == 2 else f"build {missing[0]}")
                     + " (recorded without one): nothing to compare")
    else:
        lines.append("fingerprint: " + ("identical" if not changes else plural(len(changes), "difference")))
    lines += [f"  {c['what']}: {c['change']}" for c in changes]
    unfinished = [(name, result[key]["state"]) for name, key in (("A", "a"), ("B", "b"))
                  if key in result and result[key]["state"] != State.SUCCEEDED.value]
    changed = [p for p in result["phases"] if p["change"] != 0.0]
    phases = [p for p in changed if max(p["before"] or 0.0, p["after"] or 0.0) >= TOO_SHORT]
    if phases:
        lines.append("phases (by change in time): before → after, ×, phase")
        for p in phases[:top]:
            before = _seconds(p["before"]) if p["before"] is not None else "-"
            after = _seconds(p["after"]) if p["after"] is not None else "-"
            if p["before"] is None or p["after"] is None:
                ratio = "new" if p["before"] is None else "gone"
            else:
                ratio = "✗" if unfinished else f"{p['ratio']:.2f}×" if p["ratio"] is not None else "-"
            # Numbers first, so they line up however long the phase path is.
            lines.append(f"  {before:>8} → {after:>8}  {ratio:>6}  {p['phase']}")
    else:
        lines.append("phases: no timing differences")
    for name, state in unfinished:
        lines.append(f"  ✗ build {name} {state}: its phases stopped part of the way, no speed ratio")
    if len(changed) > len(phases):
        lines.append(f"  ({plural(len(changed) - len(phases), 'phase')} under {TOO_SHORT * 1000:.0f} ms"
                     " in both builds not shown)")
    size = result["engine_bytes"]
    if size["before"] == size["after"]:
        lines.append(f"engine: {human_bytes(size['after'])} (same)")
    else:
        lines.append(f"engine: {human_bytes(size['before'])} → {human_bytes(size['after'])}")
    return lines


def _when_of(data: dict) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(data["started"]))


# What a user changes to make a model build again; the host, the GPU and trt-tui's version are in
# the diff, but they do not make a cached engine stale.
_CAUSES = ("model", "option", "backend")


def why_built(record: BuildRecord, older: BuildRecord | None) -> str:
    """One line: why the build was made. The reason the engine cache gave as it started, where the
    history has it ("no engine yet"); else what differs from the build of the model before it
    (`older`, any state), as far as the two fingerprints tell. A skipped build says why it was
    skipped; a build another program made (`trt-tui run`) was only observed."""
    if record.state == State.SKIPPED.value:
        return record.error or "up to date"
    if record.reason:
        return record.reason
    if record.program and not record.fingerprint:
        return f"observed from a program ({source(record.program)}): its reasons are its own"
    if older is None:
        return "first build in the history"
    if not record.fingerprint or not older.fingerprint:
        return "not recorded"
    changes = [c for c in fingerprint_changes(Fingerprint.from_dict(older.fingerprint),
                                              Fingerprint.from_dict(record.fingerprint)) if c["what"] in _CAUSES]
    if not changes:
        return "same model, options and backend"
    return "; ".join(c["change"] if c["what"] != "backend" else f"backend {c['change']}" for c in changes)

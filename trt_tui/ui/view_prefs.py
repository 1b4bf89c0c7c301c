"""How the user left the view, kept between runs (as btop and lazygit keep theirs): the builds
list's sort and whether it hides skipped builds, the log's level, the theme.

They live in the user's state directory (`$XDG_STATE_HOME/trt-tui/view.json`, else
`~/.local/state/trt-tui/view.json` on Linux, platformdirs' `user_state_dir` elsewhere): state the
app wrote, not a setting the user edits (that is the config file, whose values, like the command
line's, win over what is kept here). The app reads the file as it starts and writes it, atomically,
as it quits. A file that cannot be read or is not what trt-tui writes is one line (the app shows it)
and the defaults; a value of the wrong kind is left out alone. Nothing here knows Textual.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from ..core.files import atomic

FILE_NAME = "view.json"
MAX_BYTES = 64 * 1024  # far more than the file ever holds: a larger one is not ours


@dataclass(frozen=True)
class ViewPrefs:
    sort: str | None = None  # the header of the column the builds list is sorted by; None: as added
    sort_reverse: bool = False
    hide_skipped: bool = False
    log_level: str | None = None  # a label of `log_level.LOG_LEVELS`
    theme: str | None = None


_KINDS = {"sort": (str, type(None)), "sort_reverse": (bool,), "hide_skipped": (bool,),
          "log_level": (str, type(None)), "theme": (str, type(None))}


def default_path() -> Path:
    """The file in the user's state directory (worked out as platformdirs does on Linux, without
    importing it: `cli.user_files` says why)."""
    if sys.platform == "linux":
        state = os.environ.get("XDG_STATE_HOME", "").strip() or str(Path.home() / ".local" / "state")
        return Path(state) / "trt-tui" / FILE_NAME
    from platformdirs import user_state_dir

    return Path(user_state_dir("trt-tui")) / FILE_NAME


def load(path: Path) -> tuple[ViewPrefs, str | None]:
    """The kept view, and the line saying why the file was not used (None: used, or there is none)."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except FileNotFoundError:
        return ViewPrefs(), None
    except OSError as exc:
        return ViewPrefs(), f"{path}: {exc.strerror or exc}; the view starts as it does by default"
    try:
        if len(data) > MAX_BYTES:
            raise ValueError("too large")
        values = json.loads(data)
        if not isinstance(values, dict):
            raise ValueError("not an object")
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        why = "too large" if str(exc) == "too large" else "not a view trt-tui wrote"
        return ViewPrefs(), f"{path}: {why}; the view starts as it does by default"
    kept = {name: values[name] for name in (f.name for f in fields(ViewPrefs))
            if name in values and type(values[name]) in _KINDS[name]}
    return ViewPrefs(**kept), None


def save(path: Path, prefs: ViewPrefs) -> None:
    """Written atomically (`core.files.atomic`); raises OSError."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(path, json.dumps(asdict(prefs), indent=1) + "\n")


def keep(path: Path, prefs: ViewPrefs) -> str | None:
    """`save`, saying in one line why the view was not kept (None: it was)."""
    try:
        save(path, prefs)
    except OSError as exc:
        return f"trt-tui: the view was not kept: {path}: {exc.strerror or exc}"
    return None

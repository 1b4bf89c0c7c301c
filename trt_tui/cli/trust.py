"""Project trust: which options a project's `[tool.trt-tui]` may set by itself, and the directories
the user trusts with the rest.

A pyproject.toml arrives with `git clone`: what it says is the repository's author's, not the
user's. As git's `safe.directory`, `direnv allow`, `mise trust` and VS Code's workspace trust do, a
project file sets on its own only what cannot write, route or open anything (`HARMLESS`: how builds
are made and shown). Everything else (paths such as trace and history, `force`, executors and their
addresses, serve's host, port and token, memory limits, and any option added later, until it is
judged harmless) applies only in a directory the user trusted with `trt-tui trust DIR`. The trusted
directories are kept in `trusted-projects.json` in the user config directory, where no project file
reaches.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from .errors import UsageError
from .user_files import bounded_bytes, user_config_dir

# Options (long names) a project file may set in a directory nobody trusted.
HARMLESS = frozenset({
    "theme", "keys", "watch", "notify-after", "log-level", "verbose", "json", "headless", "limit", "no-model",
    "backend", "workspace", "opt-level", "shapes", "min-shapes", "opt-shapes", "max-shapes", "compute-capability",
    "jobs", "gpus", "cancel-grace", "grace", "vitals-interval", "stall-after", "stack-after",
})
STORE_NAME = "trusted-projects.json"


def store_path() -> Path:
    return user_config_dir() / STORE_NAME


def trusted_directories() -> list[Path]:
    """The directories the user trusts, as `trt-tui trust` resolved them."""
    path = store_path()
    try:
        data = bounded_bytes(path)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        directories = json.loads(data).get("trusted")
    except (ValueError, AttributeError):
        directories = None
    if not isinstance(directories, list) or not all(isinstance(d, str) for d in directories):
        raise UsageError(f"{path}: not the list of trusted projects trt-tui writes (remove it and trust again)")
    return [Path(d) for d in directories]


def is_trusted(directory: Path) -> bool:
    return directory.resolve() in trusted_directories()


def save(directories: list[Path]) -> None:
    from ..core.files.atomic import atomic_file

    path = store_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(path, "w", encoding="utf-8") as file:
        file.write(json.dumps({"trusted": sorted(dict.fromkeys(map(str, directories)))}, indent=1) + "\n")


def how_to_trust(directory: Path, revoke: bool = False) -> str:
    return f"trt-tui trust {'--revoke ' if revoke else ''}{shlex.quote(str(directory))}"

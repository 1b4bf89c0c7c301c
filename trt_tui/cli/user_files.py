"""The user's own files the command line reads: where they live (`user_config_dir`) and how any
config file is read (`bounded_bytes`)."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from .errors import UsageError

MAX_BYTES = 2**20  # a config file of more is refused: no settings file is that long


def user_config_dir() -> Path:
    """platformdirs' user config directory of trt-tui. On Linux, the XDG one worked out as platformdirs
    does: importing platformdirs imports tempfile and shutil, which every command would then load
    before it starts, for this one path."""
    if sys.platform == "linux":
        return Path(os.environ.get("XDG_CONFIG_HOME", "").strip() or Path.home() / ".config") / "trt-tui"
    from platformdirs import user_config_dir

    return Path(user_config_dir("trt-tui"))


def bounded_bytes(path: Path) -> bytes:
    """The bytes of the config file at `path`, which must be a regular file of at most MAX_BYTES: a
    link to /dev/zero (a repository can ship one as a git symlink) or a FIFO would otherwise be read
    until memory runs out or forever. Opened without blocking, so a FIFO is refused, not waited on."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else "a pipe" if stat.S_ISFIFO(mode) else \
                "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file"
            raise UsageError(f"{path}: {kind}, not a config file (a config file is a regular file)")
        chunks, size = [], 0
        while size <= MAX_BYTES and (chunk := os.read(fd, MAX_BYTES + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
        if size > MAX_BYTES:
            raise UsageError(f"{path}: more than {MAX_BYTES // 2**20} MiB, too large for a config file")
        return b"".join(chunks)
    finally:
        os.close(fd)

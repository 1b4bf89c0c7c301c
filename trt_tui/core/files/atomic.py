"""The one way trt-tui writes a file: engines, sidecars, timing caches, traces, samples.

Every file goes first to a temporary of its own in the target's directory, created with
`O_CREAT | O_EXCL | O_NOFOLLOW` under an unpredictable name (so a file or a link planted there can
neither be followed nor make the write fail), written, fsynced, renamed over the target and the
directory fsynced; on any failure the temporary is removed. Only a regular file (or nothing) is
ever replaced: a device node, a FIFO, a socket or a symbolic link at the target fails the write. Where the platform allows (Linux), the
temporary is created, renamed and removed relative to a descriptor of the directory, so that a
directory removed or renamed away during the write fails it (ENOENT) and leaves nothing behind, in
its new place either. A reader therefore sees the old file or
the new one, never half of one, and a link planted at a temporary's name is never written through.

Temporaries are named `.TARGET.trt-tui.PID.RANDOM.tmp`. The pid is the writer's: whoever outlives a
writer that died (a killed child process, a process killed with SIGKILL) can tell its temporaries
from those of writers still running, and `remove_stale_temps` removes them. This process also keeps
the names of the temporaries it is writing, so a signal handler can remove them before exiting.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

TAG = "trt-tui"
_TEMP = re.compile(r"^\.(?P<target>.+)\." + TAG + r"\.(?P<pid>\d+)\.[0-9a-f]+\.tmp$")
_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)

_in_flight: set[str] = set()
_in_flight_lock = threading.Lock()


def _token() -> str:
    """12 random hex digits, as `secrets.token_hex(6)` gives them, without its imports."""
    return os.urandom(6).hex()


def temp_name(target: Path, pid: int | None = None) -> Path:
    pid = os.getpid() if pid is None else pid
    return target.with_name(f".{target.name}.{TAG}.{pid}.{_token()}.tmp")


def _create_temp(target: Path, mode: int, dir_fd: int | None = None) -> tuple[int, Path]:
    for _ in range(100):
        temp = temp_name(target)
        try:
            if dir_fd is not None:
                return os.open(temp.name, _FLAGS, mode, dir_fd=dir_fd), temp
            return os.open(temp, _FLAGS, mode), temp
        except FileExistsError:  # someone planted this very name: draw another
            continue
    raise FileExistsError(errno.EEXIST, "cannot create a temporary file", str(target.parent))


def _open_directory(directory: Path) -> int | None:
    """A descriptor of the target's directory, where the platform can create and remove files
    relative to one (Linux); None elsewhere, and the paths are used."""
    if os.open not in os.supports_dir_fd or os.unlink not in os.supports_dir_fd:
        return None
    return os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))


def _still_there(directory: Path, dir_fd: int) -> None:
    """Raise ENOENT, naming the directory, where it was removed or moved away while we wrote: the
    file would otherwise land wherever the directory went, under a name the user never asked for."""
    opened = os.fstat(dir_fd)
    try:
        here = os.stat(directory)
    except FileNotFoundError:
        here = None
    if here is None or (here.st_dev, here.st_ino) != (opened.st_dev, opened.st_ino):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(directory))


def _fsync_directory(directory: Path, dir_fd: int | None = None) -> None:
    """Make a rename in `directory` durable (through `dir_fd` where it is open already)."""
    fd = dir_fd
    if fd is None:
        try:
            fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except OSError:
            return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems cannot fsync a directory; the rename itself is still atomic
    finally:
        if dir_fd is None:
            os.close(fd)


def remove_quietly(path: Path, dir_fd: int | None = None) -> None:
    """Never raises: where the directory is gone or unreadable there is nothing to remove, and the
    error being handled is the one worth reporting. With `dir_fd` (the directory's descriptor), the
    file is found even where its directory was renamed away."""
    try:
        os.unlink(path if dir_fd is None else path.name, dir_fd=dir_fd)
    except OSError:
        pass


NOT_REGULAR = "exists and is not a regular file"


def _refuse_special(target: Path, dir_fd: int | None) -> None:
    """Only a regular file is ever replaced: a rename over a device node, a FIFO, a socket or a
    symbolic link would take its name away from whatever it stands for (as root, `/dev/null`)."""
    try:
        st = os.lstat(target.name, dir_fd=dir_fd) if dir_fd is not None else os.lstat(target)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EEXIST, NOT_REGULAR, str(target))


class Staged:
    """A temporary beside `target`, open in `mode` as `file`, that `commit` renames over the target
    (only a regular file or none) and `close` removes where it was not committed. For a caller that
    must put several files in place as one step (an engine and its sidecar, under their lock)."""

    def __init__(self, target: str | os.PathLike, mode: str = "wb", *, file_mode: int = 0o644,
                 encoding: str | None = None) -> None:
        self.target = Path(target)
        self.committed = False
        self.dir_fd = _open_directory(self.target.parent)
        try:
            fd, self.temp = _create_temp(self.target, file_mode, self.dir_fd)
        except BaseException:
            if self.dir_fd is not None:
                os.close(self.dir_fd)
            raise
        with _in_flight_lock:
            _in_flight.add(str(self.temp))
        self.file = os.fdopen(fd, mode, encoding=encoding if "b" not in mode else None)

    def sync(self) -> None:
        self.file.flush()
        os.fsync(self.file.fileno())

    def commit(self) -> os.stat_result:
        """Into place; returns the status of the file written (from its own descriptor, so it is
        this file's whatever another writer puts at the target's name afterwards)."""
        self.sync()
        if self.dir_fd is None:
            _refuse_special(self.target, None)
            os.replace(self.temp, self.target)
        else:
            _still_there(self.target.parent, self.dir_fd)
            _refuse_special(self.target, self.dir_fd)
            os.replace(self.temp.name, self.target.name, src_dir_fd=self.dir_fd, dst_dir_fd=self.dir_fd)
        self.committed = True
        written = os.fstat(self.file.fileno())
        _fsync_directory(self.target.parent, self.dir_fd)
        return written

    def remove_target(self) -> None:
        """Take back a committed file (what was to go in place with it could not)."""
        remove_quietly(self.target, self.dir_fd)

    def close(self) -> None:
        try:
            self.file.close()
        except OSError:
            pass
        if not self.committed:
            remove_quietly(self.temp, self.dir_fd)
        if self.dir_fd is not None:
            os.close(self.dir_fd)
            self.dir_fd = None
        with _in_flight_lock:
            _in_flight.discard(str(self.temp))

    def __enter__(self) -> Staged:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@contextlib.contextmanager
def atomic_file(target: str | os.PathLike, mode: str = "wb", *, file_mode: int = 0o644,
                encoding: str | None = None) -> Iterator[IO]:
    """`with atomic_file(path, "w") as f: f.write(...)`: the target appears whole when the block ends
    without an exception, and not at all (the old one stays) when it raises."""
    with Staged(target, mode, file_mode=file_mode, encoding=encoding) as staged:
        yield staged.file
        staged.commit()


def write_bytes(target: str | os.PathLike, data, *, before_replace=None) -> int:
    """Write `data` (bytes, or any buffer such as TensorRT's IHostMemory) to `target` atomically;
    returns the number of bytes. `before_replace()` runs after the data is safe on disk and before
    it replaces the target: raising there (a cancel that came during the write) leaves nothing."""
    view = memoryview(data)
    with atomic_file(target, "wb") as f:
        f.write(view)
        if before_replace is not None:
            before_replace()
    return view.nbytes


def write_text(target: str | os.PathLike, text: str) -> None:
    with atomic_file(target, "w", encoding="utf-8") as f:
        f.write(text)


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (one of another user's counts: not ours to judge)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def remove_stale_temps(directory: Path, *, pid: int | None = None) -> list[Path]:
    """Remove temporaries in `directory` whose writer is gone (or, with `pid`, those of that writer,
    which the caller knows it has just killed). Returns what was removed; never raises."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        match = _TEMP.match(entry.name)
        if match is None:
            continue
        owner = int(match.group("pid"))
        if (owner == pid) if pid is not None else (owner != os.getpid() and not pid_alive(owner)):
            path = Path(entry.path)
            remove_quietly(path)
            removed.append(path)
    return removed


def remove_own_temps() -> None:
    """For a process about to exit at once (a second Ctrl-C, orphaned child): drop what it was writing."""
    with _in_flight_lock:
        paths = list(_in_flight)
    for path in paths:
        remove_quietly(Path(path))

"""Which of a model's files a report bundle may copy: regular files inside the model's own directory,
reached through no link.

A model's external data locations are written by whoever made the model, and a failed build is
recorded whatever they say; a bundle goes to someone else. So a location that leaves the directory
(`../../../secret.txt`, an absolute path), a file that is a symbolic link, a directory link that
leads elsewhere, or anything but a regular file (a FIFO would block the bundle) is left out with the
reason. The file is checked again, by its inode, when it is opened to be copied, and opened without
following a link: what was checked is what is copied, or the bundle is not written.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

__all__ = ["ModelFile", "model_file"]


@dataclass(frozen=True)
class ModelFile:
    """A file of the model that passed the check: its name under the model's directory and the
    inode it had then."""

    path: Path
    name: str  # relative to the model's directory, `/`-separated
    device: int
    inode: int

    def open(self) -> BinaryIO:
        """The file for reading, or OSError where it is no longer the regular file that was checked
        (replaced, or a link now)."""
        fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode) or (found.st_dev, found.st_ino) != (self.device, self.inode):
            os.close(fd)
            raise OSError(errno.ESTALE, f"{self.path} changed while the bundle was written; no bundle written")
        return os.fdopen(fd, "rb")


def _inside(path: str, directory: str) -> bool:
    return os.path.commonpath([path, directory]) == directory


def model_file(path: Path, directory: Path) -> ModelFile | str:
    """`path` (absolute, normalised) as a file the bundle may copy, or why not: the path as written
    and the reason, one line for the manifest."""
    where = str(path)
    if not _inside(where, str(directory)):
        return f"{where} left out: outside the model's directory"
    relative = os.path.relpath(where, directory)
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return f"{relative} left out: no such file"
    except OSError as exc:
        return f"{relative} left out: {exc.strerror or exc}"
    if stat.S_ISLNK(found.st_mode):
        return f"{relative} left out: a symbolic link"
    if not stat.S_ISREG(found.st_mode):
        return f"{relative} left out: not a regular file"
    if not _inside(os.path.realpath(path), os.path.realpath(directory)):
        return f"{relative} left out: reached through a link to a directory outside the model's directory"
    return ModelFile(path, Path(relative).as_posix(), found.st_dev, found.st_ino)

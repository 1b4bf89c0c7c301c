"""Where the collector's socket lives, and the checks that keep it the user's own.

The directory is `$XDG_RUNTIME_DIR/trt-tui` (the runtime directory systemd gives each user, 0700),
else `$TMPDIR/trt-tui-UID` (`/tmp/trt-tui-UID`), created 0700. Either is used only if it is a real directory (not a link),
owned by this user and closed to everyone else; the socket (0600) and the key (0600) in it likewise.
Anything else is refused with the reason, since another user who could replace the socket would
receive the builds' logs and could answer with cancels.

Light on purpose: a hooked program's reporter asks `reporter_target()` at each build.
`inject.env_hook` computes the same socket path without importing this module.
"""

from __future__ import annotations

import os
import stat

DIRECTORY_NAME = "trt-tui"
SOCKET_NAME = "collector.sock"
KEY_NAME = "collector.key"  # the HMAC key a reporter proves it knows (as `trt-tui run`'s)
LOCK_NAME = "collector.lock"  # held (flock) by the app that listens, for as long as it listens


class UnsafePlace(Exception):
    """The runtime directory, socket or key is not this user's alone: one line saying why."""


def directory() -> str:
    """The collector's directory (not created, not checked)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        return os.path.join(runtime, DIRECTORY_NAME)
    tmp = os.environ.get("TMPDIR")
    return os.path.join(tmp if tmp and os.path.isabs(tmp) else "/tmp", f"{DIRECTORY_NAME}-{os.getuid()}")


def socket_path() -> str:
    return os.path.join(directory(), SOCKET_NAME)


def check_owned(path: str, kind: str, private_mode: int) -> os.stat_result:
    """`path`'s status if it is a `kind` ("directory", "socket", "file") of this user's that no other
    user may use (no permission bit outside `private_mode`), else `UnsafePlace`."""
    info = os.lstat(path)
    is_kind = {"directory": stat.S_ISDIR, "socket": stat.S_ISSOCK, "file": stat.S_ISREG}[kind]
    if not is_kind(info.st_mode):
        raise UnsafePlace(f"{path} is not a {kind} (a link or something else): refusing to use it")
    if info.st_uid != os.getuid():
        raise UnsafePlace(f"{path} belongs to uid {info.st_uid}, not to you (uid {os.getuid()}): refusing to use it")
    if stat.S_IMODE(info.st_mode) & ~private_mode:
        raise UnsafePlace(f"{path} is open to other users (mode {stat.S_IMODE(info.st_mode):o}): refusing to use it")
    return info


def make_directory() -> str:
    """The collector's directory, created 0700 if missing, checked to be this user's alone."""
    path = directory()
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise UnsafePlace(f"{path}: cannot create it: {exc.strerror or exc}") from None
    check_owned(path, "directory", 0o700)
    return path


def reporter_target() -> tuple[str, bytes] | None:
    """(socket, key) where this user's app listens, else None: nothing listens, or the place is not
    this user's alone (a report is then never sent)."""
    folder = directory()
    address = os.path.join(folder, SOCKET_NAME)
    if not os.path.exists(address):
        return None
    try:
        check_owned(folder, "directory", 0o700)
        check_owned(address, "socket", 0o600)
        key_path = os.path.join(folder, KEY_NAME)
        check_owned(key_path, "file", 0o600)
        with open(key_path, "rb") as file:
            key = file.read(64)
    except (OSError, UnsafePlace):
        return None
    return (address, key) if key else None

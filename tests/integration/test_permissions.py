"""A file the user may not read is one clear line, as another real user meets it: the test runs as root,
where every file is readable, so a forked child becomes a second user (created for the test) before it
reads, and reports what trt-tui said."""

from __future__ import annotations

import os
from pathlib import Path

import onnx

from trt_tui.core.model.modelinfo import ModelInfoError, read_model_info
from trt_tui.core.model.samples import make_model


def read_as(user, path: Path) -> str:
    """`read_model_info(path)` in a child that is `user` (its groups too); what it raised, or "read"."""
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 0
        try:
            os.close(reader)
            os.setgroups([])
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)
            try:
                read_model_info(path)
                said = "read"
            except ModelInfoError as exc:
                said = str(exc)
            os.write(writer, said.encode())
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(writer)
    with os.fdopen(reader, "rb") as pipe:
        said = pipe.read().decode()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, said
    return said


def test_a_model_another_user_may_not_read_is_one_line_naming_it(tmp_path, other_user) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    for directory in (folder, *folder.parents):  # the other user may reach the file, not read it
        if directory.stat().st_uid == 0 and directory != Path("/"):
            directory.chmod(directory.stat().st_mode | 0o011)
    secret = folder / "secret.onnx"
    onnx.save(make_model("mnist"), secret)
    readable = folder / "open.onnx"
    onnx.save(make_model("mnist"), readable)
    secret.chmod(0o600)
    readable.chmod(0o644)
    said = read_as(other_user, secret)
    assert said.startswith(f"{secret}: not an ONNX model (") and "permission denied" in said, said
    assert "\n" not in said
    assert read_as(other_user, readable) == "read"  # the same model, readable: the check is the permission

"""What the hook's `.pth` runs at every interpreter start of the environment is a few lines that read no
file: `run/env_hook.py` is read only when the program imports TensorRT. Where bytecode is never
written (PYTHONDONTWRITEBYTECODE, common in containers), reading it at start meant compiling it at
every start of every Python program there (figures: BENCHMARKS.md)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from trt_tui.cli.commands.hook import ENV_HOOK, PTH_NAME, pth_text

CHILD = """
import json, site, sys
opened = []
sys.addaudithook(lambda event, args: opened.append(str(args[0]))
                 if event == "open" and args and "env_hook" in str(args[0]) else None)
site.addsitedir(sys.argv[1])
at_start = list(opened)
finders = [type(f).__name__ for f in sys.meta_path]
import tensorrt_rtx
print(json.dumps({"at_start": at_start, "at_import": opened[len(at_start):], "finders": finders,
                  "trt_tui": sorted(m for m in sys.modules if m.startswith("trt_tui"))}))
"""


def started(tmp_path: Path, env_hook: Path) -> dict:
    site_dir = tmp_path / "site"
    site_dir.mkdir(exist_ok=True)
    (site_dir / PTH_NAME).write_text(pth_text(env_hook), encoding="utf-8")
    runtime = tmp_path / "runtime"  # no app listens there
    runtime.mkdir(mode=0o700, exist_ok=True)
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", XDG_RUNTIME_DIR=str(runtime))
    done = subprocess.run([sys.executable, "-c", CHILD, str(site_dir)], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120, check=True)
    assert done.stderr == ""
    return json.loads(done.stdout)


def test_an_interpreter_start_reads_nothing_of_the_hook_until_tensorrt_is_imported(tmp_path) -> None:
    env_hook = tmp_path / "installed" / "env_hook.py"  # as in a package installed without bytecode
    env_hook.parent.mkdir()
    shutil.copy(ENV_HOOK, env_hook)
    seen = started(tmp_path, env_hook)
    assert seen["at_start"] == []
    assert seen["finders"][0] == "TensorRTFinder"
    assert str(env_hook) in seen["at_import"]  # read when TensorRT is imported, to hand the import to it
    assert seen["trt_tui"] == []  # no app listening: nothing of trt-tui imported, TensorRT left as it is
    assert not (env_hook.parent / "__pycache__").exists()


def test_an_uninstalled_trt_tui_leaves_tensorrt_to_import_as_ever(tmp_path) -> None:
    seen = started(tmp_path, tmp_path / "gone" / "env_hook.py")
    assert seen["at_start"] == [] and seen["at_import"] == [] and seen["trt_tui"] == []

"""The core and the headless front end must not pull in Textual.

If they did, `trt-tui build` in CI would pay for (and depend on) the whole UI stack, and a child
process running a build would import it too.
"""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import trt_tui.core

CHECK = """
import importlib, json, sys
names = json.loads(sys.argv[1])
for name in names:
    importlib.import_module(name)
ui = sorted(m for m in sys.modules if m == "textual" or m.startswith(("textual.", "trt_tui.ui")))
print(json.dumps({"imported": [n for n in names if n in sys.modules], "ui": ui}))
"""


def core_modules() -> list[str]:
    return sorted(f"trt_tui.core.{m.name}" for m in pkgutil.iter_modules(trt_tui.core.__path__))


def test_core_and_headless_import_without_textual(cli_env: dict[str, str]) -> None:
    """`trt-tui build` would need Textual installed, and start slower, if a core module imported it."""
    names = [*core_modules(), "trt_tui.headless", "trt_tui.cli"]
    assert {"trt_tui.core.monitor", "trt_tui.core.scheduler", "trt_tui.core.build"} <= set(names)
    result = subprocess.run(
        [sys.executable, "-c", CHECK, json.dumps(names)],
        capture_output=True, text=True, env=cli_env, timeout=120, check=False,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["imported"] == names
    assert report["ui"] == [], f"UI modules imported by the core: {report['ui']}"

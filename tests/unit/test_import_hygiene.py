"""What imports what: the core and the headless front end pull in no Textual (else `trt-tui build` in
CI would pay for, and depend on, the whole UI stack, and a child process running a build would import
it too), the app's first frame waits on nothing heavy, consumers read builds only through events, and
the package keeps its import order (`[tool.importlinter]`, which these tests also run).
"""

from __future__ import annotations

import json
import os
import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path

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
    """Every module of every package under trt_tui/core, however deep."""
    found = pkgutil.walk_packages(trt_tui.core.__path__, prefix="trt_tui.core.")
    return sorted(["trt_tui.core", *(m.name for m in found)])


def modules_on_disk(package: Path, name: str) -> set[str]:
    """The modules a walk must find: each .py file in a directory that is a package (has __init__.py)."""
    found = set()
    for path in package.rglob("*.py"):
        if all((d / "__init__.py").exists() for d in [path.parent, *path.parent.parents] if package in [d, *d.parents]):
            parts = path.relative_to(package).with_suffix("").parts
            found.add(".".join([name, *parts]).removesuffix(".__init__"))
    return found


def test_core_and_headless_import_without_textual(cli_env: dict[str, str]) -> None:
    """`trt-tui build` would need Textual installed, and start slower, if a core module imported it:
    every module of every package under trt_tui/core is imported, none may pull Textual in."""
    names = [*core_modules(), "trt_tui.formats.headless", "trt_tui.cli"]
    assert {"trt_tui.core.build.monitor", "trt_tui.core.execution.scheduler", "trt_tui.core.build.driver"} <= set(names)
    assert modules_on_disk(Path(trt_tui.core.__file__).parent, "trt_tui.core") <= set(names), "a package was not walked"
    result = subprocess.run(
        [sys.executable, "-c", CHECK, json.dumps(names)],
        capture_output=True, text=True, env=cli_env, timeout=120, check=False,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["imported"] == names
    assert report["ui"] == [], f"UI modules imported by the core: {report['ui']}"


# What the app does not need before its first frame: TensorRT (the builds import it, in their own
# processes by default), the ONNX package and numpy (the picker reads models with its own reader),
# the samplers' libraries (imported by their threads), watching, Ray, serving, the stack viewer.
NOT_BEFORE_FIRST_FRAME = ["tensorrt_rtx", "tensorrt", "onnx", "numpy", "psutil", "pynvml", "watchfiles", "ray",
                          "textual_serve", "textual.widgets._text_area"]

LOADED = """
import json, sys
names = json.loads(sys.argv[1])
{action}
print(json.dumps(sorted(n for n in names if n in sys.modules)))
"""

# `trt-tui DIR` as cli.main starts it, headless, until the app has mounted and painted.
APP_ON_A_DIRECTORY = """
import asyncio
from trt_tui import cli
from trt_tui.ui.app import make_app

args = cli.build_parser()[0].parse_args([sys.argv[2]])
app = make_app(cli.app_config(args))

async def first_frame():
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert app.picker.row_count == 1, app.picker.row_count

asyncio.run(first_frame())
"""


def loaded(cli_env: dict[str, str], action: str, *args: str) -> list[str]:
    code = LOADED.format(action=action)
    result = subprocess.run([sys.executable, "-c", code, json.dumps(NOT_BEFORE_FIRST_FRAME), *args],
                            capture_output=True, text=True, env=cli_env, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def test_importing_the_app_or_asking_for_help_loads_nothing_heavy(cli_env: dict[str, str]) -> None:
    """Every module here costs start-up time before the first frame (TensorRT alone ~0.3 s of CPU)."""
    assert loaded(cli_env, "import trt_tui.cli, trt_tui.ui.app") == []
    assert loaded(cli_env, "from trt_tui import cli\ncli.main(['--help'])") == []
    # The probe sees a module where one is imported.
    assert loaded(cli_env, "import numpy") == ["numpy"]


def test_the_app_reaches_its_first_frame_without_tensorrt(cli_env: dict[str, str], tmp_path) -> None:
    """`trt-tui DIR` validates its build options without importing TensorRT; with the default
    (process) executor, the builds import it in their own processes."""
    (tmp_path / "mnist.onnx").write_bytes(b"not read before the first frame matters")
    now = loaded(cli_env, APP_ON_A_DIRECTORY, str(tmp_path))
    assert not {"tensorrt_rtx", "tensorrt", "onnx", "numpy", "ray", "textual_serve"} & set(now), now


# `trt-tui DIR` as cli.main builds the app (before it runs), with a history whose last build needed heap.
APP_WITH_A_HEAP_HISTORY = """
import time
from pathlib import Path
from trt_tui import cli
from trt_tui.core.build.events import State
from trt_tui.core.history.records import History
from trt_tui.ui.app import make_app

with History(Path(sys.argv[3])) as history:
    history.record(model="/models/resnet50.onnx", model_hash=None, options={}, backend="tensorrt-rtx",
                   backend_version="", state=State.SUCCEEDED, error=None, started=time.time(), duration=1.0,
                   engine_bytes=1, phases={}, heap_bytes=512 << 20)
args = cli.build_parser()[0].parse_args([sys.argv[2], "--history", sys.argv[3]])
app = make_app(cli.app_config(args))
names = [n for n in names if n in sys.modules]  # what the app loaded: reported below
assert app.scheduler.executor.spare_reserve() > 0, "the history's heap did not reach the spare's reserve"
"""


def test_the_reserve_from_the_history_costs_the_first_frame_no_imports(cli_env, tmp_path) -> None:
    """The process executor's spare reserves what the history says recent builds needed; taking that
    hint when the app is made must not import psutil (the reserve's cap) ahead of the first frame."""
    assert loaded(cli_env, APP_WITH_A_HEAP_HISTORY, str(tmp_path), str(tmp_path / "history.db")) == []


def test_the_backend_version_comes_from_a_cuda_variant_wheel_without_importing_it(cli_env, tmp_path) -> None:
    """Where the TensorRT-RTX wheels were installed without the `tensorrt-rtx` front package (only
    `tensorrt_rtx_cu13`, as on the GPU host), its metadata still gives the version: an import there
    cost every `trt-tui build` parent ~0.3 s. The module here fails on import, so an import shows."""
    site = tmp_path / "site"
    (site / "tensorrt_rtx").mkdir(parents=True)
    (site / "tensorrt_rtx" / "__init__.py").write_text("raise RuntimeError('imported')\n")
    for dist in ("tensorrt_rtx_cu13", "tensorrt_rtx_cu13_bindings"):
        info = site / f"{dist}-9.9.9.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 9.9.9\n")
    code = ("import sys; sys.path.insert(0, sys.argv[1])\n"
            "from trt_tui.core.build.backend import backend_version\n"
            "print(backend_version('tensorrt-rtx'), 'tensorrt_rtx' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(site)], env=cli_env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["9.9.9", "False"]
    (site / "tensorrt_rtx_cu13-9.9.9.dist-info" / "METADATA").unlink()  # a module with no metadata: import
    (site / "tensorrt_rtx_cu13_bindings-9.9.9.dist-info" / "METADATA").unlink()
    out = subprocess.run([sys.executable, "-c", code, str(site)], env=cli_env, capture_output=True, text=True)
    assert "imported" in out.stderr


def test_the_backend_version_follows_an_upgrade_in_a_running_process(tmp_path) -> None:
    """The version is read from the listing of the site directory at each check: a long-running app
    whose TensorRT-RTX is upgraded keys its next engines with the new one."""
    from trt_tui.core.build.backend import _version_installed_in

    site = tmp_path / "site"
    site.mkdir()

    def install(dist: str, version: str) -> Path:
        info = site / f"{dist}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
        return info

    old = install("tensorrt_rtx", "1.6.0.1")
    install("tensorrt_rtx_cu13_libs", "2.0.0.1")  # another distribution of the same family
    assert _version_installed_in(site, "tensorrt-rtx") == "1.6.0.1"
    shutil.rmtree(old)
    install("tensorrt_rtx", "1.7.1.116")
    install("tensorrt_rtx_cu13", "1.7.1.116")
    assert _version_installed_in(site, "tensorrt-rtx") == "1.7.1.116"
    assert _version_installed_in(site, "tensorrt") is None


def test_a_build_imports_no_module_it_does_not_use(cli_env: dict[str, str]) -> None:
    """Every `trt-tui build` imports the CLI, parses its options and opens its session and history
    before its build starts, and with the thread executor that time comes before TensorRT's import, in
    line: the modules only a stack dump (subprocess, shutil, and through them bz2 and lzma), a random
    name (secrets, random), the app's phase estimates (statistics) or help's width (shutil again, as
    argparse's own formatter imports it) need cost ~12 ms there."""
    unused = ["subprocess", "shutil", "secrets", "random", "bz2", "lzma", "selectors", "statistics"]
    action = ("import trt_tui.cli, trt_tui.core.execution.session, trt_tui.core.history.records\n"
              "trt_tui.cli.command_parser('build').parse_args(['build', 'model.onnx', '--executor', 'thread'])")
    result = subprocess.run([sys.executable, "-c", LOADED.format(action=action), json.dumps(unused)],
                            capture_output=True, text=True, env=cli_env, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1]) == []
    # the probe sees them where they are imported: help's width as argparse finds it
    action = "import argparse\nargparse.ArgumentParser().format_help()\nimport statistics"
    result = subprocess.run([sys.executable, "-c", LOADED.format(action=action), json.dumps(unused)],
                            capture_output=True, text=True, env=cli_env, timeout=120, check=False)
    assert {"shutil", "statistics"} <= set(json.loads(result.stdout.splitlines()[-1]))


# -- events are the contract ---------------------------------------------------------------------------

PACKAGE = Path(trt_tui.core.__file__).parent.parent
# Who sees a build only through its events (folded by `core/build/tracker.py`), never through a job object.
EVENT_CONSUMERS = sorted([
    PACKAGE / "formats" / "headless.py", PACKAGE / "cli" / "commands" / "run.py", PACKAGE / "cli" / "commands" / "build.py",
    PACKAGE / "api" / "notebook.py", PACKAGE / "core" / "history" / "recorder.py",
    PACKAGE / "core" / "observe" / "trace.py", PACKAGE / "core" / "build" / "tracker.py",
    *(PACKAGE / "ui").rglob("*.py"), PACKAGE / "cli" / "ci.py", *(PACKAGE / "report").rglob("*.py"),
    *(PACKAGE / "formats").rglob("*.py"),
])
# What only a job has: its outcome and cancel flag, its times on the scheduler's clock, its spec.
JOB_ATTRIBUTES = {"outcome", "token", "submitted", "started", "finished", "spec", "state", "final", "fingerprint",
                  "forecast", "reason", "buffer", "sink", "thread", "delivered", "reported_end"}


def job_reads(path: Path) -> list[str]:
    """Where `path` imports the job module or `BuildJob`, or reads a job's attribute: `job.<attr>`,
    `<x>.job.<attr>`, `<x>.scheduler.jobs`, or an attribute only a job has (`.outcome`, `.token`, ...)."""
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        where = f"{path.relative_to(PACKAGE.parent)}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.ImportFrom):
            if (node.module or "").split(".")[-1] == "job" or any(a.name == "BuildJob" for a in node.names):
                found.append(f"{where}: imports {node.module} {[a.name for a in node.names]}")
        elif isinstance(node, ast.Attribute):
            value = node.value
            if node.attr in ("outcome", "token", "submitted", "reported_end"):
                found.append(f"{where}: reads .{node.attr}")
            elif node.attr in JOB_ATTRIBUTES and isinstance(value, ast.Name) and value.id == "job":
                found.append(f"{where}: reads job.{node.attr}")
            elif isinstance(value, ast.Attribute) and value.attr == "job" and node.attr != "id":
                found.append(f"{where}: reads .job.{node.attr}")
            elif node.attr == "jobs" and (getattr(value, "attr", None) or getattr(value, "id", "")).endswith("scheduler"):
                found.append(f"{where}: reads a scheduler's jobs")
    return found


def test_consumers_see_builds_only_through_events() -> None:
    """The app, the renderers, the history, the trace and `run` fold events; none imports or reads
    `BuildJob` (the id a submit hands back names a build, and is all they keep of it)."""
    assert PACKAGE / "ui" / "app.py" in EVENT_CONSUMERS and len(EVENT_CONSUMERS) > 20
    assert all(path.is_file() for path in EVENT_CONSUMERS), [p for p in EVENT_CONSUMERS if not p.is_file()]
    reads = [read for path in EVENT_CONSUMERS for read in job_reads(path)]
    assert reads == []


def test_the_job_reads_check_finds_what_it_forbids(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("from trt_tui.core.execution.job import BuildJob\n"
                      "def f(job, view, scheduler):\n"
                      "    return job.outcome, job.spec.model, view.job.started, scheduler.jobs[1], job.id\n")
    global PACKAGE
    saved, PACKAGE = PACKAGE, tmp_path.parent
    try:
        reads = job_reads(sample)
    finally:
        PACKAGE = saved
    assert len(reads) == 5, reads  # the import, .outcome, job.spec, .job.started, .jobs; not job.id


# -- the import order -----------------------------------------------------------------------------------

PROJECT = PACKAGE.parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")  # import-linter, of the dev extras


def lint_imports(package_parent: Path) -> subprocess.CompletedProcess:
    """import-linter's contracts (`[tool.importlinter]` in pyproject.toml, as CI checks them) over the
    `trt_tui` in `package_parent`: import-linter reads the pyproject.toml of its working directory and
    finds the package there first."""
    if package_parent != PROJECT:
        shutil.copy(PROJECT / "pyproject.toml", package_parent)
    env = {**os.environ, "PYTHONPATH": str(package_parent)}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=package_parent, env=env, capture_output=True,
                          text=True, timeout=120, check=False)


def test_the_package_keeps_its_import_order() -> None:
    """Front ends over what they drive over the core, the core's floors as each package's `__init__`
    declares them, no Textual below the app, widgets that import nothing of the app, no circles."""
    result = lint_imports(PROJECT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "BROKEN" not in result.stdout and result.stdout.count("KEPT") >= 7, result.stdout


# Imports that break the order, each inside a function (where an import is easy to miss): an arrow up
# the core's floors, a widget reaching into the app, `serve` reaching into the command line, a circle.
BREAKS = {
    "core/files/units.py": ("def _up():\n    from ..history import records\n    return records\n\n\n"
                            "def _printable():\n    from . import printable\n    return printable\n"),
    "ui/widgets/key_bar.py": "def _app():\n    from ..app import TrtTuiApp\n    return TrtTuiApp\n",
    "serve/access.py": "def _cli():\n    from ..cli import main\n    return main\n",
    "core/files/printable.py": "def _units():\n    from . import units\n    return units\n",
}
BROKEN = ["trt_tui.core.files is not allowed to import trt_tui.core.history",
          "trt_tui.ui.widgets is not allowed to import trt_tui.ui.app",
          "trt_tui.serve is not allowed to import trt_tui.cli",
          "No cycles are allowed in trt_tui.core.files"]


def test_the_import_order_check_sees_each_break(tmp_path: Path) -> None:
    copy = tmp_path / "trt_tui"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    for name, code in BREAKS.items():
        with open(copy / name, "a") as f:
            f.write("\n\n" + code)
    result = lint_imports(tmp_path)
    assert result.returncode != 0
    assert [line for line in BROKEN if line not in result.stdout] == [], result.stdout


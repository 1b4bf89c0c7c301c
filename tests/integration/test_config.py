"""The config file (`config.toml` in the user config directory): defaults for the options, checked as
the command line's are, the command line winning; `[keys]` rebinding the app's commands."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from support.commands import one_line, run_command
from support.replay import ReplayExecutor, load_trace
from support.waiting import pilot_wait

from trt_tui import cli
from trt_tui.config_file import apply_config_file
from trt_tui.core.build.events import Severity, State
from trt_tui.core.model.samples import write_samples
from trt_tui.ui.app import make_app
from trt_tui.ui.help_screen import HelpScreen
from trt_tui.ui.widgets.key_bar import KeyBar

EXIT_USAGE = 2
TRACES = Path(__file__).parent.parent / "data" / "trt-rtx-1.7-phase-traces.json"


@pytest.fixture(scope="module")
def mnist_dir(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("config-models")
    write_samples(directory, ["mnist"])
    return directory


@pytest.fixture
def config_home(tmp_path: Path) -> Path:
    """A user config directory of the test's own (XDG_CONFIG_HOME)."""
    home = tmp_path / "xdg-config"
    (home / "trt-tui").mkdir(parents=True)
    return home


def write_config(config_home: Path, text: str) -> Path:
    path = config_home / "trt-tui" / "config.toml"
    path.write_text(text)
    return path


@pytest.fixture
def trt_tui(cli_env, trt_tui_command, config_home):
    """`trt_tui(*args)`: the command, run to its end without a terminal, with `config_home` as its
    user config directory."""
    env = {**cli_env, "XDG_CONFIG_HOME": str(config_home)}

    def run(*args, extra_env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
        return run_command(trt_tui_command, {**env, **(extra_env or {})}, *args, cwd=cwd)

    return run


def printed(result: subprocess.CompletedProcess) -> dict[str, tuple[str, str]]:
    """`--print-config`'s lines: key -> (value, where it came from)."""
    assert result.returncode == 0, result.stderr
    values = {}
    for line in result.stdout.splitlines():
        setting, _, source = line.partition("  # ")
        if line.startswith("# ") and ": not set" in setting:
            values[setting[2:].split(":")[0]] = ("", source)
        elif " = " in setting:
            key, _, value = setting.partition(" = ")
            values[key] = (value, source)
    return values


def test_print_config_shows_the_files_values_and_the_command_lines_over_them(trt_tui, config_home) -> None:
    path = write_config(config_home, 'jobs = 3\nexecutor = "process"\nopt_level = 2\n'
                                     'compute-capability = ["8.9"]\nverbose = true\n')
    values = printed(trt_tui("--print-config", "-j", "5", "--compute-capability", "12.0"))
    assert values["jobs"] == ("5", "command line")
    assert values["executor"] == ('"process"', str(path))
    assert values["opt-level"] == ("2", str(path))  # opt_level and opt-level are one key
    assert values["verbose"] == ("true", str(path))
    # A repeatable option from the command line replaces the file's values rather than adding to them.
    assert values["compute-capability"] == ('["12.0"]', "command line")
    assert values["cancel-grace"] == ("0.5", "default")
    assert values["workspace"] == ("", "default")
    assert values["cancel"] == ('"c"', "default")


def test_a_build_takes_its_history_from_the_file_and_the_command_line_wins(trt_tui, config_home, mnist_dir,
                                                                             tmp_path) -> None:
    """The file's `history` is where `trt-tui build` records; `--history` on the command line is used instead."""
    from_file, from_command_line = tmp_path / "file-history.sqlite3", tmp_path / "cli-history.sqlite3"
    write_config(config_home, f"history = {str(from_file)!r}\n")
    result = trt_tui("build", mnist_dir / "mnist.onnx", "-o", tmp_path / "a.engine", "--executor", "thread")
    assert result.returncode == 0, result.stderr
    assert from_file.is_file()
    from_file.unlink()
    result = trt_tui("build", mnist_dir / "mnist.onnx", "-o", tmp_path / "b.engine", "--executor", "thread",
                     "--history", from_command_line)
    assert result.returncode == 0, result.stderr
    assert from_command_line.is_file() and not from_file.exists()


BAD_FILES = [
    ("jobs = 0\n", "jobs", "must be 1 to 256, not 0"),
    ('jobs = "many"\n', "jobs", "'many' is not a whole number"),
    ('executor = "slurm"\n', "executor", "must be one of thread, process, ray, not 'slurm'"),
    ("verbose = 1\n", "verbose", "must be true or false"),
    ("jbos = 3\n", "jbos", "no such option (did you mean jobs?)"),
    ('shapes = "input"\n', "shapes", "should look like NAME:1x3x224x224"),
    ("jobs = {n = 1}\n", "jobs", "must be text or a number, as --jobs takes, not {'n': 1}"),
    ("[jobz]\nn = 1\n", "jobz", "no such table"),
]


@pytest.mark.parametrize(("text", "key", "problem"), BAD_FILES, ids=[key + ":" + text.split("=")[-1].strip()
                                                                       for text, key, _ in BAD_FILES])
def test_a_bad_value_is_one_line_naming_the_file_and_key_and_nothing_builds(trt_tui, config_home, mnist_dir,
                                                                            tmp_path, text, key, problem) -> None:
    path = write_config(config_home, text)
    engine = tmp_path / "mnist.engine"
    result = trt_tui("build", mnist_dir / "mnist.onnx", "-o", engine)
    assert result.returncode == EXIT_USAGE
    line = one_line(result)
    assert line.startswith(f"trt-tui: {path}: {key}: ") and problem in line, line
    assert not engine.exists()


def test_a_file_that_is_not_toml_names_the_file_and_the_line(trt_tui, config_home, mnist_dir) -> None:
    path = write_config(config_home, "jobs = 2\nexecutor = process\n")
    result = trt_tui(mnist_dir)
    assert result.returncode == EXIT_USAGE
    line = one_line(result)
    assert line.startswith(f"trt-tui: {path}: not valid TOML: ") and "line 2" in line, line


@pytest.mark.parametrize(("keys", "problem"), [
    ('cancel = "r"', "'r' for cancel is already the key of rebuild"),
    ('cancle = "x"', "'cancle' is not a command"),
    ('cancel = "banana"', "'banana' is not a key"),
    ('cancel = 7', 'must be a table of action = "key"'),
])
def test_a_bad_key_remap_stops_the_app_before_it_starts(trt_tui, config_home, mnist_dir, keys, problem) -> None:
    path = write_config(config_home, f"[keys]\n{keys}\n")
    result = trt_tui(mnist_dir)
    assert result.returncode == EXIT_USAGE
    line = one_line(result)
    assert line.startswith(f"trt-tui: {path}: keys: ") and problem in line, line


def test_a_bad_theme_from_the_file_names_the_file_and_the_themes(trt_tui, config_home, mnist_dir) -> None:
    path = write_config(config_home, 'theme = "nope"\n')
    result = trt_tui(mnist_dir)
    assert result.returncode == EXIT_USAGE
    line = one_line(result)
    assert line.startswith(f"trt-tui: {path}: theme: --theme nope: no such theme; known themes: trt-dark"), line


def test_trt_tui_config_names_another_file(trt_tui, tmp_path) -> None:
    elsewhere = tmp_path / "team.toml"
    elsewhere.write_text("jobs = 7\n")
    values = printed(trt_tui("--print-config", extra_env={"TRT_TUI_CONFIG": str(elsewhere)}))
    assert values["jobs"] == ("7", str(elsewhere))
    missing = tmp_path / "missing.toml"
    result = trt_tui("--print-config", extra_env={"TRT_TUI_CONFIG": str(missing)})
    assert result.returncode == EXIT_USAGE
    assert one_line(result) == f"trt-tui: {missing}: no such file ($TRT_TUI_CONFIG names it)"


def test_list_themes_prints_the_names_theme_takes(trt_tui) -> None:
    result = trt_tui("--list-themes")
    assert result.returncode == 0, result.stderr
    names = result.stdout.split()
    assert names[:2] == ["trt-dark", "trt-light"] and "textual-dark" in names


async def test_a_remapped_key_runs_its_command_and_the_old_key_does_not(config_home, mnist_dir, monkeypatch) -> None:
    """`[keys] cancel = "k"`: k cancels the running build, c no longer does, and the key bar, the help
    and the palette say k. The file's `log-level` is the log pane's at start."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config_home))
    monkeypatch.delenv("TRT_TUI_CONFIG", raising=False)
    write_config(config_home, 'log-level = "warning"\n[keys]\ncancel = "k"\n')
    parser = cli.app_parser()
    apply_config_file(parser, cli.every_parser)
    config = cli.app_config(parser.parse_args([str(mnist_dir)]))
    events, engine_bytes = load_trace(TRACES, "mnist.onnx:full")
    app = make_app(config, executor=ReplayExecutor(events, engine_bytes, hold_at=len(events) // 2))
    async with app.run_test(size=(160, 48)) as pilot:
        assert app.log_pane.min_severity is Severity.WARNING
        assert "level warning" in str(app.screen.query_one("#log-title").render())
        await pilot.press("enter")
        await pilot_wait(pilot, lambda: 1 in app.views and app.views[1].state is State.BUILDING)
        bar = app.screen.query_one(KeyBar).render().plain
        assert "k Cancel" in bar and "c Cancel" not in bar, bar
        await pilot.press("c")
        await pilot.pause(0.3)
        assert app.views[1].state is State.BUILDING
        await pilot.press("k")
        await pilot_wait(pilot, lambda: app.views[1].state.final)
        assert app.views[1].state is State.CANCELLED
        await pilot.press("question_mark")
        await pilot_wait(pilot, lambda: isinstance(app.screen, HelpScreen))
        assert "k  cancel the selected build" in app.screen.text()
        await pilot.press("escape")
        entries = {c.title: c.help for c in app.get_system_commands(app.screen)}
        assert entries["Cancel"].startswith("k · ")
        await pilot.press("q")
        await pilot_wait(pilot, lambda: app.return_code is not None)


def test_a_projects_pyproject_table_is_read_over_the_users_file(trt_tui, config_home, tmp_path) -> None:
    """`[tool.trt-tui]` of the nearest pyproject.toml is nearer the models, so it wins over the user's file;
    its errors name the table."""
    user = write_config(config_home, 'jobs = 3\nexecutor = "process"\n')
    project = tmp_path / "project"
    (project / "models").mkdir(parents=True)
    pyproject = project / "pyproject.toml"
    pyproject.write_text('[project]\nname = "p"\n\n[tool.trt-tui]\njobs = 4\n\n[tool.trt-tui.keys]\ncancel = "k"\n')
    values = printed(trt_tui("--print-config", cwd=project / "models"))
    assert values["jobs"] == ("4", str(pyproject))
    assert values["executor"] == ('"process"', str(user))
    assert values["cancel"] == ('"k"', str(pyproject))
    pyproject.write_text("[tool.trt-tui]\njobs = 0\n")
    result = trt_tui("--print-config", cwd=project / "models")
    assert result.returncode == EXIT_USAGE
    assert one_line(result) == f"trt-tui: {pyproject}: tool.trt-tui.jobs: must be 1 to 256, not 0"


def test_the_config_directory_is_platformdirs_own(monkeypatch, tmp_path) -> None:
    """Worked out without importing platformdirs where that is possible; the same directory."""
    from platformdirs import user_config_dir

    from trt_tui.config_file import user_config_dir as ours

    for xdg in (str(tmp_path / "xdg"), "", None):
        if xdg is None:
            monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
        else:
            monkeypatch.setenv("XDG_CONFIG_HOME", xdg)
        assert ours() == Path(user_config_dir("trt-tui"))


def test_run_checks_the_keys_of_its_app_too(trt_tui, config_home) -> None:
    """`trt-tui run` opens the same app: a bad [keys] stops it before the program starts."""
    path = write_config(config_home, '[keys]\ncancel = "r"\n')
    result = trt_tui("run", "--", "python", "-c", "print('ran')")
    assert result.returncode == EXIT_USAGE
    assert one_line(result).startswith(f"trt-tui: {path}: keys: 'r' for cancel is already the key of rebuild")


async def test_two_commands_may_swap_their_keys(config_home, mnist_dir, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config_home))
    monkeypatch.delenv("TRT_TUI_CONFIG", raising=False)
    write_config(config_home, '[keys]\ncancel = "r"\nrebuild = "c"\n')
    parser = cli.app_parser()
    apply_config_file(parser, cli.every_parser)
    events, engine_bytes = load_trace(TRACES, "mnist.onnx:full")
    app = make_app(cli.app_config(parser.parse_args([str(mnist_dir)])), executor=ReplayExecutor(events, engine_bytes))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        active = app.screen.active_bindings
        assert active["r"].binding.action == "cancel" and active["c"].binding.action == "rebuild"
        await pilot.press("q")
        await pilot_wait(pilot, lambda: app.return_code is not None)

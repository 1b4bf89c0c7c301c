"""trt-tui opens as its build history only a SQLite file it created (marked with SQLite's application
id), one an earlier trt-tui wrote (known by its tables, then marked), or a new one. Another program's
database named as the history (a browser's, say) is refused in one line, exit 2, and left
byte-identical, with no -wal or -shm file made beside it."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from support.commands import one_error, run_command
from support.history import OLD_DB

from trt_tui.core.history.ownership import APPLICATION_ID
from trt_tui.core.history.records import History
from trt_tui.core.model.samples import write_samples

EXIT_USAGE = 2


@pytest.fixture(scope="module")
def mnist(tmp_path_factory) -> Path:
    (model,) = write_samples(tmp_path_factory.mktemp("ownership-models"), ["mnist"])
    return model


def browser_database(path: Path, journal: str = "wal", application_id: int = 0) -> Path:
    """A database as another program leaves it: its own tables and rows, in `journal` mode."""
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA journal_mode = {journal}")
    if application_id:
        db.execute(f"PRAGMA application_id = {application_id}")
    db.execute("CREATE TABLE moz_places (id INTEGER PRIMARY KEY, url TEXT, visits INTEGER)")
    db.executemany("INSERT INTO moz_places (url, visits) VALUES (?, ?)", [(f"https://e.example/{i}", i) for i in range(50)])
    db.commit()
    db.close()
    return path


def application_id(path: Path) -> int:
    db = sqlite3.connect(path)
    try:
        return db.execute("PRAGMA application_id").fetchone()[0]
    finally:
        db.close()


@pytest.mark.parametrize(("journal", "app_id"), [("wal", 0), ("delete", 0), ("delete", 0x0F055112)])
def test_another_programs_database_is_refused_and_left_byte_identical(
        journal, app_id, tmp_path, mnist, cli_env, trt_tui_command) -> None:
    places = browser_database(tmp_path / "places.sqlite", journal, app_id)
    before = places.read_bytes()
    history = ["--history", str(places)]
    commands = [["history", *history], ["history", "--json", *history], ["history", "diff", "1", "2", *history],
                ["bundle", "1", *history], ["build", str(mnist), "-o", str(tmp_path / "m.engine"), *history],
                ["watch", str(tmp_path), *history], ["run", *history, "--", "true"]]
    for args in commands:
        result = run_command(trt_tui_command, cli_env, *args, cwd=tmp_path, timeout=60)
        assert result.returncode == EXIT_USAGE, (args, result.stdout, result.stderr)
        assert str(places) in one_error(result) and "not a trt-tui build history" in result.stderr
        assert places.read_bytes() == before, args
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("places")) == ["places.sqlite"], args
    # $TRT_TUI_HISTORY names it just as well
    result = run_command(trt_tui_command, {**cli_env, "TRT_TUI_HISTORY": str(places)}, "build", str(mnist), "-o",
                         str(tmp_path / "m.engine"), cwd=tmp_path)
    assert result.returncode == EXIT_USAGE and "not a trt-tui build history" in one_error(result)
    assert places.read_bytes() == before and not (tmp_path / "m.engine").exists()


def test_a_history_an_earlier_trt_tui_wrote_opens_and_is_marked(tmp_path, mnist, cli_env, trt_tui_command) -> None:
    old = tmp_path / "history.sqlite3"
    shutil.copy(OLD_DB, old)
    with History(old, create=False) as history:
        earlier = [record.id for record in history.builds(None, limit=1000)]
    assert earlier and application_id(old) == APPLICATION_ID
    result = run_command(trt_tui_command, cli_env, "build", str(mnist), "-o", str(tmp_path / "m.engine"), "--history",
                         str(old), "--force", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    listed = run_command(trt_tui_command, cli_env, "history", "--json", "-n", "1000", "--history", str(old))
    assert listed.returncode == 0 and len(listed.stdout.splitlines()) == len(earlier) + 1, listed.stderr


def test_a_new_or_empty_history_is_created_and_marked(tmp_path, mnist, cli_env, trt_tui_command) -> None:
    for history in (tmp_path / "new" / "history.sqlite3", tmp_path / "empty.sqlite3"):
        if history.name == "empty.sqlite3":
            history.write_bytes(b"")
        result = run_command(trt_tui_command, cli_env, "build", str(mnist), "-o", str(tmp_path / "m.engine"),
                             "--history", str(history), "--force", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert application_id(history) == APPLICATION_ID
        with History(history, create=False) as records:
            assert [record.state for record in records.builds(None)] == ["succeeded"]


def test_a_file_that_is_no_database_is_refused_unchanged(tmp_path, cli_env, trt_tui_command) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("SQLite is not in here\n" * 20)
    before = notes.read_bytes()
    result = run_command(trt_tui_command, cli_env, "history", "--history", str(notes))
    assert result.returncode == EXIT_USAGE and str(notes) in one_error(result)
    assert notes.read_bytes() == before


def test_two_processes_creating_one_new_history_both_record(tmp_path, mnist, cli_env, trt_tui_command) -> None:
    """A history another trt-tui is creating this moment (no tables yet, not yet marked) is a new one."""
    history = tmp_path / "history.sqlite3"
    procs = [subprocess.Popen([*trt_tui_command, "build", str(mnist), "-o", str(tmp_path / f"m{i}.engine"),
                               "--history", str(history)], env=cli_env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) for i in range(2)]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0 and "history" not in err, err
    with History(history, create=False) as records:
        assert len(records.builds(None)) == 2

"""One program's connection to the collector cannot take the app over: a client flooding log lines
gets a bounded rate into the app with the rest counted (and the count shown in its build's log),
one announcing builds without end gets a bounded number followed (a thread each), the rest refused
with a count, and `q` is answered promptly throughout.

The real app through its pilot, listening on its real socket; the client a real process speaking
the collector's protocol as fast as the socket takes it (`tests/programs/collector_flood.py`)."""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from support.waiting import pilot_wait

from trt_tui.core.execution.session_settings import SessionSettings
from trt_tui.run.collector.intake import MAX_OPEN_BUILDS
from trt_tui.run.output import BURST
from trt_tui.ui.app import AppConfig, TrtTuiApp

FLOOD = Path(__file__).parent.parent / "programs" / "collector_flood.py"
LINES = 200_000  # the smaller flood: it took the app 7.5 s to answer q after it (a minute here)
BUILDS = 5_000
QUIT_WITHIN = 3.0  # seconds from q to the app's end; a second on an idle machine (BENCHMARKS.md)


def make(tmp_path: Path) -> TrtTuiApp:
    folder = tmp_path / "no-models"
    folder.mkdir(exist_ok=True)
    return TrtTuiApp(AppConfig(paths=[str(folder)],
                               session=SessionSettings(history=str(tmp_path / "h.sqlite3"), executor="thread")))


@pytest.fixture
def client():
    """`client(kind, count)`: the flooding program, started; it holds its connection until the test ends."""
    started: list[subprocess.Popen] = []

    def start(kind: str, count: int) -> subprocess.Popen:
        started.append(subprocess.Popen([sys.executable, str(FLOOD), kind, str(count)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                        env=dict(os.environ)))
        return started[-1]

    yield start
    for process in started:
        process.stdin.close()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()


def sent(process: subprocess.Popen) -> bool:
    """Whether the client has sent everything (it says so on its stdout; a read would block before)."""
    return bool(select.select([process.stdout], [], [], 0)[0]) and process.stdout.readline() == "sent\n"


async def quit_time(pilot, app: TrtTuiApp) -> float:
    started = time.monotonic()
    await pilot.press("q")
    await pilot_wait(pilot, lambda: app.return_code is not None, 60)
    return time.monotonic() - started


async def test_a_flood_of_log_lines_is_shown_at_a_bounded_rate_with_the_rest_counted(tmp_path, client) -> None:
    app = make(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot_wait(pilot, lambda: app.collector is not None and app.collector.listening, 30)
        flood = client("logs", LINES)
        started = time.monotonic()
        done, noted = False, False

        def flood_sent() -> bool:  # the note is a toast, gone after a few seconds: looked for meanwhile
            nonlocal done, noted
            noted = noted or any("sends more than the app can show" in n.message for n in app._notifications)
            done = done or sent(flood)
            return done and noted

        await pilot_wait(pilot, flood_sent, 120)
        await pilot_wait(pilot, lambda: any(v.state.final for v in app.views.values()), 30)
        took = time.monotonic() - started
        view = next(iter(app.views.values()))
        lines = list(view.logs.text_lines())
        counts = [int(m.group(1)) for line in lines if (m := re.search(r"trt-tui: (\d+) log lines of .* not shown", line))]
        shown = len(lines) - len(counts)
        assert counts, "no line says how many were left out"
        assert shown + sum(counts) == LINES, (shown, sum(counts))  # every line shown or counted
        assert shown <= BURST + 500 * (took + 1), (shown, took)
        quit_took = await quit_time(pilot, app)
    assert quit_took < QUIT_WITHIN, f"q took {quit_took:.1f}s after the flood"


async def test_q_is_answered_during_a_flood(tmp_path, client) -> None:
    app = make(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot_wait(pilot, lambda: app.collector is not None and app.collector.listening, 30)
        flood = client("logs", 5 * LINES)  # some 20 s of sending: q comes early in it
        await pilot_wait(pilot, lambda: any(v.logs.total > 0 for v in app.views.values()), 60)
        assert flood.poll() is None and not sent(flood), "the flood ended before q could be pressed during it"
        quit_took = await quit_time(pilot, app)
    assert quit_took < QUIT_WITHIN, f"q took {quit_took:.1f}s during the flood"


def follow_threads() -> int:
    return sum(1 for thread in threading.enumerate() if thread.name.startswith("trt-tui-follow-"))


async def test_builds_one_connection_announces_are_followed_up_to_a_limit(tmp_path, client) -> None:
    """5,000 builds on one connection: a bounded number followed (threads, rows), the rest refused
    and counted in a note once the connection ends."""
    app = make(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot_wait(pilot, lambda: app.collector is not None and app.collector.listening, 30)
        many = client("builds", BUILDS)
        done, noted = False, False

        def all_sent() -> bool:  # the note is a toast, gone after a few seconds: looked for meanwhile
            nonlocal done, noted
            noted = noted or any("announced more builds than the app follows" in n.message for n in app._notifications)
            done = done or sent(many)
            return done and noted and len(app.views) >= MAX_OPEN_BUILDS

        await pilot_wait(pilot, all_sent, 120)
        await pilot.pause(1.0)  # what more the announcements would have made
        assert len(app.views) == MAX_OPEN_BUILDS
        assert follow_threads() <= MAX_OPEN_BUILDS
        many.stdin.close()  # the program ends: its builds end, and what it was refused is counted
        await pilot_wait(pilot, lambda: any(f"{BUILDS - MAX_OPEN_BUILDS} builds" in n.message
                                            for n in app._notifications), 30)
        await pilot_wait(pilot, lambda: all(v.state.final for v in app.views.values()), 30)
        quit_took = await quit_time(pilot, app)
    assert quit_took < QUIT_WITHIN
    assert follow_threads() == 0

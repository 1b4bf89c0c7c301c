"""The real app on a real pseudo-terminal (`support.terminal`): what reaches the terminal, and the app
under job control. The pilot renders into no terminal and sends no signals, so these read the app's
raw output and signal its process, as a user's terminal and shell do."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from support.terminal import AppOwningATerminal

# Sequences a name can carry, each one a terminal acts on: OSC 52 sets the clipboard (to `rm -rf ~`
# here), OSC 0 the window's title, CSI 21 t asks the terminal to type its title back as input.
CLIPBOARD = "a\x1b]52;c;cm0gLXJmIH4K\x1b\\.onnx"
TITLE = "b\x1b]0;pwned\x07.onnx"
REPORT = "c\x1b[21t.onnx"
STARTED = 20.0  # seconds for the app to draw its first screen on a loaded machine


@pytest.fixture
def app_on(cli_env):
    """`app_on(path)`: the app on a terminal, closed after the test whatever happens."""
    apps: list[AppOwningATerminal] = []

    def start(path: Path) -> AppOwningATerminal:
        apps.append(AppOwningATerminal([path], cli_env))
        return apps[-1]

    yield start
    for app in apps:
        app.close()


def test_escape_sequences_in_file_names_never_reach_the_terminal(app_on, sample_dir, tmp_path) -> None:
    """Each name shows with its escapes written out (`\\x1b`), and not one byte of a sequence it
    carries is written to the terminal as a sequence."""
    for name in (CLIPBOARD, TITLE, REPORT):
        os.link(sample_dir / "mnist.onnx", tmp_path / name)
    app = app_on(tmp_path)
    assert app.read_until(b"a\\x1b]52;c;cm0gLXJmIH4K\\x1b\\.onnx", STARTED), bytes(app.output[-2000:])
    app.read_for(2.0)  # the details of the highlighted one, the model info read on a thread
    app.type(b"q")
    assert app.exits_within(10) == 0
    output = bytes(app.output)
    assert b"\x1b]52" not in output and b"\x1b]0;" not in output and b"\x1b[21t" not in output
    assert b"b\\x1b]0;pwned\\x07.onnx" in output and b"c\\x1b[21t.onnx" in output


def test_keys_are_read_after_a_plain_stop_and_continue(app_on, sample_dir) -> None:
    """`kill -STOP` then `kill -CONT` (three times over): the app goes on reading keys, and `q` ends it.
    (Textual resumed its terminal mode on every SIGCONT, a second input thread each time, and a
    quit then waited for one of them for good.)"""
    app = app_on(sample_dir)
    assert app.read_until(b"mnist", STARTED)
    app.read_for(1.0)
    for _ in range(3):
        os.kill(app.process.pid, signal.SIGSTOP)
        time.sleep(0.2)
        os.kill(app.process.pid, signal.SIGCONT)
        app.read_for(0.5)
    app.type(b"q")
    assert app.exits_within(10) == 0, bytes(app.output[-2000:])


def test_ctrl_z_and_fg_still_suspend_and_resume_the_app(app_on, sample_dir) -> None:
    """SIGTSTP (Ctrl-Z) gives the terminal back (the alternate screen is left), SIGCONT (`fg`) takes
    it again, and keys are read after."""
    app = app_on(sample_dir)
    assert app.read_until(b"mnist", STARTED)
    app.read_for(1.0)
    os.kill(app.process.pid, signal.SIGTSTP)
    assert app.read_until(b"\x1b[?1049l", 10), "the alternate screen was not left"
    entered = app.output.count(b"\x1b[?1049h")
    os.kill(app.process.pid, signal.SIGCONT)
    app.read_for(2.0)
    assert app.output.count(b"\x1b[?1049h") == entered + 1, "the app did not take the terminal back"
    app.type(b"q")
    assert app.exits_within(10) == 0, bytes(app.output[-2000:])

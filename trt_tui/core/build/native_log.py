"""TensorRT's own logger for a build that has stdout to itself: lines filtered in C++, read back.

Why: TensorRT calls its logger for every line it has, whatever severity anyone asked for, and a Python
`ILogger` costs a trip through pybind11 (the GIL, the override's lookup, a new enum, a new str) for
each of them. A build of a model with many nodes logs tens of thousands of lines, nearly all of them
verbose, so even a Python logger that does nothing costs a visible share of a short build (BENCHMARKS.md
has the figure). `trt.Logger(min_severity)` drops them in
C++ for nothing, but prints what it keeps to stdout and cannot say which build a line belongs to.

So where a process's stdout is nobody else's and its builds run one at a time (`dedicated_stdout`: the
process executor's child, which runs one build, and `trt-tui build` with the thread executor and one
build at a time), the build borrows it (`capture`): file descriptor 1 becomes a pipe, and a thread
reads TensorRT's lines back (`[date-time] [TRT] [W] message`) into the build's `MonitorState.log`, as
the Python logger would have passed them. A line without that prefix (a continuation of a multi-line
message, or anything else that wrote to stdout) keeps the severity of the line before it, so it is
neither lost nor scribbled over the screen. A build that starts while another has stdout keeps the
Python logger (TensorRT-RTX 1.7 calls each Builder's own logger, checked, so the two never mix); so
does a verbose build, which wants every line anyway, and for which the C++ logger would make ~15 small
`write` calls a line.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
import threading
from collections.abc import Iterator

from .events import Severity
from .monitor import MonitorState

_LINE = re.compile(r"\[[^\]]*\] \[TRT\] \[([FEWIV])\] ")  # trt.Logger's prefix: time, source, severity
_LEVELS = {"F": Severity.INTERNAL_ERROR, "E": Severity.ERROR, "W": Severity.WARNING, "I": Severity.INFO,
           "V": Severity.VERBOSE}
_SYNC = b"\x00trt-tui-sync"  # a line `settle` writes: once the reader passed it, it passed every line before

_dedicated = False
_lent = threading.Lock()  # held while stdout is lent to one build's logger
_loggers: list = []  # TensorRT may call a logger until the process ends: keep each one alive till then


@contextlib.contextmanager
def dedicated_stdout() -> Iterator[None]:
    """While this is entered, this process's stdout may be lent to TensorRT's own logger, one build at
    a time: in the process executor's child and in `trt-tui build` with the thread executor, nothing
    else writes to file descriptor 1. Python's `sys.stdout` moves to a duplicate of it meanwhile, so
    what the program prints (the headless renderer's progress) still goes where it went and never into
    a build's log; a stream made meanwhile keeps writing there after the block (it closes with it)."""
    global _dedicated
    if _dedicated:
        yield
        return
    stream = sys.stdout
    moved = None
    try:
        if isinstance(stream, io.TextIOWrapper) and stream.fileno() == 1:
            stream.flush()
            moved = open(os.dup(1), "w", encoding=stream.encoding, errors=stream.errors,
                         buffering=1 if stream.line_buffering else -1)
            moved.reconfigure(write_through=stream.write_through)
            sys.stdout = moved
    except (AttributeError, OSError, ValueError):
        pass  # not a real descriptor (a test's capture): nothing reaches 1 through it
    _dedicated = True
    try:
        yield
    finally:
        _dedicated = False
        if moved is not None:
            with contextlib.suppress(Exception):
                moved.flush()
            if sys.stdout is moved:
                sys.stdout = stream


class _Reader:
    """Reads the pipe's lines into `state.log` until end-of-file. Never raises: a reader that died
    would leave TensorRT writing into a pipe nobody empties, which blocks the build once it is full."""

    def __init__(self, fd: int, state: MonitorState, min_severity: Severity) -> None:
        self._fd = fd
        self._state = state
        self._min = min_severity
        self._level = Severity.INFO
        self._synced = threading.Condition()
        self._syncs = 0
        self.thread = threading.Thread(target=self._run, name="trt-tui-native-log", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        pending = b""
        while True:
            try:
                chunk = os.read(self._fd, 65536)  # retried by Python itself when a signal interrupts it
            except OSError:
                chunk = b""
            if not chunk:
                break
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                self._line(line)
        if pending:
            self._line(pending)
        with contextlib.suppress(OSError):
            os.close(self._fd)

    def _line(self, raw: bytes) -> None:
        if raw == _SYNC:
            with self._synced:
                self._syncs += 1
                self._synced.notify_all()
            return
        try:
            text = raw.decode("utf-8", "replace").rstrip("\r")
            match = _LINE.match(text)
            if match is not None:
                self._level = _LEVELS[match.group(1)]
                text = text[match.end():]
            elif not text:
                return
            self._state.log(self._level, text, self._min)
        except BaseException:
            pass

    def wait_for_sync(self, count: int, timeout: float) -> None:
        with self._synced:
            self._synced.wait_for(lambda: self._syncs >= count, timeout)


class Capture:
    """While entered, file descriptor 1 is a pipe that a thread reads into `state`. `logger` is the C++
    logger for the build's Builder and parser; `settle` waits for the lines logged so far."""

    def __init__(self, trt, state: MonitorState, min_severity: Severity) -> None:
        self.logger = trt.Logger(trt.ILogger.Severity(int(min_severity)))
        _loggers.append(self.logger)
        self._state = state
        self._min = min_severity
        self._syncs = 0
        self._saved = -1
        self._reader: _Reader | None = None

    def __enter__(self) -> Capture:
        try:
            _flush_python_streams()
            self._saved = os.dup(1)
            read_end, write_end = os.pipe()
            try:
                os.dup2(write_end, 1)
            finally:
                os.close(write_end)
            self._reader = _Reader(read_end, self._state, self._min)
        except BaseException:
            self._give_back()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self._give_back()

    def _give_back(self) -> None:
        """stdout back where it was; the pipe's last write end closes with it, so the reader reads
        what is left and stops, and every line written before now has reached `state`."""
        try:
            if self._saved >= 0:
                _flush_python_streams()
                _flush_c_stdio()
                os.dup2(self._saved, 1)
                os.close(self._saved)
                self._saved = -1
            if self._reader is not None:
                self._reader.thread.join(5.0)
        finally:
            _lent.release()

    def settle(self, timeout: float = 2.0) -> None:
        """Return once every line logged so far has reached the build's `log` (its last error, say)."""
        if self._reader is None:
            return
        self._syncs += 1
        try:
            os.write(1, b"\n" + _SYNC + b"\n")  # on a line of its own, whatever came before it
        except OSError:
            return
        self._reader.wait_for_sync(self._syncs, timeout)


def capture(trt, state: MonitorState, min_severity: Severity) -> Capture | None:
    """Lend stdout to TensorRT's C++ logger at `min_severity` for one build, its lines read back into
    `state`: a context manager, or None where stdout is not this process's to lend (`dedicated_stdout`)
    or is lent to another build already (its lines could not be told apart; that build keeps the
    Python logger, which TensorRT-RTX calls per Builder)."""
    if not _dedicated or not _lent.acquire(blocking=False):
        return None
    try:
        return Capture(trt, state, min_severity)
    except BaseException:
        _lent.release()
        raise


def _flush_python_streams() -> None:
    for stream in (sys.stdout, sys.stderr, sys.__stdout__):
        if stream is not None:
            with contextlib.suppress(Exception):
                stream.flush()


def _flush_c_stdio() -> None:
    """C's stdout may buffer what TensorRT wrote (it does not when stdout is a pipe, here; elsewhere
    it might): flush it before stdout changes under it."""
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):
        pass

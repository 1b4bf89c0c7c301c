"""Waiting for a condition: on the test's thread, or under the app's pilot (which keeps the app going)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest


def wait_until(condition, timeout: float = 120.0, what: str = "condition") -> None:
    """Block this thread until `condition()` holds; fails the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.01)


async def pilot_wait(pilot, condition, timeout: float = 90.0, step: float = 0.05) -> float:
    """Pause the app's pilot until `condition()` holds; returns the seconds it took (fails on timeout)."""
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > timeout:
            raise AssertionError(f"condition not met within {timeout}s")
        await pilot.pause(step)
    return time.monotonic() - start


def alive(pid: int) -> bool:
    """True while `pid` runs; a zombie (dead, not reaped by its parent) counts as not running."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"

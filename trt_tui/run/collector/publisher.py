"""A session's builds, forwarded to the collector: `trt_tui.observe` and `trt-tui run` follow their
builds in a scheduler of their own, and a subscriber of it reports each build to the listening app as
a hooked program's reporter would (announce, events, final state), and turns the app's cancel into
the scheduler's. Their events carry their vitals already (`sampled`).

One connection per building process (a build `trt-tui run` follows may be in a worker of its
program): the app then reads that process's stacks. With no app listening a build is not reported;
one that starts after the app did is.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from collections.abc import Callable
from dataclasses import replace

from ...core.build.events import Finished
from ...core.execution.scheduler_protocol import JobView
from ..relays import ObservedSpec
from ..reporter import Reporter
from .client import new_reporter


class _CancelFromApp:
    """The reporter's cancel flag for one build: the app's cancel becomes the scheduler's."""

    def __init__(self, scheduler, job_id: int) -> None:
        self.scheduler = scheduler
        self.job_id = job_id

    def set(self) -> None:
        self.scheduler.cancel(self.job_id)


class Publisher:
    """Subscribe it to a scheduler (`scheduler.subscribe(publisher)`); it never raises."""

    def __init__(self, scheduler, program: str, include: Callable[[JobView], bool] = lambda job: True,
                 pid_of: Callable[[JobView], int] = lambda job: os.getpid(), sampled: bool = True) -> None:
        """`pid_of(job)`: the process that builds `job`, asked only of the jobs `include` takes."""
        self.scheduler = scheduler
        self.program = program
        self.include = include
        self.pid_of = pid_of
        self.sampled = sampled
        self.reporters: dict[int, Reporter] = {}  # by building process
        self.builds: dict[int, tuple[Reporter, int, Callable]] = {}  # job id -> (reporter, local id, sink)
        self.passed: set[int] = set()  # jobs not reported (not included, no app, over)

    def __call__(self, job_id: int, events) -> None:
        try:
            if job_id in self.passed:
                return
            job = self.scheduler.jobs.get(job_id)  # a transport's end: it reads its own scheduler's job
            if job is None:
                self.passed.add(job_id)
                return
            self._forward(job, events)
        except Exception:  # reporting is a convenience: the build and its own display go on
            self.passed.add(job_id)

    def _forward(self, job, events) -> None:
        if job.id in self.passed:
            return
        build = self.builds.get(job.id)
        if build is None:
            build = self._announce(job)
            if build is None:
                self.passed.add(job.id)
                return
        reporter, local, sink = build
        for event in events:
            sink(replace(event, job=local))
        if any(isinstance(event, Finished) for event in events):
            reporter.end_build(local)
            del self.builds[job.id]
            self.passed.add(job.id)
            if all(other is not reporter for other, _, _ in self.builds.values()):
                self._let_go(reporter)

    def _let_go(self, reporter: Reporter) -> None:
        """Its builds are over: end its connection (after what was sent), and its two threads with it,
        so that a notebook observing build after build keeps no connection per build."""
        self.reporters = {pid: other for pid, other in self.reporters.items() if other is not reporter}
        conn = reporter.conn
        if conn is not None:
            with contextlib.suppress(OSError):
                sock = socket.socket(fileno=os.dup(conn.fileno()))
                sock.shutdown(socket.SHUT_RDWR)  # wakes its reader, where a close would not
                sock.close()

    def _announce(self, job):
        if not self.include(job):
            return None
        pid = self.pid_of(job)
        reporter = self.reporters.get(pid)
        if reporter is None or reporter.broken:
            reporter = new_reporter(self.program, self.sampled, pid)
            if reporter is None:
                return None
            self.reporters[pid] = reporter
        started = reporter.start_build(str(job.spec.model), job.spec.options.backend, None, time.monotonic(),
                                       token=_CancelFromApp(self.scheduler, job.id))
        if started is None:
            return None
        local, sink, _token = started
        build = self.builds[job.id] = (reporter, local, sink)
        return build


def run_publisher(run) -> Publisher:
    """For `trt-tui run`: the builds of its program (not the program itself), each with the process
    that builds it; sampled where the run samples them."""
    return Publisher(run.scheduler, run.name, include=lambda job: isinstance(job.spec, ObservedSpec),
                     pid_of=_observed_pid, sampled=run.relays.vitals is not None)


def _observed_pid(job: JobView) -> int:
    spec = job.spec
    assert isinstance(spec, ObservedSpec)  # the only builds `run_publisher` includes
    return spec.pid

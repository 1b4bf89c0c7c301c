"""Vitals: is a build working or stuck? Read from outside the process that runs it.

TensorRT can sit for seconds inside one step without a callback (most of the DenseNet sample's
build is one step of "Determining refit engines"). The phase tree freezes meanwhile; these readings say
whether the build is still working.

A `VitalsWatch` is a sampler thread in the process that *owns* the build's process: the parent for
the process executor (it samples the child), the build's own process for the thread executor, and the
task's own worker for the Ray executor (the caller cannot read a process on another node: the readings
travel back with the build's events, so a worker that is stopped reports nothing rather than
"stopped"). A build stuck inside TensorRT cannot stop its own observer, and the build's hot path
(TensorRT's callbacks) gains nothing but the constant-time `observe` of each event passing by.

Readings come from psutil (CPU percent of one core summed over threads, RSS, threads, status) and,
where a GPU exists, NVML (the process's GPU memory, and its share of the GPU's work: `gpu_activity`,
so a build whose CPU waits on a GPU kernel is working, not stalled). Peak RSS is the kernel's own high-water mark
(`VmHWM`) where the process is the build's alone, else the highest RSS sampled; for a build process
whose spare faulted a heap reserve in, RSS and peak leave out the part of it the build never touched
(`own_memory`).

`verdict` is a pure function of recent samples and the time of the last callback, so it is tested
without TensorRT. Stacks come from `py-spy dump --native`, on a thread of their own (it takes a
second or so); py-spy cannot read a stopped process, so a stopped one is reported as such.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..build.events import Event, Finished, PhaseFinish, PhaseStart, StackDump, Step, Vitals
from .gpu_activity import GpuActivity, gpu_activity

WORKING, STALLED, STOPPED = "working", "stalled", "stopped"
DEFAULT_INTERVAL = 1.0  # seconds between samples
FIRST_READING = 0.2  # seconds from a spare's build start (`VitalsWatch.begin`) to its first reading
DEFAULT_STALL_AFTER = 30.0  # seconds without a callback and with an idle CPU before "stalled"
BUSY_CPU = 5.0  # percent of one core: above this the build is doing something
BUSY_GPU = 5.0  # percent of a GPU's SMs used by the build's process: likewise
STACK_TIMEOUT = 20.0  # seconds py-spy may take

_CALLBACKS = (PhaseStart, Step, PhaseFinish)


@dataclass(frozen=True)
class VitalsConfig:
    """How builds are watched. `interval` 0 (or less) turns sampling off. `stack_after` None takes a
    stack when a build turns stalled; a number, once a build has had no callback for that long."""

    interval: float = DEFAULT_INTERVAL
    stall_after: float = DEFAULT_STALL_AFTER
    stack_after: float | None = None

    @property
    def enabled(self) -> bool:
        return self.interval > 0


DEFAULT_VITALS = VitalsConfig()


@dataclass(frozen=True)
class Sample:
    """One reading, for `verdict`: `t` on the build's clock."""

    t: float
    cpu_percent: float
    stopped: bool = False
    gpu_percent: float | None = None  # the process's SM utilization (`gpu_activity`); None: unknown


def verdict(samples: Sequence[Sample], last_callback: float | None, now: float,
            stall_after: float = DEFAULT_STALL_AFTER, busy: float = BUSY_CPU) -> str:
    """`stopped` when the newest sample found the process stopped; `stalled` when there has been no
    callback for `stall_after` seconds and every sample of those seconds found the CPU near idle
    and the process's GPU work (where NVML reads it) too; else `working`. So a single busy sample or a callback turns a stalled build back at once.

    `last_callback` is the build-clock time of the last progress callback (None: none yet, counted
    from the build's start, t = 0); `samples` are oldest first.
    """
    if samples and samples[-1].stopped:
        return STOPPED
    quiet_since = last_callback if last_callback is not None else 0.0
    if now - quiet_since < stall_after:
        return WORKING
    window = [s for s in samples if s.t >= now - stall_after and not s.stopped]
    if not window or any(s.cpu_percent > busy or (s.gpu_percent or 0.0) > BUSY_GPU for s in window):
        return WORKING
    return STALLED


# -- reading a process -----------------------------------------------------------------------------


class _GpuMemory:
    """Per-process GPU memory through NVML, summed over GPUs; None where there is no GPU. NVML is
    started once per process (`nvml.nvml_started`, shared with the fingerprint's GPU description); a
    machine without the driver answers None at once."""

    @classmethod
    def of(cls, pid: int, nvml=None) -> int | None:
        try:
            if nvml is None:
                from .nvml import nvml_started

                nvml = nvml_started()
                if nvml is None:
                    return None
            total, found = 0, False
            for index in range(nvml.nvmlDeviceGetCount()):
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
                for getter in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
                    try:
                        processes = getattr(nvml, getter)(handle)
                    except Exception:
                        continue
                    for proc in processes:
                        if proc.pid == pid and proc.usedGpuMemory is not None:
                            total += int(proc.usedGpuMemory)
                            found = True
            return total if found else 0
        except Exception:
            return None


def gpu_memory_of(pid: int, nvml=None) -> int | None:
    return _GpuMemory.of(pid, nvml)


def _high_water_mark(pid: int) -> int | None:
    """The kernel's peak RSS of `pid` (Linux `VmHWM`), or None."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


class ProcessProbe:
    """Reads one process. `own` says the process runs only this build (its lifetime peak is the
    build's); otherwise the peak is the highest RSS sampled. `cpu_before`: the CPU seconds the process
    had used when the build started, not the build's (None: none for its own process, else what it had
    used at the first reading). `held(fresh)`: bytes of the process's memory that are not the build's
    (a spare's untouched reserve, `own_memory.HeldBack`), taken off its RSS and peak."""

    def __init__(self, pid: int, own: bool, cpu_before: float | None = None,
                 held: Callable[[bool], int | None] | None = None) -> None:
        import psutil

        self.pid = pid
        self.own = own
        self.held = held
        self._psutil = psutil
        self._process = psutil.Process(pid)
        self._process.cpu_percent(None)  # primes the counter: the next call measures since now
        if cpu_before is None:
            cpu_before = 0.0 if own else self._cpu_seconds()
        self.cpu_seconds0 = cpu_before
        self.peak_rss = 0

    def _cpu_seconds(self) -> float:
        times = self._process.cpu_times()
        return times.user + times.system

    def read(self, final: bool = False) -> dict | None:
        """The process now, or None once it is gone. `final`: the build's last reading (exact)."""
        psutil = self._psutil
        process = self._process
        try:
            with process.oneshot():
                status = process.status()
                cpu = process.cpu_percent(None)
                rss = process.memory_info().rss
                threads = process.num_threads()
                cpu_seconds = self._cpu_seconds() - self.cpu_seconds0
        except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
            return None
        if status in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD):
            return None  # exited: nothing left to read
        held = self.held(final) if self.held is not None else 0
        if held is None:
            return None  # gone before its reserve could be read: its RSS would count the reserve as its own
        rss = max(0, rss - held)
        self.peak_rss = max(self.peak_rss, rss)
        if self.own:
            self.peak_rss = max(self.peak_rss, (_high_water_mark(self.pid) or 0) - held)
        stopped = status in (psutil.STATUS_STOPPED, getattr(psutil, "STATUS_TRACING_STOP", "tracing-stop"))
        return {"cpu_percent": cpu, "rss_bytes": rss, "peak_rss_bytes": self.peak_rss, "threads": threads,
                "cpu_seconds": max(0.0, cpu_seconds), "stopped": stopped}


def process_stopped(pid: int) -> bool:
    try:
        import psutil

        return psutil.Process(pid).status() in (psutil.STATUS_STOPPED, "tracing-stop")
    except Exception:
        return False


def py_spy() -> str | None:
    """The py-spy executable: beside this interpreter (a virtual environment), else on PATH."""
    beside = Path(sys.executable).with_name("py-spy")
    if beside.is_file():
        return str(beside)
    import shutil  # here, as subprocess below: a build that never dumps a stack does not import them

    return shutil.which("py-spy")


def dump_stack(pid: int, timeout: float = STACK_TIMEOUT) -> str:
    """The native and Python stacks of every thread of `pid`, as py-spy prints them; never raises.
    A stopped process cannot be read (py-spy would wait for it): that is said instead."""
    if process_stopped(pid):
        return f"process {pid} is stopped (SIGSTOP?): py-spy cannot read a stopped process"
    import subprocess

    exe = py_spy()
    if exe is None:
        return "py-spy is not installed: pip install py-spy"
    try:
        done = subprocess.run([exe, "dump", "--native", "--pid", str(pid)], capture_output=True, text=True,
                              timeout=timeout, errors="replace")
    except subprocess.TimeoutExpired:
        return f"py-spy took more than {timeout:g} s reading process {pid}"
    except OSError as exc:
        return f"cannot run py-spy: {exc.strerror or exc}"
    text = done.stdout.strip()
    if done.returncode != 0 or not text:
        reason = " ".join((done.stderr or "").split()) or f"exit code {done.returncode}"
        return f"py-spy could not read process {pid}: {reason}"
    return text


# -- the watch ----------------------------------------------------------------------------------------


class VitalsWatch:
    """Samples one build's process every `config.interval` seconds on a thread of its own and emits
    `Vitals` (and, when the build goes quiet, `StackDump`) events into `sink`, on the build's clock.

    Events of the build pass through `sink` (use it in place of the job's sink), unchanged: callbacks
    are noted (one attribute store), and the final state gets a last sample just before it. `t0` is the build's start on the monotonic clock; the process executor moves it when the
    child says when its build started. `cpu_before` and `held` as for `ProcessProbe`.

    `from_start`: no reading until `begin()`. A spare process is the build's only from the moment it
    says its build started: before that it may still be faulting its reserve in (the job came in the
    middle of it), its high-water mark is the spare's, and its reserve is not yet marked untouched,
    so a reading then would count the whole reserve as the build's RSS and peak.
    """

    def __init__(self, job: int, pid: int, sink: Callable[[Event], None], config: VitalsConfig, *,
                 own_process: bool, t0: float | None = None, clock: Callable[[], float] = time.monotonic,
                 cpu_before: float | None = None, held: Callable[[bool], int | None] | None = None,
                 from_start: bool = False) -> None:
        self.job = job
        self.pid = pid
        self.config = config
        self.own_process = own_process
        self.held = held
        self.cpu_before = cpu_before
        self.clock = clock
        self.t0 = clock() if t0 is None else t0
        self._sink = sink
        self.last_callback: float | None = None  # build-clock time of the last callback
        self.samples: deque[Sample] = deque(maxlen=max(8, int(config.stall_after / max(config.interval, 1e-3)) + 4))
        self.last: Vitals | None = None
        self.current = WORKING
        self._stacked = False  # a stack was taken in this quiet spell
        self._lock = threading.Lock()  # one sample at a time (the thread's and the final one)
        self._stop = threading.Event()
        self._probe: ProcessProbe | None = None
        self._gpu: GpuActivity | None = None  # the process's `GpuActivity`, once the first reading asked NVML
        self._thread: threading.Thread | None = None
        self._finished = False
        self._begun = not from_start
        self._first_at: float | None = None  # when the first reading after `begin` is due
        self._nudge = threading.Event()  # wakes the thread: begun, or stopped

    def begin(self) -> None:
        """The build has started in the watched process (its peak was reset): readings count from now,
        the first one `FIRST_READING` seconds on, on the watch's thread. Not at once, and not here on
        the thread that relays the build's events: a build shorter than that gets its one reading at
        its end (`sink`, exact, the process still there), and a batch of small builds reads each
        process (its /proc files, NVML's per-process figures) once instead of twice. The spare's
        reserve is read at once, and what a reading needs made ready (`_prepare`)."""
        self._first_at = self.clock() + FIRST_READING
        self._begun = True
        self._nudge.set()

    # -- the build's side (any thread) ---------------------------------------------------------------

    def sink(self, event: Event) -> None:
        kind = type(event)
        if kind in _CALLBACKS:
            self.last_callback = event.t
        elif kind is Finished and not self._finished:
            self._finished = True
            self._stop.set()
            self._nudge.set()
            # The last reading, dated at the end it reports so it does not come after it: its peak is
            # the build's, which the job puts on the final state it says.
            self.sample(at=event.t)
        self._sink(event)

    # -- sampling -------------------------------------------------------------------------------------

    def start(self) -> VitalsWatch:
        self._thread = threading.Thread(target=self._run, name=f"trt-tui-vitals-{self.job}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._nudge.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(5.0)

    def now(self) -> float:
        return self.clock() - self.t0

    def _run(self) -> None:
        self.sample()  # at once where the process is the build's from the start (not `from_start`)
        while True:
            due = self._first_at
            timeout = self.config.interval if due is None else max(0.0, due - self.clock())
            self._nudge.wait(timeout)
            self._nudge.clear()
            if self._stop.is_set():
                return
            if due is None and self._first_at is not None:  # `begin` came: its first reading is due soon
                self._prepare()
                continue
            if due is not None:
                if self.clock() < due:
                    continue
                self._first_at = None
            try:
                self.sample()
            except Exception:  # telemetry must never end a build or print over the UI
                pass

    def _prepare(self) -> None:
        """As the build starts, beside it: what a reading needs (psutil's import, the process's
        handle, NVML), so that the build's last reading, on the thread relaying its end, only reads.
        And the spare's untouched reserve, read once while the process surely exists: a last reading
        that finds it gone (a parent too slow to read it before it exited) takes this figure, too
        large, never too small, rather than none (`own_memory.HeldBack`)."""
        with self._lock, contextlib.suppress(Exception):  # the final reading may run now too
            self._probe_now()
            if self.held is not None:
                self.held(False)  # never read yet: read now

    def _probe_now(self) -> ProcessProbe:
        """The process's probe, made on first use (with its GPU reader); the caller holds the lock."""
        if self._probe is None:
            self._probe = ProcessProbe(self.pid, self.own_process, self.cpu_before, self.held)
            self._gpu = gpu_activity(self.pid)
        return self._probe

    def sample(self, at: float | None = None) -> Vitals | None:
        """Read the process now and emit one `Vitals` event (None once the process is gone). `at`
        dates it on the build's clock instead of now (never before the previous reading).

        A reading is dated by this process's clock; a child's events are dated by the child when
        they happen and arrive a batch later, so a reading may precede, in the stream, an event
        a few milliseconds older than itself."""
        with self._lock:
            if at is None and self._finished:
                return None  # the build's last reading is taken: none may come after it
            if not self._begun:
                return None  # still the spare's memory, not the build's (`from_start`)
            try:
                reading = self._probe_now().read(final=at is not None)
            except Exception:
                reading = None
            if reading is None:
                return None
            gpu_percent = self._gpu.percent() if self._gpu is not None else None
            now = self.now() if at is None else at
            if self.samples:
                now = max(now, self.samples[-1].t)
            self.samples.append(Sample(now, reading["cpu_percent"], reading["stopped"], gpu_percent))
            last_callback = self.last_callback
            self.current = verdict(self.samples, last_callback, now, self.config.stall_after)
            event = Vitals(self.job, now, self.pid, reading["cpu_percent"], reading["rss_bytes"],
                           reading["peak_rss_bytes"], reading["threads"], self.current,
                           cpu_seconds=reading["cpu_seconds"], gpu_memory_bytes=gpu_memory_of(self.pid))
            self.last = event
            self._sink(event)
            self._maybe_stack(now, last_callback)
            return event

    def _maybe_stack(self, now: float, last_callback: float | None) -> None:
        quiet = now - (last_callback if last_callback is not None else 0.0)
        after = self.config.stack_after
        if after is None:
            due = self.current == STALLED
            if self.current == WORKING:
                self._stacked = False  # the next stall is a new one
        else:
            due = quiet >= after
            if not due:
                self._stacked = False
        if due and not self._stacked and not self._finished:
            self._stacked = True
            threading.Thread(target=self._emit_stack, name=f"trt-tui-stack-{self.job}", daemon=True).start()

    def _emit_stack(self) -> None:
        text = dump_stack(self.pid)
        if not self._finished:
            self._sink(StackDump(self.job, self.now(), self.pid, text))


def watch_build(job: int, pid: int, sink: Callable[[Event], None], config: VitalsConfig | None, *,
                own_process: bool, t0: float | None = None, cpu_before: float | None = None,
                held: Callable[[bool], int | None] | None = None, from_start: bool = False) -> VitalsWatch | None:
    """A started watch, or None where vitals are off or psutil cannot read the process."""
    if config is None or not config.enabled:
        return None
    try:
        return VitalsWatch(job, pid, sink, config, own_process=own_process, t0=t0, cpu_before=cpu_before,
                           held=held, from_start=from_start).start()
    except Exception:
        return None


def host_vitals() -> dict:
    """The machine's CPU (percent of all cores since the last call) and memory; never raises."""
    try:
        import psutil

        memory = psutil.virtual_memory()
        return {"cpu_percent": psutil.cpu_percent(None), "cpus": os.cpu_count() or 1,
                "memory_total": memory.total, "memory_available": memory.available}
    except Exception:
        return {}

"""Where the Ray executor's Ray runs: a cluster it connects to, or a private local Ray it starts.

A local Ray is this user's alone while it runs. Ray's own defaults would open it to the network: its
servers listen on the address other nodes would use, and its token, if Ray makes one, goes to
`~/.ray/auth_token` for every later Ray of the user. So the local Ray is started

- on loopback: Ray derives every server's address from the node's IP, and takes loopback as that IP
  only where it believes no cluster can be formed (its switch for Windows and macOS, read once, when
  `ray` is imported: set here in the environment for Ray's processes and on the imported module);
- with token authentication, a fresh token for this Ray only: in the environment of this process and of
  the processes Ray starts (readable by this user alone), never on disk;
- without the dashboard, and with the error messages Ray prints on the driver silenced: the executor
  says in its own words which build a lost worker or raylet took with it;
- passing objects up to `INLINE_BYTES` inside Ray's messages rather than through the raylet's object
  store: a driver that is using the store when the raylet dies is ended at once by Ray (the process
  exits), which would take the whole run, and every other build's last line, with it. Larger objects
  still go through the store.

What this changes in the environment is put back once the local Ray is shut down. A Ray too old to
have token authentication is not started at all: the build fails, saying so.
"""

from __future__ import annotations

import logging
import os
import secrets
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable

AUTH_MODE = "RAY_AUTH_MODE"
AUTH_TOKEN = "RAY_AUTH_TOKEN"
AUTH_TOKEN_PATH = "RAY_AUTH_TOKEN_PATH"
NETWORKED = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"  # "0": Ray takes loopback as the node's address
# Ray caps one message at 512 MiB by default; a task's inlined model (plus the rest of its spec) stays
# well under that at half of it.
INLINE_BYTES = 256 << 20
TCP_CONNECT = 5.0  # seconds a cluster's address has to take a TCP connection
WAIT_STEP = 0.1  # how soon a build waiting for Ray sees its cancel
# An HTTP/2 client's connection preface and its (empty) SETTINGS frame: what a gRPC client sends first.
HTTP2_GREETING = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


class ConnectCancelled(Exception):
    """The build that waited for Ray to come up was cancelled meanwhile."""


class RayHost(threading.Thread):
    """The thread that starts (or connects to) Ray and, on `stop`, shuts it down. A local Ray's
    processes are tied to the thread that started them (Linux's parent-death signal fires when that
    *thread* ends), so it cannot be a build's worker thread: they would die with the first build."""

    def __init__(self, address: str | None, local_cpus: int | None, answer_within: float | None = None) -> None:
        """`answer_within`: seconds the cluster at `address` has to answer a greeting (None: no limit)."""
        super().__init__(name="trt-tui-ray", daemon=True)
        self.address = address
        self.answer_within = answer_within
        self.local_cpus = local_cpus
        self.ready = threading.Event()
        self.stopping = threading.Event()
        self.error: BaseException | None = None
        self._saved_environment: dict[str, str | None] = {}

    def wait(self, limit: float | None, cancelled: Callable[[], bool]) -> None:
        """Until Ray is up (after `start`): raises why it could not be, TimeoutError after `limit`
        seconds (None: as long as Ray takes), ConnectCancelled as soon as `cancelled()` says so. The
        thread stays in Ray's hands meanwhile; a caller that gives up leaves it to end with the process."""
        deadline = None if limit is None else time.monotonic() + limit
        while not self.ready.wait(WAIT_STEP):
            if cancelled():
                raise ConnectCancelled
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"Ray did not come up in {limit:g} s (--ray-connect-timeout)")
        if self.error is not None:
            raise self.error

    def run(self) -> None:
        import ray

        saved = sys.stdout, sys.stderr
        try:  # Ray's processes inherit descriptors: a full-screen app's captured streams have none
            sys.stdout = sys.__stdout__ or sys.stdout
            sys.stderr = sys.__stderr__ or sys.stderr
            if self.address:
                reachable(self.address, self.answer_within)
                ray.init(address=self.address, log_to_driver=False, logging_level=logging.ERROR)
            else:
                self._private_environment()
                ray.init(address="local", num_cpus=self.local_cpus or os.cpu_count() or 1,
                         include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR,
                         _system_config={"max_direct_call_object_size": INLINE_BYTES,
                                         "task_rpc_inlined_bytes_limit": INLINE_BYTES})
            _silence_driver_messages(True)
        except BaseException as exc:
            self.error = exc
            self._restore_environment()
            return
        finally:
            sys.stdout, sys.stderr = saved
            self.ready.set()
        self.stopping.wait()
        try:
            ray.shutdown()
        except Exception as exc:
            print(f"trt-tui: Ray shutdown: {exc}", file=sys.stderr)
        _silence_driver_messages(False)
        self._restore_environment()

    def stop(self, timeout: float = 30.0) -> None:
        self.stopping.set()
        self.join(timeout)

    def kill(self) -> None:
        """The process is about to exit at once: kill the local Ray's servers, and the agents and workers
        the raylet started, without waiting (they would outlive us)."""
        if self.address:
            return
        try:
            from ray._private import worker

            node = worker._global_node
            if node is None:
                return  # this process started no local Ray
            servers = [info.process.pid for infos in node.all_processes.values() for info in infos]
            for pid in _children_of(set(servers)) + servers:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        except Exception:
            pass

    def _private_environment(self) -> None:
        import ray
        from ray._private import ray_constants

        try:  # Ray's _raylet.pyi declares only part of the compiled module: these two are missing
            from ray._raylet import AuthenticationTokenLoader, Config  # type: ignore[attr-defined]
        except ImportError:  # a Ray from before its token authentication: not started open instead
            raise RuntimeError(f"Ray {ray.__version__} has no token authentication (RAY_AUTH_MODE); upgrade"
                               " Ray, or start a cluster of your own and give its address") from None

        wanted = {AUTH_MODE: "token", AUTH_TOKEN: secrets.token_hex(32), AUTH_TOKEN_PATH: None, NETWORKED: "0"}
        self._saved_environment = {name: os.environ.get(name) for name in wanted}
        _set_environment(wanted)
        ray_constants.ENABLE_RAY_CLUSTER = False  # `ray` may have been imported before the variable was set
        Config.initialize("")  # Ray reads its mode and token once: read them again
        AuthenticationTokenLoader.instance().reset_cache()

    def _restore_environment(self) -> None:
        if not self._saved_environment:
            return
        from ray._private import ray_constants
        from ray._raylet import AuthenticationTokenLoader, Config  # type: ignore[attr-defined]  # as above

        _set_environment(self._saved_environment)
        ray_constants.ENABLE_RAY_CLUSTER = os.environ.get(NETWORKED, "1").lower() not in ("0", "false")
        Config.initialize("")  # a later Ray of this process must not find this one's token
        AuthenticationTokenLoader.instance().reset_cache()
        self._saved_environment = {}


def _set_environment(values: dict[str, str | None]) -> None:
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def _silence_driver_messages(silent: bool) -> None:
    """Ray prints the errors its servers publish (a dead raylet's last log lines among them) on the
    driver's stdout, even with `log_to_driver=False`; its debugger turns them off with this switch."""
    try:
        from ray._private import worker

        worker._worker_logs_enabled = not silent
    except Exception:
        pass


def reachable(address: str, answer_within: float | None = None) -> None:
    """Ray waits minutes for a GCS that is not there, or that takes the connection and never answers
    (a port forwarded to nothing, a stopped process). A plain TCP connect says the first in seconds; a
    GCS is a gRPC server, which sends its first HTTP/2 frame as soon as a client greets it, so silence
    for `answer_within` seconds (None: no limit) says the second. An answer of any kind, the end of the
    connection included, is left to Ray to judge."""
    hostport = address.split("://", 1)[-1]
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        return  # "auto" and the like: Ray resolves them
    try:
        connection = socket.create_connection((host.strip("[]"), int(port)), TCP_CONNECT)
    except OSError as exc:
        raise ConnectionError(f"nothing answers at {hostport} ({exc.strerror or exc})") from None
    with connection:
        connection.settimeout(answer_within)
        try:
            connection.sendall(HTTP2_GREETING)
            connection.recv(1)
        except TimeoutError:
            raise TimeoutError(f"{hostport} took the connection and did not answer in {answer_within:g} s"
                               " (--ray-connect-timeout)") from None
        except OSError:
            pass  # it answered by ending the connection: Ray says what it makes of that


def _children_of(parents: set[int]) -> list[int]:
    """The pids whose parent is one of `parents` (Linux's /proc; none elsewhere)."""
    found: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid in parents:
            found.append(int(entry))
    return found

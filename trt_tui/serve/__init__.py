"""`trt-tui serve`: the app in a web browser, with the builds owned by the server process.

textual-serve starts one app process per browser session (the page's WebSocket), running a command.
That command is the command line's to write (`serve(..., tab_command)`; it is the ordinary app with
`--attach SOCKET`): it views the builds of the one scheduler this process owns and publishes through
`trt_tui.serve.build_server.BuildServer`. So a reload or a second browser sees
the same builds live, closing a tab stops nothing, and Ctrl-C here cancels every build, waits for them
to stop (no temporary engine is left), closes the sessions and removes the socket.

Who may use the page (Host, Origin, the token) is `access`'s. A tab's app process dies with the
server, however the server ends (`tab_lifetime`); SIGHUP and SIGTERM stop the server as Ctrl-C does, and a
socket directory that a killed server left behind is removed by the next one.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import shlex
import shutil
import signal
import socket
import stat
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from .access import TOKEN_CHARS, Access, RedactingFormatter, host_addresses, is_loopback, is_wildcard
from .tab_limits import TabLimits

SOCKET_DIR_PREFIX = "trt-tui-serve-"
SOCKET_NAME = "builds.sock"
TOKEN_ENV = "TRT_TUI_TOKEN"
BIND_TO_LISTEN = 1.0  # seconds: far more than a starting server takes between binding and listening
PAGE = Path(__file__).resolve().parent / "page"


def session_command(argv: list[str]) -> str:
    """The shell command textual-serve runs for each browser session: `argv`, the app attached. `exec`:
    the app replaces the shell, so its parent is this process, with which it dies (`tab_lifetime`)."""
    return "exec " + shlex.join(argv)


def make_web_server(command: str, host: str, port: int, token: str | None, on_exit, on_listening,
                    tabs: TabLimits):
    """A textual-serve Server that checks every request (`access`), runs at most so many tabs
    (`tab_limits`) and cancels the builds as soon as it is asked to stop."""
    from aiohttp import web
    from aiohttp.web_runner import GracefulExit
    from textual_serve.server import Server

    access = Access(host, port, token)

    class BuildsServer(Server):
        async def _make_app(self):
            app = await super()._make_app()
            app.middlewares[:0] = [access.middleware(), tabs.middleware()]  # no slot without access
            return app

        def initialize_logging(self) -> None:
            """Plain lines, the token masked: textual-serve's handler prints a traceback's locals."""
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(RedactingFormatter(token))
            logging.basicConfig(level=logging.INFO, handlers=[handler], force=True)

        async def handle_index(self, request):
            # The page's WebSocket URL is absolute: take it from the address the browser used, which
            # is right behind an SSH tunnel or on 0.0.0.0 where the listening address is not.
            self.public_url = f"{request.scheme}://{request.host}"
            return await super().handle_index(request)

        async def on_startup(self, app) -> None:
            pass  # `serve` prints its own line, with the token

        def request_exit(self) -> None:
            on_exit()
            raise GracefulExit()

        def serve(self, debug: bool = False) -> None:
            """As textual-serve's, with a short shutdown: open WebSockets would hold it for a minute.
            A closed terminal (SIGHUP) or SIGTERM stops it as Ctrl-C does."""
            self.debug = debug
            self.initialize_logging()
            loop = asyncio.new_event_loop()
            for stop in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                loop.add_signal_handler(stop, self.request_exit)
            _ignore_transports_of_a_closed_loop()
            web.run_app(self._make_app(), host=self.host, port=self.port, handle_signals=False, loop=loop,
                        print=lambda *a: on_listening(), shutdown_timeout=3.0)  # called once listening

    return BuildsServer(command, host=host, port=port, title="trt-tui", templates_path=PAGE)


def _ignore_transports_of_a_closed_loop() -> None:
    """The app sessions are asyncio subprocesses of textual-serve. Their transports are collected
    after `run_app` has closed the loop, and a subprocess transport's `__del__` then raises
    "Event loop is closed" (CPython's asyncio, a known wart): Python prints that traceback at
    exit, under "trt-tui: stopped", though every session had ended. Only that one is silenced."""
    previous = sys.unraisablehook

    def hook(unraisable) -> None:
        closed = isinstance(unraisable.exc_value, RuntimeError) and str(unraisable.exc_value) == "Event loop is closed"
        if closed and "Transport" in type(unraisable.object).__qualname__ + repr(unraisable.object):
            return
        previous(unraisable)

    sys.unraisablehook = hook


def check(host: str, port: int, token_arg: str | None, token_file: str | None, no_token: bool) -> str | None:
    """The token to require (None: none), or ValueError with the one-line reason not to serve.
    A token comes from `--token-file`, else $TRT_TUI_TOKEN, else a random one; never from the
    command line, where every user of the host reads it (`ps`)."""
    try:
        import textual_serve.server  # noqa: F401
    except ImportError:
        raise ValueError("serve needs textual-serve: pip install 'trt-tui[serve]'") from None
    if not 0 < port < 65536:
        raise ValueError(f"--port must be 1 to 65535, not {port}")
    if token_arg:  # a bare --token asks for a random one, which is what happens without it
        raise ValueError(f"--token TOKEN shows the token to every user of this host (ps): put it in ${TOKEN_ENV} "
                         "or in a file named by --token-file (without either, a random one is printed)")
    if no_token:
        if token_file is not None:
            raise ValueError("--no-token and --token-file: choose one")
        if not is_loopback(host):
            raise ValueError(f"--no-token --host {host}: anyone who reaches this address could start and cancel "
                             "builds; --no-token is for loopback addresses only")
        return None
    if token_file is not None:
        return _valid_token(_read_token_file(token_file), f"--token-file {token_file}")
    if os.environ.get(TOKEN_ENV):
        return _valid_token(os.environ[TOKEN_ENV].strip(), f"${TOKEN_ENV}")
    return secrets.token_urlsafe(24)


def _read_token_file(path: str) -> str:
    try:
        with open(path, "rb") as file:
            if os.fstat(file.fileno()).st_mode & (stat.S_IRGRP | stat.S_IROTH):
                raise ValueError(f"--token-file {path}: other users can read it (chmod 600 {shlex.quote(path)})")
            data = file.read(4096)
    except OSError as exc:
        raise ValueError(f"--token-file {path}: cannot read it: {exc.strerror or exc}") from None
    try:
        return data.decode("ascii").strip()
    except UnicodeDecodeError:
        raise ValueError(f"--token-file {path}: not a token (letters, digits and . _ ~ - only)") from None


def _valid_token(token: str, source: str) -> str:
    if not token:
        raise ValueError(f"{source} is empty")
    if not TOKEN_CHARS.fullmatch(token):
        raise ValueError(f"{source}: not a token (letters, digits and . _ ~ - only)")
    return token


def announced_urls(host: str, port: int, token: str | None) -> list[str]:
    """The page's addresses for the start-up line: on every interface (0.0.0.0, ::), which no
    browser can open, this host's name, then its addresses that are not loopback."""
    query = f"?token={token}" if token else ""
    if not is_wildcard(host):
        names = [f"[{host}]" if ":" in host else host]
    else:
        ipv4 = host == "0.0.0.0"
        names = [socket.gethostname()] + [f"[{a}]" if ":" in a else a for a in host_addresses()
                                          if not is_loopback(a) and not (ipv4 and ":" in a)]
    return [f"http://{name}:{port}/{query}" for name in names]


def collect_builds(scheduler):
    """Listen for this user's builds from other programs (`trt_tui.run.collector`), or say in one line why not."""
    from ..run.collector.server import Collector, NotListening

    try:
        return Collector(scheduler, note=lambda line: print(line, file=sys.stderr, flush=True)).start()
    except NotListening as exc:
        print(exc, file=sys.stderr, flush=True)
        return None


def remove_stale_socket_dirs() -> None:
    """Remove the socket directories of this user's servers that died without cleaning up (killed):
    one whose socket no longer answers. One in use, or still starting (no socket yet, or one bound
    a moment ago that is not yet listening), is left alone."""
    root = Path(tempfile.gettempdir())
    for directory in root.glob(SOCKET_DIR_PREFIX + "*"):
        try:
            info = directory.lstat()
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
                continue
            if [p.name for p in directory.iterdir()] != [SOCKET_NAME]:
                continue
            if time.time() - (directory / SOCKET_NAME).lstat().st_mtime < BIND_TO_LISTEN:
                continue
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
                if probe.connect_ex(str(directory / SOCKET_NAME)) == 0:
                    continue
            shutil.rmtree(directory)
        except OSError:
            continue


def serve(session, options, paths: list[str], host: str, port: int, token: str | None,
          tab_command: Callable[[str], list[str]], tabs: TabLimits) -> int:
    """Publish `session`'s builds and serve the app until Ctrl-C; then stop every build and clean up.
    `paths` are absolute; `tab_command(socket)`: a browser session's app process, attached to the build
    server at `socket`; `tabs`: how many may be open at once. OSError: cannot listen."""
    from .build_server import serve_session

    remove_stale_socket_dirs()
    directory = tempfile.mkdtemp(prefix=SOCKET_DIR_PREFIX)
    socket_path = os.path.join(directory, SOCKET_NAME)

    def stop_builds() -> None:  # at Ctrl-C, before the web server winds down: builds stop meanwhile
        cancelled = session.scheduler.cancel_all()
        if cancelled:
            print(f"trt-tui: cancelling {cancelled} build(s)…", flush=True)

    urls = announced_urls(host, port, token)
    also = f" (also {', '.join(urls[1:])})" if len(urls) > 1 else ""

    collectors = []

    def listening() -> None:
        print(f"trt-tui: serving {', '.join(paths)} on {urls[0]}{also} (Ctrl-C to stop)", flush=True)
        # Other programs' builds, in every tab; after the first line, which is the page's address.
        collectors.append(collect_builds(session.scheduler))

    builds = None
    try:  # whatever ends it (a signal, a failure to listen, an exception), the directory goes
        builds = serve_session(session, socket_path, options)
        make_web_server(session_command(tab_command(socket_path)), host, port, token, stop_builds, listening,
                        tabs).serve()
    finally:
        for collector in filter(None, collectors):  # its builds are other programs': left building
            collector.close()
        session.close()  # first: the builds' last events still reach every viewer
        if builds is not None:
            builds.close()
        shutil.rmtree(directory, ignore_errors=True)
    print("trt-tui: stopped", flush=True)  # not reached when it could not listen (OSError)
    return 0

"""`trt-tui serve`: the app in a web browser, with the builds owned by the server process.

textual-serve starts one app process per browser session (the page's WebSocket), running a command.
Here that command is the ordinary app with `--attach SOCKET`: it views the builds of the one scheduler
this process owns and publishes through `core.remote.BuildServer`. So a reload or a second browser sees
the same builds live, closing a tab stops nothing, and Ctrl-C here cancels every build, waits for them
to stop (no temporary engine is left), closes the sessions and removes the socket.

The page can start and cancel builds, so off the loopback interface a token is required. It is
checked on every request and on the WebSocket handshake: `?token=` on the URL the server prints (the
answer sets an HttpOnly, SameSite=Strict cookie, which the page's own requests and its WebSocket carry,
and redirects to the page without the token in its address), the cookie, or an `Authorization: Bearer`
header for scripts.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import os
import secrets
import shlex
import shutil
import signal
import sys
import tempfile
from pathlib import Path

COOKIE = "trt_tui_token"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def session_command(socket_path: str, args, paths: list[str]) -> str:
    """The shell command textual-serve runs for each browser session: the app, attached."""
    argv = [sys.executable, "-m", "trt_tui", "--attach", socket_path, "--backend", args.backend]
    if args.theme:
        argv += ["--theme", args.theme]
    if args.history:
        argv += ["--history", str(Path(args.history).resolve())]
    return shlex.join(argv + ["--", *paths])


def make_web_server(command: str, host: str, port: int, token: str | None, on_exit, on_listening):
    """A textual-serve Server that checks the token and cancels the builds as soon as it is asked to stop."""
    from aiohttp import web
    from aiohttp.web_runner import GracefulExit
    from textual_serve.server import Server

    def authorised(request) -> bool:
        header = request.headers.get("Authorization", "")
        given = request.query.get("token") or request.cookies.get(COOKIE) or header.removeprefix("Bearer ").strip()
        return bool(given) and hmac.compare_digest(given.encode(), token.encode())

    @web.middleware
    async def check_token(request, handler):
        if not authorised(request):
            raise web.HTTPForbidden(text="trt-tui: this server needs its token (open the URL it printed)\n")
        if request.query.get("token") and request.path == "/":
            # Into the cookie and out of the address bar (and the browser's history): back to the page.
            query = "&".join(f"{k}={v}" for k, v in request.query.items() if k != "token")
            moved = web.HTTPSeeOther("/" + (f"?{query}" if query else ""))
            moved.set_cookie(COOKIE, token, httponly=True, samesite="Strict")
            raise moved
        return await handler(request)

    class BuildsServer(Server):
        async def _make_app(self):
            app = await super()._make_app()
            if token is not None:
                app.middlewares.append(check_token)
            return app

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
            """As textual-serve's, with a short shutdown: open WebSockets would hold it for a minute."""
            self.debug = debug
            self.initialize_logging()
            loop = asyncio.new_event_loop()
            loop.add_signal_handler(signal.SIGINT, self.request_exit)
            loop.add_signal_handler(signal.SIGTERM, self.request_exit)
            _ignore_transports_of_a_closed_loop()
            web.run_app(self._make_app(), host=self.host, port=self.port, handle_signals=False, loop=loop,
                        print=lambda *a: on_listening(), shutdown_timeout=3.0)  # called once listening

    return BuildsServer(command, host=host, port=port, title="trt-tui")


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


def check(host: str, port: int, token: str | None) -> str | None:
    """The token to require (None: none), or ValueError with the one-line reason not to serve."""
    try:
        import textual_serve.server  # noqa: F401
    except ImportError:
        raise ValueError("serve needs textual-serve: pip install 'trt-tui[serve]'") from None
    if not 0 < port < 65536:
        raise ValueError(f"--port must be 1 to 65535, not {port}")
    if token == "":
        return secrets.token_urlsafe(24)
    if token is not None and os.path.exists(token):  # `serve --token models/` took the path as the token
        raise ValueError(f"--token {token}: that is a path, not a token; write --token=TOKEN, or the paths first")
    if token is None and not is_loopback(host):
        raise ValueError(f"--host {host}: anyone who reaches this address could start and cancel builds; "
                         "add --token (a random one is printed)")
    return token


def serve(session, options, paths: list[str], host: str, port: int, token: str | None, args) -> int:
    """Publish `session`'s builds and serve the app until Ctrl-C; then stop every build and clean up.
    `paths` are absolute; `args` gives the sessions' --backend and --theme. OSError: cannot listen."""
    from .core.remote import serve_session

    directory = tempfile.mkdtemp(prefix="trt-tui-serve-")
    socket_path = os.path.join(directory, "builds.sock")
    builds = serve_session(session, socket_path, options)

    def stop_builds() -> None:  # at Ctrl-C, before the web server winds down: builds stop meanwhile
        cancelled = session.scheduler.cancel_all()
        if cancelled:
            print(f"trt-tui: cancelling {cancelled} build(s)…", flush=True)

    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/" + (f"?token={token}" if token else "")

    def listening() -> None:
        print(f"trt-tui: serving {', '.join(paths)} on {url} (Ctrl-C to stop)", flush=True)

    web = make_web_server(session_command(socket_path, args, paths), host, port, token, stop_builds, listening)
    try:
        web.serve()
    finally:
        session.close()  # first: the builds' last events still reach every viewer
        builds.close()
        shutil.rmtree(directory, ignore_errors=True)
    print("trt-tui: stopped", flush=True)  # not reached when it could not listen (OSError)
    return 0

"""`trt-tui serve`: the app in a web browser, with the builds owned by the server process.

textual-serve starts one app process per browser session (the page's WebSocket), running a command.
Here that command is the ordinary app with `--attach SOCKET`: it views the builds of the one scheduler
this process owns and publishes through `core.remote.BuildServer`. So a reload or a second browser sees
the same builds live, closing a tab stops nothing, and Ctrl-C here cancels every build, waits for them
to stop (no temporary engine is left), closes the sessions and removes the socket.

The page can start and cancel builds, so off the loopback interface a token is required. It is
checked on every request and on the WebSocket handshake: `?token=` on the URL the server prints (the
answer then sets an HttpOnly, SameSite=Strict cookie, which the page's own requests and its WebSocket
carry), the cookie, or an `Authorization: Bearer` header for scripts.
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
    return shlex.join(argv + ["--", *paths])


def make_web_server(command: str, host: str, port: int, token: str | None, on_exit):
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
        response = await handler(request)
        if request.query.get("token") and not response.prepared:
            response.set_cookie(COOKIE, token, httponly=True, samesite="Strict")
        return response

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
            web.run_app(self._make_app(), host=self.host, port=self.port, handle_signals=False, loop=loop,
                        print=lambda *a: None, shutdown_timeout=3.0)

    return BuildsServer(command, host=host, port=port, title="trt-tui")


def serve(args) -> int:
    from .cli import EXIT_OK, UsageError, find_models, make_session, options_from_args

    try:
        import textual_serve.server  # noqa: F401
    except ImportError:
        raise UsageError("serve needs textual-serve: pip install 'trt-tui[serve]'") from None
    if not 0 < args.port < 65536:
        raise UsageError(f"--port must be 1 to 65535, not {args.port}")
    token = secrets.token_urlsafe(24) if args.token == "" else args.token
    if token is None and not is_loopback(args.host):
        raise UsageError(f"--host {args.host}: anyone who reaches this address could start and cancel builds; "
                         "add --token (a random one is printed)")
    options = options_from_args(args)
    models, errors = find_models(args.paths)
    for err in errors:
        print(f"trt-tui: {err}", file=sys.stderr)
    if errors and not models and not any(Path(p).is_dir() for p in args.paths):
        raise UsageError("nothing to serve")
    paths = [str(Path(p).resolve()) for p in args.paths if Path(p).exists()]

    from .core.remote import serve_session

    session = make_session(args)
    directory = tempfile.mkdtemp(prefix="trt-tui-serve-")
    socket_path = os.path.join(directory, "builds.sock")
    builds = serve_session(session, socket_path, options)

    def stop_builds() -> None:  # at Ctrl-C, before the web server winds down: builds stop meanwhile
        cancelled = session.scheduler.cancel_all()
        if cancelled:
            print(f"trt-tui: cancelling {cancelled} build(s)…", flush=True)

    web = make_web_server(session_command(socket_path, args, paths), args.host, args.port, token,
                          on_exit=stop_builds)
    shown = f"[{args.host}]" if ":" in args.host else args.host
    url = f"http://{shown}:{args.port}/" + (f"?token={token}" if token else "")
    print(f"trt-tui: serving {', '.join(paths)} on {url} (Ctrl-C to stop)", flush=True)
    try:
        web.serve()
    except OSError as exc:
        raise UsageError(f"{args.host}:{args.port}: cannot listen: {exc.strerror or exc}") from None
    finally:
        builds.close()
        session.close()
        shutil.rmtree(directory, ignore_errors=True)
    print("trt-tui: stopped", flush=True)
    return EXIT_OK

"""`trt-tui serve`: one scheduler owned by the server, viewed by any number of attached apps.

Real parts throughout: real TensorRT-RTX builds of the samples, the real `BuildServer` on a
Unix socket, the real app attached to it under Textual's pilot, the real `trt-tui serve` process over
HTTP and WebSockets, and (where Debian's Chromium is installed) a real browser driven by Playwright.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import socket
import tempfile
import time
from pathlib import Path

import psutil
import pytest
from support.serve import Served, wait
from support.waiting import pilot_wait

from trt_tui.cli import main
from trt_tui.core.build.driver import BuildOptions, BuildSpec
from trt_tui.core.build.events import Finished, PhaseStart, State
from trt_tui.core.execution.session import make_session
from trt_tui.core.execution.session_settings import SessionSettings
from trt_tui.serve.build_server import RemoteScheduler, attach_session, serve_session
from trt_tui.ui.app import AppConfig, TrtTuiApp
from trt_tui.ui.modes import AttachedViewer

REPO = Path(__file__).resolve().parent.parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture
def long_dir(sample_dir, tmp_path) -> Path:
    """Only densenet, hard-linked: its ~15 s build must outlive viewers joining, leaving and starting up
    (an app process per browser) on a loaded two-core machine; every test cancels it within seconds.
    For the README's picture (TRT_TUI_SCREENSHOTS), a directory named as a user's would be: TensorRT's
    log shows the model's path."""
    directory = tmp_path
    if os.environ.get("TRT_TUI_SCREENSHOTS"):
        directory = Path(tempfile.mkdtemp(prefix="models-"))
    os.link(sample_dir / "densenet.onnx", directory / "densenet.onnx")
    yield directory
    if directory != tmp_path:
        shutil.rmtree(directory, ignore_errors=True)


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.suffix in (".engine", ".tmp") or p.name.startswith("."))


class Viewer:
    """A RemoteScheduler that records what it was sent, per job."""

    def __init__(self, path: str) -> None:
        self.remote = RemoteScheduler(path)
        self.events: dict[int, list] = {}
        self.remote.subscribe(lambda job, events: self.events.setdefault(job, []).extend(events))
        self.remote.connect()

    def phases(self, job_id: int) -> list[str]:
        return [e.name for e in self.events.get(job_id, []) if type(e) is PhaseStart]


@pytest.fixture
def build_server(tmp_path):
    directory = tempfile.mkdtemp(prefix="trt-tui-test-serve-")
    session = make_session(2, record_history=False, cache=False)
    server = serve_session(session, os.path.join(directory, "builds.sock"), BuildOptions())
    yield server
    server.close()
    assert session.close(timeout=60)
    assert not os.path.exists(server.path)
    shutil.rmtree(directory)


def test_two_viewers_share_one_build(build_server, long_dir):
    """A build one viewer starts is the server's: a viewer that joins late replays it from its start
    and follows it live, its cancel reaches the build, and both see the same end."""
    first = Viewer(build_server.path)
    job = first.remote.submit(BuildSpec(long_dir / "densenet.onnx", long_dir / "ignored.engine"))
    assert build_server.scheduler.jobs[job.id].spec.output == long_dir / "densenet.engine"  # the server decides
    wait(lambda: "Building engine" in first.phases(job.id), "the build to start its phases")

    late = Viewer(build_server.path)
    assert late.remote.jobs[job.id].spec.model == long_dir / "densenet.onnx"
    assert late.phases(job.id)[:1] == ["Building engine"]  # replayed from the start, not from the join
    assert late.remote.jobs[job.id].state is State.BUILDING
    assert build_server.clients == 2

    assert late.remote.cancel(job.id)
    wait(lambda: first.remote.jobs[job.id].final and late.remote.jobs[job.id].final, "both viewers to see the end")
    assert first.remote.jobs[job.id].token.cancelled  # told that someone else cancelled it
    server_job = build_server.scheduler.jobs[job.id]
    wait(lambda: server_job.delivered.is_set(), "the last events to be delivered")
    time.sleep(0.2)  # the writer threads flush the last batch
    assert first.events[job.id] == late.events[job.id]
    assert first.remote.jobs[job.id].state is State.CANCELLED is server_job.state
    assert leftovers(long_dir) == []

    first.remote.shutdown(timeout=5)
    wait(lambda: build_server.clients == 1, "the server to forget the viewer that left")
    with pytest.raises(RuntimeError):
        first.remote.submit(BuildSpec(long_dir / "densenet.onnx", long_dir / "x.engine"))
    late.remote.shutdown(timeout=5)


async def test_a_tab_made_by_the_command_line_whose_server_is_gone_says_so_in_one_line(sample_dir, tmp_path):
    """`trt-tui --attach SOCKET` (how `serve` starts a tab's app): the command line makes the tab's
    client of the build server and hands it to the app; with no server at SOCKET the app says so in one
    notification and keeps running, owning no build."""
    from trt_tui import cli
    from trt_tui.cli.commands.app import app_session
    from trt_tui.ui.app import make_app
    from trt_tui.ui.modes import OwnBuilds

    gone = tmp_path / "builds.sock"
    args = cli.build_parser()[0].parse_args([str(sample_dir), "--attach", str(gone)])
    config = cli.app_config(args)
    session = app_session(args, config)
    assert isinstance(session, AttachedViewer) and not session.owns_builds
    app = make_app(config, session)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot_wait(pilot, lambda: app._notifications, 10)
        said = [n.message for n in app._notifications]
        assert len(said) == 1 and f"{gone}: cannot reach the build server" in said[0], said
        assert app.is_running
    plain = cli.build_parser()[0].parse_args([str(sample_dir), "--executor", "thread"])
    own = app_session(plain, cli.app_config(plain))
    try:
        assert isinstance(own, OwnBuilds) and own.owns_builds
    finally:
        own.session.close()


async def test_attached_app_views_cancels_and_leaves_builds_running(build_server, long_dir):
    """The app attached to the server shows a build another viewer started; quitting it (`q`, as a
    closed tab does) stops nothing; a second app (a reload) replays the build and `c` cancels it."""
    other = Viewer(build_server.path)
    job = other.remote.submit(BuildSpec(long_dir / "densenet.onnx", long_dir / "densenet.engine"))
    server_job = build_server.scheduler.jobs[job.id]
    config = AppConfig(paths=[str(long_dir)], gpu_interval=60)

    app = TrtTuiApp(config, AttachedViewer(attach_session(build_server.path)))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot_wait(pilot, lambda: job.id in app.views and app.views[job.id].tree.phases)
        assert app.selected == job.id
        assert app.builds.row_count == 1
        await pilot.press("q")
        await pilot_wait(pilot, lambda: not app.is_running, 10)
    assert not server_job.final and not server_job.token.cancelled  # the build outlived its viewer

    reload = TrtTuiApp(config, AttachedViewer(attach_session(build_server.path)))
    async with reload.run_test(size=(160, 48)) as pilot:
        await pilot_wait(pilot, lambda: job.id in reload.views and reload.views[job.id].tree.phases)
        view = reload.views[job.id]
        assert any(p.name == "Building engine" for p in view.tree.phases.values())
        await pilot.press("c")
        await pilot_wait(pilot, lambda: view.state is State.CANCELLED)
        assert reload.picker.models  # the model list is the app's own
        await pilot.press("w")  # one watcher per tab would rebuild once per tab: refused
        assert reload.watcher is None
    wait(lambda: server_job.final, "the server's build to end")
    assert server_job.state is State.CANCELLED and server_job.token.cancelled
    wait(lambda: other.remote.jobs[job.id].state is State.CANCELLED, "the other viewer to see the cancel")
    other.remote.shutdown(timeout=5)
    assert leftovers(long_dir) == []


def test_a_tab_names_the_builds_it_lost_with_the_server(build_server, long_dir):
    """A server that goes away under a tab (killed, its machine gone) leaves no build showing
    "building" forever there: each ends failed, saying where it was, as a build lost with its
    transport does. A tab that leaves on its own loses nothing."""
    viewer, leaver = Viewer(build_server.path), Viewer(build_server.path)
    job = viewer.remote.submit(BuildSpec(long_dir / "densenet.onnx", long_dir / "densenet.engine"))
    wait(lambda: "Building engine" in viewer.phases(job.id) and "Building engine" in leaver.phases(job.id),
         "the build, in both tabs")
    leaver.remote.shutdown(timeout=5)
    assert not leaver.remote.jobs[job.id].final  # left, not lost
    build_server.close()
    wait(lambda: viewer.remote.jobs[job.id].final, "the tab to end the build", 30)
    final = [e for e in viewer.events[job.id] if isinstance(e, Finished)][-1]
    assert final.state is State.FAILED, final
    assert final.result.error.startswith(f"{long_dir / 'densenet.onnx'}: the build server went away while building (in ")
    viewer.remote.shutdown(timeout=5)


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


async def test_served_tab_reads_stacks_through_the_server_and_offers_no_watch(build_server, long_dir):
    """`s` in a served tab shows the stacks of the build's process, taken by the server that runs it
    (the tab has no executor: it crashed here); `w` is not offered at all (no key, no footer entry,
    no palette command), where it used to be offered only to say it was unavailable."""
    from trt_tui.ui.screens import StackScreen

    other = Viewer(build_server.path)
    job = other.remote.submit(BuildSpec(long_dir / "densenet.onnx", long_dir / "densenet.engine"))
    server_job = build_server.scheduler.jobs[job.id]
    app = TrtTuiApp(AppConfig(paths=[str(long_dir)], gpu_interval=60), AttachedViewer(attach_session(build_server.path)))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot_wait(pilot, lambda: job.id in app.views and app.views[job.id].tree.phases)
        keys = {binding.key for _, binding, _, _ in app.screen.active_bindings.values()}
        assert "w" not in keys and "s" in keys
        palette = [command.title for command in app.get_system_commands(app.screen)]
        assert "Watch" not in palette and "Stack" in palette
        # The server's queue is every tab's: no tab pauses, widens or reorders it.
        assert not {"P", "plus", "minus", "left_square_bracket", "right_square_bracket"} & keys
        assert not {"Pause queue", "More at once", "Queue earlier"} & set(palette)
        pid = build_server.scheduler.pid_of(server_job.id)
        assert pid is not None and pid != os.getpid()
        await pilot.press("s")
        await pilot_wait(pilot, lambda: isinstance(app.screen, StackScreen), 60)
        assert f"Process {pid}" in app.screen.text and "Thread" in app.screen.text
        await pilot.press("escape")
        await pilot.press("c", "c")
        await pilot_wait(pilot, lambda: app.views[job.id].state.final)
        await pilot.press("s")  # over: the stacks it took when it stalled, or why there are none
        await pilot.pause(0.2)
        assert [n.message for n in app._notifications][-1] == f"Build #{job.id} has no running process to read"
    other.remote.shutdown(timeout=5)
    assert leftovers(long_dir) == []


def test_serve_no_token_only_on_loopback_and_never_a_token_in_argv(long_dir, tmp_path, capsys, monkeypatch):
    """`--no-token` is refused off loopback; a token on the command line (which `ps` shows every user)
    is refused, saying how to pass it; a token file others can read, or an empty one, is refused."""
    monkeypatch.delenv("TRT_TUI_TOKEN", raising=False)
    assert main(["serve", str(long_dir), "--host", "0.0.0.0", "--no-token"]) == 2
    assert "loopback" in one_line_error(capsys)
    for argv in (["--token", "s3cret"], ["--token=s3cret"], ["--host", "0.0.0.0", "--token", str(long_dir)]):
        assert main(["serve", str(long_dir), *argv]) == 2
        err = one_line_error(capsys)
        assert "ps" in err and "TRT_TUI_TOKEN" in err and "--token-file" in err and "s3cret" not in err
    token_file = tmp_path / "token"
    token_file.write_text("s3cret\n")
    token_file.chmod(0o644)
    assert main(["serve", str(long_dir), "--token-file", str(token_file)]) == 2
    assert "other users can read it" in one_line_error(capsys)
    token_file.write_text("")
    token_file.chmod(0o600)
    assert main(["serve", str(long_dir), "--token-file", str(token_file)]) == 2
    assert "is empty" in one_line_error(capsys)
    monkeypatch.setenv("TRT_TUI_TOKEN", "not a token")
    assert main(["serve", str(long_dir)]) == 2
    assert "TRT_TUI_TOKEN: not a token" in one_line_error(capsys)


def test_serve_port_in_use_is_one_line(long_dir, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        assert main(["serve", str(long_dir), "--port", str(port)]) == 2
    out, err = capsys.readouterr()
    assert "serving" not in out  # announced only once listening
    assert err.strip().count("\n") == 0 and f"127.0.0.1:{port}: cannot listen" in err


def test_serve_http_token_shared_sessions_and_ctrl_c(long_dir):
    """Every request and the WebSocket need the token; two browser sessions attach to one build server;
    Ctrl-C cancels the running build, ends every session and leaves nothing behind."""
    import aiohttp

    served = Served(str(long_dir), token="s3cret")

    async def browse() -> None:
        assert "?token=s3cret" in served.first_line and str(long_dir) in served.first_line
        async with aiohttp.ClientSession() as anonymous:
            for path in ("/", "/static/js/textual.js", "/?token=wrong"):
                async with anonymous.get(served.url + path) as response:
                    assert response.status == 403, path
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await anonymous.ws_connect(served.url + "/ws?width=80&height=24")
            assert refused.value.status == 403
        async with aiohttp.ClientSession(headers={"Authorization": "Bearer s3cret"}) as script:
            async with script.get(served.url + "/static/js/textual.js") as response:
                assert response.status == 200
        # unsafe=True: aiohttp's jar otherwise ignores cookies set by an IP address (browsers keep them)
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as browser:
            async with browser.get(served.url + "/?token=s3cret&fontsize=14", allow_redirects=False) as response:
                assert response.status == 303 and response.headers["Location"] == "/?fontsize=14"
                cookie = response.cookies[f"trt_tui_token_{served.port}"]
                assert cookie["httponly"] and cookie["samesite"] == "Strict" and cookie["path"] == "/"
                assert "s3cret" not in cookie.value  # other services of the host see it: not the token
            async with browser.get(served.url + "/?fontsize=14") as response:  # the cookie now
                assert response.status == 200
                page = await response.text()
            assert f'ws://127.0.0.1:{served.port}/ws' in page
            async with browser.get(served.url + "/static/js/textual.js") as response:
                assert response.status == 200
            tabs = [await browser.ws_connect(served.url + "/ws?width=120&height=40") for _ in range(2)]
            for tab in tabs:
                message = await tab.receive(timeout=60)
                assert message.type == aiohttp.WSMsgType.BINARY and message.data
            await asyncio.to_thread(wait, lambda: len(served.sessions()) == 2, "two app sessions")
            sockets = {p.cmdline()[p.cmdline().index("--attach") + 1] for p in served.sessions()}
            assert len(sockets) == 1  # both sessions attach to the one build server
            sessions = served.sessions()

            socket_path = sockets.pop()
            viewer = Viewer(socket_path)  # as a third tab's app would: start a build on the server
            job = viewer.remote.submit(BuildSpec(long_dir / "densenet.onnx", long_dir / "densenet.engine"))
            await asyncio.to_thread(wait, lambda: "Building engine" in viewer.phases(job.id), "the build")

            rc, output = await asyncio.to_thread(served.ctrl_c)
            assert rc == 0, output
            assert "cancelling 1 build(s)" in output and output.rstrip().endswith("trt-tui: stopped")
            assert viewer.remote.jobs[job.id].state is State.CANCELLED
            assert viewer.remote.disconnected.wait(5)
            assert not os.path.exists(os.path.dirname(socket_path))  # the socket and its directory
            for tab in tabs:
                await tab.close()
            gone, alive = psutil.wait_procs(sessions, timeout=10)
            assert not alive, [p.cmdline() for p in alive]

    try:
        asyncio.run(browse())
    finally:
        served.stop_if_running()
    assert leftovers(long_dir) == []


def raw_request(port: int, head: bytes) -> int:
    """Send `head` (a whole request, its bytes as given) to the server on loopback; the status it answers."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        conn.sendall(head)
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    return int(data.split(b" ", 2)[1])


def tab_socket_dir(tabs: list[psutil.Process]) -> str:
    cmdline = tabs[0].cmdline()
    return os.path.dirname(cmdline[cmdline.index("--attach") + 1])


async def open_tab(served: Served, session, **kwargs):
    """A browser tab's WebSocket; its app process has drawn once when this returns."""
    import aiohttp

    tab = await session.ws_connect(served.url + "/ws?width=100&height=30", **kwargs)
    message = await tab.receive(timeout=60)
    assert message.type == aiohttp.WSMsgType.BINARY and message.data
    return tab


def test_serve_requires_a_token_by_default_even_on_loopback(long_dir):
    """Without `--no-token`, a loopback server makes up a token, prints it in the URL and refuses any
    request without it; `--no-token` (loopback only) serves anyone who passes the Host check."""
    import aiohttp

    async def status(served: Served, path: str = "/", **headers) -> int:
        async with aiohttp.ClientSession(headers=headers) as browser:
            async with browser.get(served.url + path, allow_redirects=False) as response:
                return response.status

    served = Served(str(long_dir))
    try:
        assert served.token is not None and len(served.token) >= 24, served.first_line
        assert asyncio.run(status(served)) == 403
        assert asyncio.run(status(served, Authorization=f"Bearer {served.token}")) == 200
        assert asyncio.run(status(served, f"/?token={served.token}")) == 303
    finally:
        rc, output = served.ctrl_c()
    assert rc == 0, output
    open_served = Served(str(long_dir), "--no-token")
    try:
        assert open_served.token is None and "?token=" not in open_served.first_line
        assert asyncio.run(status(open_served)) == 200
        assert asyncio.run(status(open_served, Host="rebound.example.com")) == 403
    finally:
        rc, output = open_served.ctrl_c()
    assert rc == 0, output


def test_serve_checks_host_and_origin_before_starting_an_app(long_dir):
    """Even with the token: a Host that is not one of the server's names (DNS rebinding) or another
    site's Origin (a cross-site WebSocket) is refused with 403, and no app process is started; the
    loopback names (whatever port a tunnel uses) and the page's own origin are served."""
    import aiohttp

    served = Served(str(long_dir), token="h0st-check")

    async def browse() -> None:
        async with aiohttp.ClientSession(headers={"Authorization": "Bearer h0st-check"}) as script:
            for host, expected in (("rebound.example.com", 403), (f"rebound.example.com:{served.port}", 403),
                                   (f"localhost:{served.port}", 200), (f"[::1]:{served.port}", 200),
                                   ("127.0.0.1:9000", 200), (f"LOCALHOST.:{served.port}", 200)):
                for path in ("/", "/static/js/textual.js"):
                    async with script.get(served.url + path, headers={"Host": host}) as response:
                        assert response.status == expected, (host, path)
            refused = [{"headers": {"Host": f"rebound.example.com:{served.port}"}},
                       {"origin": "http://evil.example.com"}, {"origin": "null"},
                       {"origin": f"http://127.0.0.1:{served.port + 1}"}, {"origin": f"https://127.0.0.1:{served.port}"}]
            for kwargs in refused:
                with pytest.raises(aiohttp.WSServerHandshakeError) as handshake:
                    await script.ws_connect(served.url + "/ws?width=80&height=24", **kwargs)
                assert handshake.value.status == 403, kwargs
            await asyncio.sleep(1)
            assert served.sessions() == []  # not one app process for a refused request
            tab = await open_tab(served, script, origin=f"http://127.0.0.1:{served.port}")
            assert len(served.sessions()) == 1
            await tab.close()

    try:
        asyncio.run(browse())
    finally:
        rc, output = served.ctrl_c()
    assert rc == 0, output


def test_serve_bad_bytes_in_credentials_and_the_log_never_show_the_token(long_dir):
    """A byte that is not UTF-8 in `Authorization`, the cookie or the query is a plain 403 (not a 500
    with a traceback); the server's log masks the token, in `?token=` as anywhere."""
    token = "L0ng-s3cret-token"
    served = Served(str(long_dir), token=token)
    host = f"Host: 127.0.0.1:{served.port}\r\nConnection: close\r\n".encode()
    try:
        for extra in (b"Authorization: Bearer " + token.encode() + b"\xff\r\n", b"Authorization: Bearer \xff\xfe\r\n",
                      f"Cookie: trt_tui_token_{served.port}=".encode() + b"\xff\xfe\r\n"):
            assert raw_request(served.port, b"GET / HTTP/1.1\r\n" + host + extra + b"\r\n") == 403, extra
        assert raw_request(served.port, b"GET /?token=%ff%fe HTTP/1.1\r\n" + host + b"\r\n") == 403
        assert raw_request(served.port, f"GET /?token={token} HTTP/1.1\r\n".encode() + host + b"\r\n") == 303
        raw_request(served.port, f"GET /?token={token}&x=\xff HTTP/1.1\r\n".encode("latin-1") + host + b"\r\n")
        assert raw_request(served.port, b"GET /static/js/textual.js HTTP/1.1\r\n" + host
                           + f"Authorization: Bearer {token}\r\n\r\n".encode()) == 200
    finally:
        rc, output = served.ctrl_c()
    assert rc == 0, output
    log = output.split("\n", 1)[1]  # after the start-up line, which gives the URL with its token
    assert "GET /?token=…" in log and " 303 " in log
    assert token not in log and " 500 " not in log, log


def test_two_servers_on_one_host_keep_their_own_cookies(long_dir):
    """Cookies do not see ports: with one cookie name, signing in to a second server on the host
    signed the browser out of the first. Named by port, both stay signed in."""
    import aiohttp

    first, second = Served(str(long_dir), token="first-token"), Served(str(long_dir), token="second-token")

    async def browse() -> None:
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as browser:
            for served in (first, second):
                async with browser.get(f"{served.url}/?token={served.token}") as response:
                    assert response.status == 200
            for served in (first, second):
                async with browser.get(served.url + "/") as response:
                    assert response.status == 200, served.port
            names = {cookie.key for cookie in browser.cookie_jar}
            assert names == {f"trt_tui_token_{first.port}", f"trt_tui_token_{second.port}"}

    try:
        asyncio.run(browse())
    finally:
        for served in (first, second):
            rc, output = served.ctrl_c()
            assert rc == 0, output


def test_killed_server_leaves_no_tab_and_the_next_removes_its_socket_directory(long_dir):
    """kill -9 of the server: each tab's app process dies with it (nothing else would ever end it);
    the socket directory it could not remove is removed by the next server on the host."""
    import aiohttp

    served = Served(str(long_dir), token="k1ll")
    tabs: list[psutil.Process] = []
    directories: list[str] = []

    async def open_two_tabs() -> None:
        async with aiohttp.ClientSession(headers={"Authorization": "Bearer k1ll"}) as browser:
            pages = [await open_tab(served, browser) for _ in range(2)]  # noqa: F841 (open until the kill)
            await asyncio.to_thread(wait, lambda: len(served.sessions()) == 2, "two app sessions")
            tabs.extend(served.sessions())
            directories.append(tab_socket_dir(tabs))
            os.kill(served.proc.pid, signal.SIGKILL)  # the server alone, as `kill -9 PID` does
            assert served.proc.wait(30) == -signal.SIGKILL

    next_one = None
    try:
        asyncio.run(open_two_tabs())
        gone, alive = psutil.wait_procs(tabs, timeout=30)
        assert not alive, [p.cmdline() for p in alive]
        directory = directories[0]
        assert os.path.isdir(directory)  # SIGKILL runs no clean-up: left to the next server
        next_one = Served(str(long_dir), "--no-token")
        assert not os.path.exists(directory)
        rc, output = next_one.ctrl_c()
        assert rc == 0, output
    finally:
        for tab in tabs:
            if tab.is_running():
                tab.kill()
        served.stop_if_running()
        if next_one is not None:  # a failed check above must not leave the next server running
            next_one.stop_if_running()


def test_sighup_stops_the_server_as_ctrl_c_does(long_dir):
    """SIGHUP (the server's terminal closed) or SIGTERM: the running build is cancelled, every tab's
    app process ends, the socket directory goes, the server exits 0."""
    import aiohttp

    served = Served(str(long_dir), token="hangup")
    tabs: list[psutil.Process] = []

    async def browse() -> None:
        async with aiohttp.ClientSession(headers={"Authorization": "Bearer hangup"}) as browser:
            tab = await open_tab(served, browser)
            await asyncio.to_thread(wait, lambda: len(served.sessions()) == 1, "the tab's app")
            tabs.extend(served.sessions())
            directory = tab_socket_dir(tabs)
            viewer = Viewer(os.path.join(directory, "builds.sock"))
            job = viewer.remote.submit(BuildSpec(long_dir / "densenet.onnx", long_dir / "densenet.engine"))
            await asyncio.to_thread(wait, lambda: "Building engine" in viewer.phases(job.id), "the build")
            os.kill(served.proc.pid, signal.SIGHUP)
            rc = await asyncio.to_thread(served.proc.wait, 60)
            output = served.first_line + served.proc.stdout.read()
            assert rc == 0 and output.rstrip().endswith("trt-tui: stopped"), output
            assert "cancelling 1 build(s)" in output
            assert viewer.remote.jobs[job.id].state is State.CANCELLED
            gone, alive = psutil.wait_procs(tabs, timeout=30)
            assert not alive, [p.cmdline() for p in alive]
            assert not os.path.exists(directory)
            await tab.close()

    try:
        asyncio.run(browse())
    finally:
        for tab in tabs:
            if tab.is_running():
                tab.kill()
        served.stop_if_running()
    assert leftovers(long_dir) == []


def test_page_has_a_title_fetches_nothing_elsewhere_and_announces_real_addresses(long_dir):
    """The page is titled and loads everything (its fonts too) from the server; listening on every
    interface, the start-up line names this host, which a browser elsewhere can open, not 0.0.0.0."""
    import aiohttp

    served = Served(str(long_dir), "--host", "0.0.0.0", token="t1tle")

    async def browse() -> None:
        async with aiohttp.ClientSession(headers={"Authorization": "Bearer t1tle"}) as browser:
            async with browser.get(served.url + "/") as response:
                assert response.status == 200
                page = await response.text()
            assert "<title>trt-tui</title>" in page
            addresses = [a or b for a, b in re.findall(r"""\s(?:src|href)="([^"]+)"|url\("?([^")]+)""", page)]
            assert addresses and all(a.startswith(served.url + "/") for a in addresses), addresses
            assert "googleapis" not in page and "https://" not in page
            for address in addresses:
                async with browser.get(address) as response:
                    assert response.status == 200, address
            assert any(a.endswith(".ttf") for a in addresses)

    try:
        assert "0.0.0.0" not in served.first_line, served.first_line
        assert f"http://{socket.gethostname()}:{served.port}/?token=t1tle" in served.first_line
        asyncio.run(browse())
    finally:
        rc, output = served.ctrl_c()
    assert rc == 0, output


# Records what the page's WebSocket receives: the terminal draws on a canvas, so this is how the test
# reads the screen the browser was sent. Keys still go through the browser into xterm.js.
SCREEN_HOOK = """(() => {
  const Native = window.WebSocket, decoder = new TextDecoder();
  window.__screen = "";
  window.WebSocket = function (url, protocols) {
    const ws = protocols === undefined ? new Native(url) : new Native(url, protocols);
    ws.addEventListener("message", (e) => {
      if (e.data instanceof ArrayBuffer) window.__screen += decoder.decode(e.data, {stream: true});
    });
    return ws;
  };
  window.WebSocket.prototype = Native.prototype;
})();"""
ESCAPES = re.compile(r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-B]|\x1b[=>78]")


def test_browser_builds_and_cancels(long_dir):
    """Chromium opens the page (titled, everything it loads from the server), sees the model list and
    a phase of a real build, reads the build's stacks with `s` (the server takes them), presses `c`,
    sees it cancelled; a second browser, open meanwhile, follows the same build live and sees the
    cancel too. `w` (watch) is not offered. TRT_TUI_SCREENSHOTS=DIR saves the browser's view of the
    running build there."""
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is missing (Debian: apt-get install chromium); Playwright never downloads one")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    served = Served(str(long_dir), token="br0wser")

    def screen(page) -> str:
        return ESCAPES.sub("", page.evaluate("window.__screen"))

    def shows(page, text: str, since: int = 0):
        return lambda: text in screen(page)[since:]

    try:
        with sync_api.sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.add_init_script(SCREEN_HOOK)
            fetched: list[str] = []
            page.on("request", lambda request: fetched.append(request.url))
            page.goto(served.url + "/?token=br0wser")  # as printed; the page comes back without it
            assert page.url == served.url + "/"
            assert page.title() == "trt-tui"
            second = browser.new_page(viewport={"width": 1400, "height": 900})  # a fresh context: another browser
            second.add_init_script(SCREEN_HOOK)
            assert second.goto(served.url + "/").status == 403  # no cookie there yet
            second.goto(served.url + "/?token=br0wser")
            wait(shows(page, "densenet.onnx"), "the model list", 60)
            wait(shows(second, "densenet.onnx"), "the model list in the second browser", 60)
            wait(shows(page, "1×3×224×224"), "the model's inputs", 30)
            # Keys to the terminal without a click: a click lands on whichever pane is under it.
            page.focus(".xterm-helper-textarea")
            page.keyboard.press("Enter")
            wait(shows(page, "Building engine"), "a phase of the build", 60)
            wait(shows(page, "Computing profile costs"), "a deeper phase", 60)
            if os.environ.get("TRT_TUI_SCREENSHOTS"):
                page.screenshot(path=str(Path(os.environ["TRT_TUI_SCREENSHOTS"]) / "serve-browser.png"))
            wait(shows(second, "Building engine"), "the second browser to show the same build live", 30)
            mark = len(screen(page))
            page.keyboard.press("s")
            wait(shows(page, "Stacks of build #1, taken now", mark), "the build's stacks", 60)
            mark = len(screen(page))
            page.keyboard.press("Escape")
            # The main screen back (its tree redrawn) before `c`: on a loaded machine a key pressed while
            # the stacks are still up goes to them.
            wait(shows(page, "Building engine", mark), "the main screen after the stacks", 30)
            assert "Watch" not in screen(page)  # not in the footer, where every offered key is
            mark, second_mark = len(screen(page)), len(screen(second))
            for attempt in range(3):  # on a loaded machine the stacks screen may take the first keys
                if attempt:
                    page.keyboard.press("Escape")  # an Escape that came before it was up left it open
                    time.sleep(1.0)
                page.keyboard.press("c")
                try:
                    wait(shows(page, "Cancelling #1 densenet.onnx", mark), "the cancel to be asked", 5)
                    break
                except AssertionError:
                    continue
            try:
                wait(shows(page, "cancelled", mark), "the build to show cancelled", 60)
            except AssertionError as exc:
                raise AssertionError(f"{exc}; the screen since `c`: {screen(page)[mark:][-1500:]!r}") from None
            assert "Cancelling #1 densenet.onnx" in screen(page)[mark:]
            wait(shows(second, "cancelled", second_mark), "the second browser to see the cancel", 30)
            browser.close()
            elsewhere = [url for url in fetched if not url.startswith((served.url + "/", "data:", "blob:"))]
            assert fetched and not elsewhere, elsewhere
    finally:
        rc, output = served.ctrl_c()
    assert rc == 0, output
    assert leftovers(long_dir) == []


async def test_attached_app_reads_the_servers_history_for_etas(sample_dir, tmp_path):
    """The server records the history; an attached viewer reads it, so its builds get ETAs too."""
    os.link(sample_dir / "mnist.onnx", tmp_path / "mnist.onnx")
    history = tmp_path / "history.db"
    directory = tempfile.mkdtemp(prefix="trt-tui-test-serve-")
    session = make_session(1, history=history, cache=False)
    server = serve_session(session, os.path.join(directory, "builds.sock"), BuildOptions())
    try:
        viewer = Viewer(server.path)
        spec = BuildSpec(tmp_path / "mnist.onnx", tmp_path / "mnist.engine")
        first = viewer.remote.submit(spec)
        wait(lambda: viewer.remote.jobs[first.id].final, "the first build")
        assert viewer.remote.jobs[first.id].state is State.SUCCEEDED

        app = TrtTuiApp(AppConfig(paths=[str(tmp_path)], gpu_interval=60, session=SessionSettings(history=str(history))),
                        AttachedViewer(attach_session(server.path, str(history))))
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot_wait(pilot, lambda: first.id in app.views)
            assert app.session.history is not None
            await pilot.press("enter")  # the highlighted model: mnist, built again by the server
            await pilot_wait(pilot, lambda: len(app.views) == 2)
            second = app.views[max(app.views)]
            assert second.expected and "Building engine" in second.expected
            assert second.expected_seconds, "the first build's duration, with the same options"
            await pilot_wait(pilot, lambda: second.state is State.SUCCEEDED)
        viewer.remote.shutdown(timeout=5)
    finally:
        server.close()
        assert session.close(timeout=60)
        shutil.rmtree(directory)


async def test_a_served_tab_takes_stacks_shows_a_diff_and_cancels(sample_dir, tmp_path):
    """Through a real `trt-tui serve`: a browser tab's WebSocket starts the tab's app, and the same app
    (`--attach` to that server's socket, under the pilot) builds mnist with `enter`, again with `f`, and
    `D` compares the two (the server recorded them; the tab asks it which records they became); then a
    DenseNet build: `s` shows its stacks (taken by the server, which owns the build's process), `c`
    cancels it, and the server's build ends cancelled."""
    import aiohttp

    from trt_tui.ui.screens import StackScreen
    from trt_tui.ui.widgets.diff_panel import DiffPanel

    small, large = tmp_path / "small", tmp_path / "large"
    small.mkdir()
    large.mkdir()
    os.link(sample_dir / "mnist.onnx", small / "mnist.onnx")
    os.link(sample_dir / "densenet.onnx", large / "densenet.onnx")
    served = Served(str(small), str(large), token="t4b")
    try:
        async with aiohttp.ClientSession(headers={"Authorization": "Bearer t4b"}) as browser:
            tab = await browser.ws_connect(served.url + "/ws?width=100&height=30")
            assert (await tab.receive(timeout=60)).type == aiohttp.WSMsgType.BINARY  # its app has drawn
            await asyncio.to_thread(wait, lambda: len(served.sessions()) == 1, "the tab's app")
            command = served.sessions()[0].cmdline()
            socket_path = command[command.index("--attach") + 1]

            def tab_app(models: Path) -> TrtTuiApp:
                return TrtTuiApp(AppConfig(paths=[str(models)], gpu_interval=60,
                                           session=SessionSettings(history=served.history)),
                                 AttachedViewer(attach_session(socket_path, served.history)))

            app = tab_app(small)
            async with app.run_test(size=(160, 48)) as pilot:
                await pilot_wait(pilot, lambda: app.picker.models)
                await pilot.press("enter")
                await pilot_wait(pilot, lambda: app.selected == 1 and app.views[1].state.final, 120)
                assert app.views[1].state is State.SUCCEEDED
                await pilot.press("f")
                await pilot_wait(pilot, lambda: app.selected == 2 and app.views[2].state.final, 120)
                assert app.views[2].state is State.SUCCEEDED
                await pilot.press("D")
                await pilot_wait(pilot, lambda: isinstance(app.screen, DiffPanel), 30)
                title = app.screen.lines[0]
                assert title.startswith("mnist.onnx #1 (") and " → mnist.onnx #2 (" in title, title
                await pilot.press("escape")
                await pilot.press("q")

            app = tab_app(large)
            async with app.run_test(size=(160, 48)) as pilot:
                await pilot_wait(pilot, lambda: app.picker.models)
                await pilot.press("enter")
                await pilot_wait(pilot, lambda: app.selected == 3 and any(
                    p.name == "Building engine" for p in app.views[3].tree.phases.values()), 120)
                await pilot.press("s")
                await pilot_wait(pilot, lambda: isinstance(app.screen, StackScreen), 60)
                assert "Process " in app.screen.text and "Thread" in app.screen.text, app.screen.text[:300]
                await pilot.press("escape")
                await pilot_wait(pilot, lambda: not isinstance(app.screen, StackScreen))
                await pilot.press("c")
                await pilot_wait(pilot, lambda: app.views[3].state.final, 60)
                assert app.views[3].state is State.CANCELLED
                await pilot.press("q")
            await tab.close()
    finally:
        rc, output = served.ctrl_c()
    assert rc == 0, output
    assert "cancelling" not in output  # the tab's `c` had cancelled the one build that ran
    assert leftovers(large) == []

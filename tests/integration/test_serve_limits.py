"""`trt-tui serve --max-tabs N --max-tabs-per-client M`: the real server on loopback, real WebSocket
tabs from two client addresses (127.0.0.1 and 127.0.0.2, both loopback), its app processes counted."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time

import psutil
import pytest
from support.waiting import wait_until

TOKEN = "limits-token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SHORT_WAIT = 2.0  # --slot-wait where no slot frees while a request waits: its refusal comes sooner


@contextlib.contextmanager
def serving(sample_dir, cli_env, tmp_path, *options: str):
    """`trt-tui serve` of the samples, at most 3 tabs, 2 per client; its app processes by `tabs()`."""
    port = free_port()
    env = dict(cli_env, TRT_TUI_TOKEN=TOKEN, TRT_TUI_HISTORY=str(tmp_path / "history.sqlite3"))
    proc = subprocess.Popen([sys.executable, "-m", "trt_tui", "serve", str(sample_dir / "mnist.onnx"), "--port",
                             str(port), "--max-tabs", "3", "--max-tabs-per-client", "2", *options],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)

    def listening() -> bool:
        assert proc.poll() is None, proc.stdout.read()
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    def tabs() -> list[psutil.Process]:
        """The running app processes (an ended one, a zombie until reaped, is no tab)."""
        running = []
        for child in psutil.Process(proc.pid).children(recursive=True):
            try:
                if "--attach" in child.cmdline() and child.status() != psutil.STATUS_ZOMBIE:
                    running.append(child)
            except psutil.Error:  # ended meanwhile
                continue
        return running

    try:
        wait_until(listening, 60, "the server to listen")
        yield port, tabs
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.fixture
def server(sample_dir, cli_env, tmp_path):
    """The server as served by default (a request waits 10 s for a slot)."""
    with serving(sample_dir, cli_env, tmp_path) as served:
        yield served


@pytest.fixture
def refusing_server(sample_dir, cli_env, tmp_path):
    """The server with `--slot-wait 2`: a request no slot frees for is refused after 2 s."""
    with serving(sample_dir, cli_env, tmp_path, "--slot-wait", str(SHORT_WAIT)) as served:
        yield served


def client(address: str):
    """A browser with the token, whose connections come from `address`."""
    import aiohttp

    return aiohttp.ClientSession(headers={"Authorization": f"Bearer {TOKEN}"},
                                 connector=aiohttp.TCPConnector(local_addr=(address, 0)))


async def open_tab(browser, port: int):
    """A tab's WebSocket, once its app process has drawn; read on from then on, as a browser does
    (the server closes a tab that answers no ping)."""
    import aiohttp

    tab = await browser.ws_connect(f"http://127.0.0.1:{port}/ws?width=100&height=30")
    message = await tab.receive(timeout=60)
    assert message.type == aiohttp.WSMsgType.BINARY and message.data
    reading = asyncio.get_running_loop().create_task(_read(tab))
    _reading.add(reading)
    reading.add_done_callback(_reading.discard)
    return tab


_reading: set[asyncio.Task] = set()


async def _read(tab) -> None:
    async for _ in tab:
        pass


async def refused(browser, port: int) -> tuple[int, int, str]:
    """(the tab's handshake status, the page's status, the page) for a tab that gets no slot (each
    waits for one a while before it is refused: both at once)."""
    import aiohttp

    async def handshake() -> int:
        with pytest.raises(aiohttp.WSServerHandshakeError) as refusal:
            await browser.ws_connect(f"http://127.0.0.1:{port}/ws?width=100&height=30")
        return refusal.value.status

    async def page() -> tuple[int, str]:
        async with browser.get(f"http://127.0.0.1:{port}/") as response:
            return response.status, await response.text()

    tab_status, (page_status, text) = await asyncio.gather(handshake(), page())
    return tab_status, page_status, text


def test_tabs_beyond_the_limits_get_a_page_and_no_app_process(refusing_server):
    """Two tabs from one address, then its third: 429 with a page naming the per-client limit, after
    waiting `--slot-wait` for a slot. One from a second address fills the server: its next is 503,
    naming the limit in all. No refusal starts an app process; a request without the token is still
    403; closing a tab frees its slot."""
    import aiohttp

    port, tabs = refusing_server

    async def browse() -> None:
        async with client("127.0.0.1") as first, client("127.0.0.2") as second:
            mine = [await open_tab(first, port), await open_tab(first, port)]
            t0 = time.monotonic()
            tab_status, page_status, page = await refused(first, port)
            assert (tab_status, page_status) == (429, 429)
            assert time.monotonic() - t0 >= SHORT_WAIT  # it waited for a slot first
            assert "<title>trt-tui: Too many trt-tui tabs from this address</title>" in page
            assert "(127.0.0.1) has 2 tabs open here" in page and "--max-tabs-per-client 2" in page
            assert len(tabs()) == 2

            theirs = await open_tab(second, port)
            tab_status, page_status, page = await refused(second, port)
            assert (tab_status, page_status) == (503, 503)
            assert "at most 3 tabs at once (--max-tabs), and 3 are open" in page
            assert len(tabs()) == 3
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(local_addr=("127.0.0.2", 0))) as anonymous:
                async with anonymous.get(f"http://127.0.0.1:{port}/") as response:
                    assert response.status == 403  # the token is checked first: no slot, no word of them

            await mine[0].close()  # its slot is free once its app process has ended
            await asyncio.to_thread(wait_until, lambda: len(tabs()) == 2, 60, "the closed tab's app to end")
            again = await open_tab(second, port)
            assert len(tabs()) == 3
            for tab in (mine[1], theirs, again):
                await tab.close()

    asyncio.run(browse())
    wait_until(lambda: tabs() == [], 60, "every tab's app to end")


def test_a_reloaded_tab_gets_its_slot_back(server):
    """A full client reloads a tab: the new page waits for the old tab's app to end, and is served."""
    port, tabs = server

    async def browse() -> None:
        async with client("127.0.0.1") as browser:
            tabs_open = [await open_tab(browser, port), await open_tab(browser, port)]
            await tabs_open[0].close()  # the page unloads; at once the reloaded page asks again
            t0 = time.monotonic()
            async with browser.get(f"http://127.0.0.1:{port}/") as response:
                assert response.status == 200 and re.search(r"ws://127\.0\.0\.1:\d+/ws", await response.text())
            reloaded = await open_tab(browser, port)
            assert time.monotonic() - t0 < 30
            assert len(tabs()) == 2
            for tab in (tabs_open[1], reloaded):
                await tab.close()

    asyncio.run(browse())

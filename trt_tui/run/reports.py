"""The Unix socket the observed program's processes report their builds to.

It lives in a private directory (0700: only this user reaches it) and every connection must prove it
knows the run's key (multiprocessing's HMAC challenge, both ways) before anything it sends is read.
The challenge runs on the connection's own thread, within `HANDSHAKE_TIMEOUT`: a connection that
never answers holds only its own thread, for that long, and never the accepting one, so the
processes that do report are served at once.

A Python process of the program also leaves a mark in the directory as it starts (`PYTHON_MARK`,
written by `site/sitecustomize.py`), which tells a program that is not Python (no report possible)
from one that simply built nothing.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable
from multiprocessing.connection import Client, Listener, answer_challenge, deliver_challenge

HANDSHAKE_TIMEOUT = 10.0  # seconds a connection has to prove it knows the key
PYTHON_MARK = "python"  # a file a Python process of the program creates in the socket's directory


class ReportServer:
    def __init__(self, serve: Callable[[object], None], listener: Listener | None = None,
                 key: bytes | None = None) -> None:
        """`serve(conn)`: reads one authenticated connection until it ends (on its own thread).
        `listener` and `key`: a socket made elsewhere (the collector's), else one in a new directory."""
        self.serve = serve
        self.directory: str | None = None
        if listener is not None:
            self.address = listener.address
        else:
            self.directory = directory = tempfile.mkdtemp(prefix="trt-tui-run-")
            self.address = os.path.join(directory, "socket")
        self.key = key or secrets.token_bytes(16)
        self._listener: Listener | None = listener or Listener(self.address, family="AF_UNIX")
        self._closing = False
        self._lock = threading.Lock()
        self.readers: list[threading.Thread] = []  # one per authenticated connection
        threading.Thread(target=self._accept, name="trt-tui-run-accept", daemon=True).start()

    @property
    def python_seen(self) -> bool:
        """Whether a Python process of the program started (and could report)."""
        return self.directory is not None and os.path.exists(os.path.join(self.directory, PYTHON_MARK))

    def _accept(self) -> None:
        while not self._closing:
            listener = self._listener
            if listener is None:
                return
            try:
                conn = listener.accept()
            except Exception:  # the listener closed
                continue
            if self._closing:
                conn.close()
                return
            threading.Thread(target=self._handshake, args=(conn,), name="trt-tui-run-conn", daemon=True).start()

    def admit(self, conn) -> bool:
        """Whether to talk to this peer at all, before the challenge (the collector checks its user)."""
        return True

    def _handshake(self, conn) -> None:
        if not self.admit(conn):
            conn.close()
            return
        # A recv blocked on a silent peer wakes when the socket is shut down (a close would not wake it).
        sock = socket.socket(fileno=os.dup(conn.fileno()))
        timer = threading.Timer(HANDSHAKE_TIMEOUT, _shut, args=(sock,))
        timer.daemon = True
        timer.start()
        try:
            deliver_challenge(conn, self.key)
            answer_challenge(conn, self.key)
        except Exception:  # a wrong key, a silent or vanished peer
            conn.close()
            return
        finally:
            timer.cancel()
            sock.close()
        with self._lock:
            if self._closing:
                conn.close()
                return
            self.readers.append(threading.current_thread())
        self.serve(conn)

    def join_readers(self, timeout: float) -> None:
        """Wait for the connections to deliver what they hold (each ends at its end of file)."""
        with self._lock:
            readers = list(self.readers)
        for reader in readers:
            reader.join(timeout)

    def close(self) -> None:
        listener, self._listener = self._listener, None
        if listener is None:
            return
        self._closing = True
        try:  # a blocked accept() does not notice a close: wake it with a connection of our own
            Client(self.address, family="AF_UNIX").close()
        except Exception:
            pass
        listener.close()
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass

"""A collector client that sends more than any build does, as fast as the socket takes it, over the
real socket and protocol (the app it reports to is found as `trt_tui.observe` finds it).

`collector_flood.py logs N`: one build, N log lines (each with an escape sequence and markup in it,
as a hostile program could send), then its end. `collector_flood.py builds N`: N builds announced on
one connection, none ended. Either way it then holds the connection until stdin closes, printing
"sent" once everything was sent."""

from __future__ import annotations

import os
import sys
import time
from multiprocessing.connection import Client

from trt_tui.core.build.events import BuildResult, Finished, Log, Severity, State
from trt_tui.run.collector import place
from trt_tui.run.collector.client import hello

BATCH = 1000


def main(kind: str, count: int) -> None:
    target = place.reporter_target()
    assert target is not None, "no app listens"
    address, key = target
    conn = Client(address, family="AF_UNIX", authkey=key)  # no send timeout: the flood waits on a full socket
    conn.send(("hello", os.getpid(), *hello("flood\x1b]0;pwned\x07[b]x", True)))
    t0 = time.monotonic()
    if kind == "logs":
        conn.send(("build", 1, "flood.onnx", "tensorrt-rtx", t0, "1.7"))
        for start in range(0, count, BATCH):
            conn.send(("events", [Log(1, time.monotonic() - t0, Severity.INFO, f"line {i} \x1b]52;c;cm0gLXJmIH4K\x07 [b]x")
                                  for i in range(start, min(count, start + BATCH))]))
        conn.send(("events", [Finished(1, time.monotonic() - t0, BuildResult(State.SUCCEEDED))]))
    else:
        for local in range(1, count + 1):
            conn.send(("build", local, f"many-{local}.onnx", "tensorrt-rtx", t0, "1.7"))
    print("sent", flush=True)
    sys.stdin.read()
    conn.close()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))

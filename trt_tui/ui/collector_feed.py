"""The app's end of the collector: while the app runs, builds from other programs of this user
(`trt_tui.observe`, `trt-tui run`, the environment's hook) join its builds list, named by their
program, with their log, vitals and `c` to cancel (see `trt_tui.run.collector`).

Only an app that owns its builds listens: not a served tab (the server listens) nor `trt-tui run`'s
app (it shows one program, and forwards its builds to the app that listens). A refusal (another app
listens, the runtime directory is not safe) is one notification.
"""

from __future__ import annotations

from ..run.collector.server import Collector, NotListening


def listen(app) -> Collector | None:
    """Collect into `app`'s scheduler, from its first frame until `stop`."""
    if not app.mode.collects:
        return None

    def note(line: str) -> None:  # from the collector's threads: handed to the UI, never waited for long
        try:
            app.call_from_thread(app.notify, line, severity="warning", markup=False)
        except Exception:  # the app is closing
            pass

    try:
        return Collector(app.scheduler, app.config.session.vitals, note).start()
    except NotListening as exc:
        app.notify(str(exc), severity="warning", timeout=10, markup=False)
        return None


def stop(collector: Collector | None) -> None:
    """Before the session closes: let go of the other programs' builds (they build on) at once."""
    if collector is not None:
        collector.close()


def model_file(collector: Collector | None, job: int) -> str | None:
    """The ONNX file another program's build `job` parsed (None: not such a build, or no file named)."""
    return collector.model_file(job) if collector is not None else None

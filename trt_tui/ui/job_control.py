"""The app stopped and continued by job control, whichever way it was stopped.

Textual's terminal driver answers SIGTSTP (Ctrl-Z) by leaving application mode and SIGCONT by
entering it again. But SIGCONT also comes after a plain SIGSTOP (`kill -STOP`, a debugger, a
cgroup freezer), which Textual never saw: it then enters application mode a second time, over the
running one, and a second input thread reads the terminal beside the first. Each key wakes both;
one takes it, the other waits in a blocking read, and quitting waits for the wrong one: `q` is
never answered. Here SIGCONT resumes the driver only after the driver suspended itself on SIGTSTP;
after a plain SIGSTOP the running application mode simply goes on.
"""

from __future__ import annotations

import signal
import threading


def resume_only_after_suspend() -> None:
    """Wrap the terminal driver's SIGTSTP and SIGCONT handlers (once the driver is running, on the
    main thread). Nothing to do where the driver handles neither (a headless or web driver)."""
    if threading.current_thread() is not threading.main_thread():
        return
    on_stop, on_continue = signal.getsignal(signal.SIGTSTP), signal.getsignal(signal.SIGCONT)
    if not callable(on_stop) or not callable(on_continue):
        return
    suspended = threading.Event()

    def stop(signum, frame) -> None:
        suspended.set()  # before the driver's handler, which stops the process inside itself
        on_stop(signum, frame)

    def resume(signum, frame) -> None:
        if suspended.is_set():
            suspended.clear()
            on_continue(signum, frame)

    signal.signal(signal.SIGTSTP, stop)
    signal.signal(signal.SIGCONT, resume)

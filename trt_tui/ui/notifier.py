"""What the app tells the user beyond its screen: a build's end, and on quit what was built.

A build that succeeded or failed after more than `AppConfig.notify_after` seconds (the user has
looked away; a cancel is the user's own doing) rings the terminal's bell and asks the terminal for a
desktop notification with the two sequences terminals know: OSC 9 (iTerm2, WezTerm, kitty, ghostty)
and OSC 777 (foot, WezTerm, ghostty, rxvt-unicode's notify extension). Inside tmux each is wrapped
in tmux's passthrough sequence, which tmux hands to the terminal around it (where its
`allow-passthrough` option is on). They are written through the app's driver, the one writer of
the real terminal while the app runs. A build that failed or was cancelled also shows a toast.

`run_app` runs the app and, once its screen is gone, prints one line of what was built, failed and
cancelled on the process's standard output (and on its standard error, why the view was not kept).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from ..core.build.events import BuildResult, State
from .widgets.outside_text import plain

DEFAULT_NOTIFY_AFTER = 10.0  # seconds: a build shorter than this was watched to its end
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f;]")  # would end a sequence early, or split OSC 777's fields


def notification(title: str, body: str, tmux: bool = False) -> str:
    """The bell, then OSC 9 and OSC 777 for `title` and `body` (control characters and `;` left
    out); each wrapped for tmux's passthrough where `tmux`."""
    title, body = _CONTROL.sub(" ", title), _CONTROL.sub(" ", body)
    sequences = [f"\x1b]9;{title}: {body}\x07", f"\x1b]777;notify;{title};{body}\x07"]
    if tmux:
        sequences = ["\x1bPtmux;" + s.replace("\x1b", "\x1b\x1b") + "\x1b\\" for s in sequences]
    return "\x07" + "".join(sequences)


class Notifier:
    """The app's: `ended` is called once per build that reached a final state."""

    def __init__(self, app, after: float) -> None:
        self.app = app
        self.after = after  # 0: never
        self.tmux = bool(os.environ.get("TMUX"))

    def ended(self, view, event: BuildResult) -> None:
        name = Path(str(view.model)).name
        if event.state is State.FAILED:
            self.app.notify(event.error or "build failed", title=f"{name} failed", severity="error", timeout=10,
                            markup=False)
        elif event.state is State.CANCELLED:
            self.app.notify(event.detail or "cancelled", title=f"{name} cancelled", severity="warning", markup=False)
        # A cancel is the user's own act (c, C, q) or a rebuild replacing the build: they are there.
        if self.after > 0 and event.state in (State.SUCCEEDED, State.FAILED) and view.elapsed() >= self.after:
            self.alert(f"trt-tui: {name} {event.state.value}",
                       f"build #{view.id} {event.state.value} after {view.elapsed():.0f}s")

    def alert(self, title: str, body: str) -> None:
        driver = self.app._driver  # Textual's writer of the terminal; None before it starts and after it ends
        if driver is not None:
            driver.write(notification(title, body, self.tmux))


def summary(views) -> str | None:
    """`trt-tui: 2 built (mnist.onnx, resnet50.onnx), 1 failed (bad.onnx), 0 cancelled` for the
    builds the app showed (a build that had not ended counts as cancelled: quitting stopped it);
    None where there were none. Up-to-date models, which nothing built, are counted at the end."""
    groups: dict[str, list[str]] = {"built": [], "failed": [], "cancelled": [], "up to date": []}
    for view in views:
        state = view.state  # as the build's events said: what the screen showed last
        key = {State.SUCCEEDED: "built", State.FAILED: "failed", State.SKIPPED: "up to date"}.get(state, "cancelled")
        groups[key].append(plain(Path(str(view.model)).name))  # printed on the terminal once the app is gone
    if not any(groups.values()):
        return None
    parts = []
    for key, names in groups.items():
        if key == "up to date" and not names:
            continue
        unique = list(dict.fromkeys(names))
        shown = ", ".join(unique[:4]) + (", …" if len(unique) > 4 else "")
        parts.append(f"{len(names)} {key}" + (f" ({shown})" if names else ""))
    return "trt-tui: " + ", ".join(parts)


def run_app(app):
    """Run the app; after its screen is gone, print what it built (builds a served tab only viewed
    are the server's: not counted). Returns the app."""
    app.run()
    line = None if app.mode.served else summary(list(app.state.views.values()))
    if line:
        print(line, file=sys.stdout, flush=True)
    if app.view_not_kept:
        print(app.view_not_kept, file=sys.stderr, flush=True)
    return app

"""Text from outside trt-tui as the app shows it: file and directory names, a model's metadata,
TensorRT's log lines, other programs' names, output and reports.

Such text is data. Written to the terminal as it is, a name holding an escape sequence would act on
the terminal (OSC 52 sets the clipboard, OSC 0 the window's title, CSI moves the cursor), and a
widget that reads markup would run `[@click=app.quit]` or draw `[b]` as bold. Every widget, toast and
title that shows outside text takes it from here: control characters escaped as headless output
escapes them (`\\x1b`, `core.files.printable`), and as plain text or a rich `Text`, never markup.
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Text

from ...core.files.printable import escaped

__all__ = ["plain", "plain_lines", "shown"]


def plain(text: object) -> str:
    """One line of outside text, its control characters escaped, for a place that reads no markup
    (a `Text`'s append, a `Content` part, a toast: the app's toasts never read markup)."""
    return escaped(str(text))


def plain_lines(text: object) -> str:
    """Several lines of outside text (a program's stacks): each line escaped, the line breaks kept."""
    return "\n".join(escaped(line) for line in str(text).split("\n"))


def shown(text: object, style: str | Style = "") -> Text:
    """Outside text as a rich `Text` (which a widget never reads as markup), escaped."""
    return Text(plain(text), style=style)

"""Text from outside trt-tui (file names, TensorRT's messages) made safe to print on a terminal."""

from __future__ import annotations


def escaped(text: str) -> str:
    """`text` with every character a terminal would act on or hide (escape sequences, newlines that
    would forge a line of their own, bidirectional overrides, bytes that were not UTF-8) written as
    a Python string literal writes it: `\\x1b`, `\\n`, `\\u202e`, `\\udcff`. Printable text, spaces
    included, stays as it is."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)

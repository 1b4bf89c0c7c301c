"""Every output format by name: the built-in ones, each module of this package, and those installed
packages declare under the `trt_tui.formats` entry-point group (`name = "module:Class"`).

A format module defines a `Renderer` subclass with a `name`; nothing else is told about it.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import sys
from typing import TextIO

from ..core.build.events import Severity
from .renderer import Renderer

__all__ = ["ENTRY_POINT_GROUP", "command_line_formats", "format_class", "formats", "installed_formats",
           "make_renderer"]

ENTRY_POINT_GROUP = "trt_tui.formats"
_ALIASES = {"plain": "lines"}  # the API's earlier name of the line format


def _renderers_in(module) -> list[type[Renderer]]:
    return [value for value in vars(module).values()
            if isinstance(value, type) and issubclass(value, Renderer) and "name" in vars(value)
            and value.__module__ == module.__name__]


@functools.cache
def formats() -> dict[str, type[Renderer]]:
    """trt-tui's own formats, by name: the built-in ones and each module of this package."""
    found: dict[str, type[Renderer]] = {}
    package = sys.modules[__package__]
    modules = sorted((info.name for info in pkgutil.iter_modules(package.__path__)
                      if info.name not in ("renderer", "registry")), key=lambda name: name != "headless")
    names = [f"{__package__}.{name}" for name in modules]  # the headless front end's own formats first
    for module in names:
        found.update((cls.name, cls) for cls in _renderers_in(importlib.import_module(module)))
    return found


@functools.cache
def installed_formats() -> dict[str, type[Renderer]]:
    """Those installed packages add (never one of trt-tui's own names): looked up only for a name
    trt-tui does not have, since reading every package's metadata costs a few tenths of a second."""
    from importlib.metadata import entry_points


    found: dict[str, type[Renderer]] = {}
    for point in entry_points(group=ENTRY_POINT_GROUP):
        cls = point.load()
        if isinstance(cls, type) and issubclass(cls, Renderer) and point.name not in formats():
            found[point.name] = cls
    return found


def format_class(name: str) -> type[Renderer]:
    """The format called `name`; a ValueError names the ones there are."""
    found = formats().get(name) or installed_formats().get(name)
    if found is None:
        names = [*formats(), *installed_formats()]
        raise ValueError(f"must be one of auto, {', '.join(names)}, not {name!r}")
    return found


def command_line_formats() -> list[str]:
    """trt-tui's own formats `--format` offers (it takes an installed package's too)."""
    return [name for name, cls in formats().items() if cls.on_command_line]


def make_renderer(name: str | None, out: TextIO | None = None, verbose: bool = False) -> Renderer:
    """The format called `name` writing to `out` (default stdout); None or "auto": the live terminal
    display on a terminal, else lines."""
    out = out or sys.stdout
    name = _ALIASES.get(name or "auto", name or "auto")
    if name == "auto":
        name = "tty" if out.isatty() else "lines"
    return format_class(name)(out, Severity.VERBOSE if verbose else Severity.WARNING)

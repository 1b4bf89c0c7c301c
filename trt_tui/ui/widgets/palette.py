"""A theme's colours for what the widgets draw of a build, and the short texts drawn with them (a
state, a verdict, a progress bar).

Colours come from the theme: a `Palette` is read from the app's CSS variables, which every theme
file fills (`state-*` and `verdict-*`, falling back to the theme's success, error and warning
colours), and is read again when the theme changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rich.text import Text
from textual.color import Color, ColorParseError

from ...core.build.events import State
from .outside_text import plain

# Each role's theme variable, and the standard variable it falls back to in a theme that lacks it.
ROLES: dict[str, tuple[str, str]] = {
    "queued": ("state-queued", "foreground-muted"),
    "running": ("state-running", "accent"),
    "succeeded": ("state-succeeded", "success"),
    "failed": ("state-failed", "error"),
    "cancelled": ("state-cancelled", "warning"),
    "skipped": ("state-skipped", "success"),
    "working": ("verdict-working", "success"),
    "stalled": ("verdict-stalled", "error"),
    "stopped": ("verdict-stopped", "warning"),
    "muted": ("foreground-muted", "foreground"),
}
BOLD_ROLES = {"running", "succeeded", "failed", "stalled", "stopped"}
STATE_ROLES = {State.QUEUED: "queued", State.PARSING: "running", State.BUILDING: "running",
               State.WRITING: "running", State.SUCCEEDED: "succeeded", State.FAILED: "failed",
               State.CANCELLED: "cancelled", State.SKIPPED: "skipped"}


@dataclass(frozen=True)
class Palette:
    """A Rich style per role, from a theme's variables."""

    styles: Mapping[str, str]

    @classmethod
    def from_variables(cls, variables: Mapping[str, str]) -> Palette:
        """`variables`: `App.get_css_variables()`. Colours with alpha are blended onto the background,
        as the screen shows them."""
        background = _color(variables.get("background")) or Color(0, 0, 0)
        styles = {}
        for role, (name, fallback) in ROLES.items():
            color = _color(variables.get(name)) or _color(variables.get(fallback))
            hex_ = (background + color).hex if color is not None else ""
            styles[role] = f"bold {hex_}".strip() if role in BOLD_ROLES else hex_
        return cls(styles)

    def __getitem__(self, role: str) -> str:
        return self.styles.get(role, "")

    def state(self, state: State) -> str:
        return self[STATE_ROLES[state]]

    def verdict(self, verdict: str | None) -> str:
        return self[verdict] if verdict in ("working", "stalled", "stopped") else ""


def _color(value: str | None) -> Color | None:
    if not value:
        return None
    try:
        return Color.parse(value)
    except ColorParseError:
        return None


PLAIN = Palette({})  # no colours: for text output and tests that read words only


def same_text(a: Text | None, b: Text | None) -> bool:
    """Whether two texts look the same: rich's `==` leaves out the base style, which is what a theme
    change alters in a cell such as a build's state."""
    return a is not None and b is not None and a.plain == b.plain and a.style == b.style and a.spans == b.spans


def state_text(state: State, palette: Palette = PLAIN, label: str | None = None) -> Text:
    return Text(label or state.value, style=palette.state(state))


def verdict_text(verdict: str | None, palette: Palette = PLAIN) -> Text:
    return Text(plain(verdict or "-"), style=palette.verdict(verdict))  # a program may send it


def progress_text(fraction: float, palette: Palette = PLAIN, width: int = 10) -> Text:
    filled = int(max(0.0, min(1.0, fraction)) * width)
    text = Text("█" * filled, style=palette["running"])
    text.append("░" * (width - filled), style=palette["muted"])
    text.append(f" {fraction * 100:3.0f}%")
    return text

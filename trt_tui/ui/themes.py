"""Themes are TOML files: the built-in ones in `themes/`, and the user's own in the config directory.

A theme file holds the fields of `textual.theme.Theme` (name, primary, background, dark, ...). They
are all registered at start, so `--theme NAME` and the command palette's theme switcher see them.
"""

from __future__ import annotations

import sys
from pathlib import Path

from textual.theme import Theme

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

FIELDS = {"name", "primary", "secondary", "warning", "error", "success", "accent", "foreground",
          "background", "surface", "panel", "boost", "dark", "luminosity_spread", "text_alpha", "variables"}


def theme_dirs() -> list[Path]:
    """Built-in themes (installed package, or the checkout's top-level themes/), then the user's."""
    from platformdirs import user_config_dir

    here = Path(__file__).resolve().parent.parent
    dirs = [here / "themes", here.parent / "themes", Path(user_config_dir("trt-tui")) / "themes"]
    return [d for d in dict.fromkeys(dirs) if d.is_dir()]


def load_theme(path: Path) -> Theme:
    with path.open("rb") as f:
        data = tomllib.load(f)
    unknown = set(data) - FIELDS
    if unknown:
        raise ValueError(f"{path}: unknown theme field(s) {', '.join(sorted(unknown))}")
    data.setdefault("name", path.stem)
    return Theme(**data)


def load_themes() -> list[Theme]:
    themes = []
    for directory in theme_dirs():
        for path in sorted(directory.glob("*.toml")):
            try:
                themes.append(load_theme(path))
            except (OSError, ValueError, TypeError, tomllib.TOMLDecodeError) as exc:
                print(f"trt-tui: skipping theme {path}: {exc}", file=sys.stderr)
    return themes

"""Where trt-tui keeps what it can make again (fetched engines, model digests, the compiled C++
preload): `$TRT_TUI_CACHE`, else platformdirs' user cache directory for trt-tui, one folder per kind."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache_subdir(name: str) -> Path | None:
    """`name`'s folder in trt-tui's cache directory; None where platformdirs is not importable."""
    explicit = os.environ.get("TRT_TUI_CACHE")
    if explicit:
        return Path(explicit) / name
    try:
        import platformdirs
    except ImportError:
        return None
    return Path(platformdirs.user_cache_dir("trt-tui")) / name

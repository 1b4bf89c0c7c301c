"""trt-tui's version: its own module, so the core (a build's fingerprint, a report bundle) reads it
without importing the package's front door, which leads to the public API and from there to
everything; `pyproject.toml` takes the distribution's version from here too."""

__version__ = "0.1.0"

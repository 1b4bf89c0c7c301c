"""Watching a build from outside: vitals (working or stuck), GPU telemetry through NVML, and
the Chrome trace of a build's phases. May import `core.files` and `core.build`; it reads a build only
through its events.
"""

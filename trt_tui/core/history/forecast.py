"""A build's peak host memory, forecast before it starts, from the builds the history measured.

In order of trust:

1. *same model*: builds of the same model content (its hash) with the same options: the largest
   peak of the newest few (peaks of one model vary a little from build to build; the largest is the
   one that must fit);
2. *fitted*: other models' peaks against their sizes, a straight line `peak = base + ratio × size`
   fitted by least squares over each model's peak (the base is what TensorRT itself holds, whatever
   the model); its spread is the largest relative miss on each of those models of the line fitted to
   the others (none from two models: a line through two points misses neither, which says nothing);
3. *unknown*: fewer than two models of different sizes measured.

A measured peak far beyond what the model's size and the history justify is not believed, and left
out of both (`implausible`; the forecast counts them in `left_out`, and the headless line says so): a
peak above the largest of every model at least `SIZE_RATIO` times larger, or more than `OWN_RATIO`
times the median of the same model's other builds. One such peak (a spare's heap reserve counted as
a 45 KiB MNIST's, 1.1 GiB) would otherwise be the forecast of every later build of that model.

The forecast's error against the measured peak goes into the history with the build
(`forecast_fields`), so how good the forecasts are can be read back (`trt-tui history --json`).
"""

from __future__ import annotations

import json
from pathlib import Path

from ..build.payloads import Forecast

SAME_MODEL_FROM = 3  # newest builds of the same model and options whose largest peak is the forecast
FIT_FROM = 200  # newest measured builds the line is fitted to
SIZE_RATIO = 10  # a model this many times larger that peaked lower makes a peak implausible
OWN_RATIO = 2.0  # a peak this many times the median of the model's other builds is implausible


UNKNOWN = Forecast(None, "unknown")


def model_bytes(model: Path) -> int | None:
    """The model's size with the external data files it names."""
    from ..cache.engine_cache import model_files

    try:
        return sum(path.stat().st_size for path in model_files(model) if path.exists())
    except OSError:
        return None


def options_key(options: dict) -> str:
    """Options as the history stores them (`History.record`), to match a build with its own."""
    return json.dumps(options, sort_keys=True, default=str)


def forecast(measured: list[tuple], content_hash: str | None, options: dict, size: int | None) -> Forecast:
    """`measured`: (model hash, options as stored, model bytes, peak bytes) of successful builds,
    newest first (`History.measured_peaks`)."""
    key = options_key(options)
    flags = [implausible(row, measured) for row in measured]
    believed = [row for row, out in zip(measured, flags) if not out]
    # Only this model's own peaks left out are news to its forecast; others' only move the line a little.
    own_left_out = sum(1 for row, out in zip(measured, flags)
                       if out and content_hash and row[0] == content_hash and row[1] == key)
    same = [peak for h, opts, _, peak in believed if content_hash and h == content_hash and opts == key]
    if same:
        return Forecast(max(same[:SAME_MODEL_FROM]), "same model", model_bytes=size, left_out=own_left_out)
    if size is None:
        return UNKNOWN
    fitted = fit(believed)
    if fitted is None:
        return Forecast(None, "unknown", model_bytes=size, left_out=own_left_out)
    base, ratio, spread = fitted
    return Forecast(int(base + ratio * size), "fitted", spread, size, left_out=own_left_out)


def implausible(row: tuple, measured: list[tuple]) -> bool:
    """Whether the peak of `row` (as `measured`'s) is beyond what its model's size and the history
    justify: above the peak of every model at least `SIZE_RATIO` times larger (and there is one), or
    above `OWN_RATIO` times the median of the same model's other builds (there are two or more)."""
    content_hash, _, size, peak = row
    if not peak:
        return False
    if size:
        larger = [p for h, _, s, p in measured if s and p and h != content_hash and s >= SIZE_RATIO * size]
        if larger and peak > max(larger):
            return True
    if content_hash:
        own = sorted(p for other in measured if other is not row and other[0] == content_hash and (p := other[3]))
        if len(own) >= 2 and peak > OWN_RATIO * own[len(own) // 2]:
            return True
    return False


def _line(points: list[tuple[int, int]]) -> tuple[float, float] | None:
    """(base, ratio) of the least-squares line through `points`; None under two distinct sizes."""
    if len({x for x, _ in points}) < 2:
        return None
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    sxx = sum((x - mean_x) ** 2 for x, _ in points)
    ratio = max(0.0, sum((x - mean_x) * (y - mean_y) for x, y in points) / sxx)
    return max(0.0, mean_y - ratio * mean_x), ratio


def fit(measured: list[tuple]) -> tuple[float, float, float | None] | None:
    """(base, ratio, spread) of the line through each model's largest peak against its size."""
    by_model: dict[str, tuple[int, int]] = {}
    for content_hash, _, size, peak in measured:
        if size and peak and content_hash:
            known = by_model.get(content_hash)
            by_model[content_hash] = (size, max(peak, known[1] if known else 0))
    points = list(by_model.values())
    line = _line(points)
    if line is None:
        return None
    misses = []
    for i, (x, y) in enumerate(points):
        others = _line(points[:i] + points[i + 1:])
        if others is not None:
            guess = max(others[0] + others[1] * x, 1.0)
            misses.append(abs(y - guess) / guess)
    return line[0], line[1], max(misses) if misses else None


def forecast_fields(forecast: Forecast | None, peak: int | None) -> dict:
    """The history's columns for a build's forecast (as its queued state says):
    its size, the forecast and its error (measured peak minus forecast: positive when the build
    needed more than forecast)."""
    if forecast is None:
        return {}
    forecast_bytes = forecast.peak_bytes
    error = peak - forecast_bytes if peak and forecast_bytes is not None else None
    return {"model_bytes": forecast.model_bytes, "forecast_bytes": forecast_bytes,
            "forecast_error_bytes": error}

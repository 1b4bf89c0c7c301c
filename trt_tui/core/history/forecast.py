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

The forecast's error against the measured peak goes into the history with the build
(`forecast_fields`), so how good the forecasts are can be read back (`trt-tui history --json`).
"""

from __future__ import annotations

import json
from pathlib import Path

from ..build.payloads import Forecast

SAME_MODEL_FROM = 3  # newest builds of the same model and options whose largest peak is the forecast
FIT_FROM = 200  # newest measured builds the line is fitted to


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
    same = [peak for h, opts, _, peak in measured if content_hash and h == content_hash and opts == key]
    if same:
        return Forecast(max(same[:SAME_MODEL_FROM]), "same model", model_bytes=size)
    if size is None:
        return UNKNOWN
    fitted = fit(measured)
    if fitted is None:
        return Forecast(None, "unknown", model_bytes=size)
    base, ratio, spread = fitted
    return Forecast(int(base + ratio * size), "fitted", spread, size)


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

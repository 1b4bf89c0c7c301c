"""What the observed build returned: `Builder.build_serialized_network` (and `_to_stream`) wrapped once
per TensorRT module, so that a build made with an observed config tells its observation whether an
engine came back, and how large, on the caller's thread as it returns.

Any other build passes straight through (one dictionary lookup). `trt-tui run` wraps the same methods
in an observed program; the two wrappers chain, whichever came first.
"""

from __future__ import annotations

import functools
import threading
import weakref
from types import ModuleType

_observed: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # config -> its open observation
_patched: set[str] = set()
_lock = threading.Lock()


def report_to(trt: ModuleType, config, observation) -> bool:
    """Builds made with `config` report to `observation` (`observation._build_starts()`, then
    `observation._built(result, exc)`) until `forget(config)`. False where the builder's methods
    cannot be wrapped."""
    with _lock:
        if trt.__name__ not in _patched:
            try:
                builder = trt.Builder
                for name in ("build_serialized_network", "build_serialized_network_to_stream"):
                    original = getattr(builder, name, None)
                    if original is not None:
                        setattr(builder, name, _wrap(original))
            except (AttributeError, TypeError):
                return False
            _patched.add(trt.__name__)
        _observed[config] = observation
    return True


def forget(config) -> None:
    with _lock:
        _observed.pop(config, None)


def _wrap(original):
    @functools.wraps(original)
    def build(builder, network, config, *args, **kwargs):
        try:
            observation = _observed.get(config)
        except TypeError:  # not a config at all: TensorRT says so
            observation = None
        if observation is None:
            return original(builder, network, config, *args, **kwargs)
        observation._build_starts()
        try:
            result = original(builder, network, config, *args, **kwargs)
        except BaseException as exc:
            observation._built(None, exc)
            raise
        observation._built(result, None)
        return result

    return build

"""What a build on Ray says when its task ended without a result: Ray's exception in the user's words,
in one line, without Ray's terminal colours (a raylet killed mid-build used to print
`RayTaskError(ActorDiedError): \\x1b[36mray::trt-tui-build-2()\\x1b[39m (pid=…)`)."""

from __future__ import annotations

import pytest

exceptions = pytest.importorskip("ray.exceptions", reason="needs ray (the [ray] extra)")

from trt_tui.core.execution.ray_executor import _ray_reason  # noqa: E402


def raised_in_task(cause: BaseException) -> BaseException:
    """The exception `ray.get` raises for a task that raised `cause`: Ray wraps it, coloured title and all."""
    wrapped = exceptions.RayTaskError("trt-tui-build-2", "Traceback (most recent call last): …", cause,
                                      proctitle="\x1b[36mray::trt-tui-build-2()\x1b[39m", pid=21260,
                                      ip="127.0.0.1")
    return wrapped.as_instanceof_cause()


def test_a_task_whose_relay_died_says_so_not_rays_wrapper() -> None:
    reason = _ray_reason(raised_in_task(exceptions.ActorDiedError()))
    assert reason == "the relay it reports its events to died (ActorDiedError)"


def test_an_unknown_cause_is_named_with_its_first_sentence_and_no_colours() -> None:
    reason = _ray_reason(raised_in_task(ValueError("\x1b[31mbad shape\x1b[0m. More advice follows.")))
    assert reason == "ValueError: bad shape"


def test_ray_own_losses_keep_their_words() -> None:
    assert _ray_reason(exceptions.NodeDiedError("node 1")) == "its node died (NodeDiedError)"
    assert _ray_reason(None) == "no result"

"""One way for a test to wait for a state: poll a condition until it holds, or fail saying what was
awaited, for how long, and what was seen last.

    state = wait_until(lambda: api.get("/state"), what="the first state", timeout=30)
    wait_until(lambda: proc.poll() is not None, what="the worker to exit", timeout=10)
    wait_until(ping, what="Redis to answer", timeout=5, retry_on=(redis.ConnectionError,))
    state = wait_until(read_state, until=lambda s: s["phase"] == "Healthy", what="a healthy phase")

The condition's first truthy return value is returned. Exceptions are not swallowed: an exception
of a type listed in ``retry_on`` (a server still starting, a process restarting) is remembered and
the poll goes on; on timeout the failure names the last one and chains it (``raise ... from``).
Any other exception propagates at once, with its own traceback.

The only sleep is the poll interval between two looks at the condition; it never stands in for
the state itself.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any


class WaitTimeout(AssertionError):
    """The condition did not hold in time. ``last`` is the last value seen, ``error`` the last
    retried exception (None if the last look returned a value)."""

    def __init__(self, message: str, last: Any = None, error: BaseException | None = None) -> None:
        super().__init__(message)
        self.last = last
        self.error = error


def _message(what: str, timeout: float, last: Any, error: BaseException | None, limit: int) -> str:
    seen = f"last exception: {error!r}" if error is not None else f"last value: {last!r}"
    if len(seen) > limit:
        seen = seen[:limit] + "..."
    return f"timed out after {timeout:g}s waiting for {what} ({seen})"


def wait_until[T](
    condition: Callable[[], T],
    *,
    what: str,
    timeout: float = 30.0,
    interval: float = 0.05,
    retry_on: tuple[type[BaseException], ...] = (),
    limit: int = 2000,
    until: Callable[[Any], bool] | None = None,
) -> T:
    """Call ``condition`` every ``interval`` s until it returns something truthy (or, with
    ``until``, something ``until`` accepts: the failure then shows the last value read); return it.

    ``what`` completes "waiting for ..." in the failure message. ``retry_on`` lists the exception
    types that mean "not yet" (anything else propagates). ``limit`` caps the length of the last
    value shown in the failure.
    """
    deadline = time.monotonic() + timeout
    last: Any = None
    error: BaseException | None = None
    while True:
        try:
            last, error = condition(), None
        except retry_on as exc:
            last, error = None, exc
        if error is None and (until(last) if until else last):
            return last
        if time.monotonic() >= deadline:
            raise WaitTimeout(_message(what, timeout, last, error, limit), last, error) from error
        time.sleep(interval)  # poll interval, not a stand-in for the state


async def async_wait_until[T](
    condition: Callable[[], Awaitable[T] | T],
    *,
    what: str,
    timeout: float = 30.0,
    interval: float = 0.05,
    retry_on: tuple[type[BaseException], ...] = (),
    limit: int = 2000,
    until: Callable[[Any], bool] | None = None,
) -> T:
    """``wait_until`` for coroutines: ``condition`` may be a plain or an async callable."""
    deadline = time.monotonic() + timeout
    last: Any = None
    error: BaseException | None = None
    while True:
        try:
            got = condition()
            if asyncio.iscoroutine(got) or isinstance(got, asyncio.Future):
                got = await got
            last, error = got, None
        except retry_on as exc:
            last, error = None, exc
        if error is None and (until(last) if until else last):
            return last
        if time.monotonic() >= deadline:
            raise WaitTimeout(_message(what, timeout, last, error, limit), last, error) from error
        await asyncio.sleep(interval)  # poll interval, not a stand-in for the state


def wait_for_runall(proc, url: str, log, timeout: float = 120.0) -> None:
    """Wait until ``manage.py runall`` (``proc``, writing ``log``) serves its sign-in page at
    ``url``. A refused connection means "still starting"; an exited process fails at once. Both
    failures carry the end of the log."""
    import urllib.request

    def answering() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"runall exited ({proc.returncode}):\n{log.read_text()[-4000:]}")
        with urllib.request.urlopen(url + "/accounts/login/", timeout=2) as resp:
            return resp.status == 200

    try:
        wait_until(answering, what=f"runall to answer at {url}", timeout=timeout, interval=0.5, retry_on=(OSError,))
    except WaitTimeout as exc:
        raise AssertionError(f"{exc}\n{log.read_text()[-4000:]}") from exc

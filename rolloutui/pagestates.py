"""The states detail pages were just rendered with, so that a page's websocket starts from it.

The detail page carries its first state in its HTML (``pages.modelserving_detail``), and its
websocket then sends the page the state again as its first message: at 1,000 groups a second read
of the state (~25-50 ms of the web process's CPU), its 1.2 MB of JSON encoded, sent and parsed by
the browser, and a second full render of a state equal to the first but for a few hundred
milliseconds. The page's ``GET`` remembers its state here under a token written into the page
(``boot.pageState``); the socket names it (``?page=<token>``) and, when this process rendered that
page less than ``MAX_AGE_SECONDS`` ago, its hub starts from that state: the first message is then
the delta from it to the newest state the hub has, empty when there is none newer
(``consumers.ModelServingConsumer``).

How stale may that be? At most ``MAX_AGE_SECONDS`` older than a read at the socket's connect would
have been, and no older than what the page already shows; the hub is subscribed to the
ModelServing's publishes before it adopts the state, so every pass after that reaches the page as
before. Another process (several web processes behind a balancer), an older page or an unknown
token: the socket sends the whole state, as it always did.

A token is used once and names one ModelServing's state, which every user who may view the
ModelServing is sent alike (the socket checks that permission before it looks the token up):
guessing one gains nothing a viewer could not read. The value belongs to the web process (its app
config holds it, ``of_this_process``); a test makes its own.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

# How long a page's state waits for its socket. The socket opens one frame after the page's first
# render: ~0.1-0.5 s after the GET's read on a quiet host, 1-3 s at load 10 (bench fanout).
MAX_AGE_SECONDS = 3.0
# States kept at most (a 1,000-group state is ~10 MB of Python objects; each leaves after its
# socket takes it or MAX_AGE_SECONDS): 4 page loads within 3 s on one web process.
LIMIT = 4


class PageStates:
    """Page states by (namespace, name, token), the oldest dropped past ``limit`` or ``max_age``."""

    def __init__(
        self, *, max_age: float = MAX_AGE_SECONDS, limit: int = LIMIT, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.max_age, self.limit, self.clock = max_age, limit, clock
        self._lock = threading.Lock()  # the page's view thread remembers, the socket's event loop takes
        self._states: OrderedDict[tuple[str, str, str], tuple[float, dict[str, Any]]] = OrderedDict()

    def remember(self, namespace: str, name: str, state: dict[str, Any]) -> str:
        """Keep ``state`` (not copied: a view is never changed after it is built) and return the
        token the page hands its socket."""
        token = secrets.token_urlsafe(12)
        now = self.clock()
        with self._lock:
            self._drop_expired(now)
            self._states[(namespace, name, token)] = (now, state)
            while len(self._states) > self.limit:
                self._states.popitem(last=False)
        return token

    def take(self, namespace: str, name: str, token: str | None) -> dict[str, Any] | None:
        """The state a page of ``namespace/name`` was rendered with under ``token``, if this process
        remembered it less than ``max_age`` ago; forgotten once taken."""
        if not token:
            return None
        with self._lock:
            self._drop_expired(self.clock())
            kept = self._states.pop((namespace, name, token), None)
        return None if kept is None else kept[1]

    def _drop_expired(self, now: float) -> None:
        while self._states:
            remembered, _ = next(iter(self._states.values()))
            if now - remembered < self.max_age:
                return
            self._states.popitem(last=False)


def of_this_process() -> PageStates:
    """The web process's page states (held by the app's config, made on first use)."""
    from django.apps import apps

    config = apps.get_app_config("rolloutui")
    states = config.__dict__.get("page_states")
    if states is None:
        # setdefault: of two threads making it at once, both get the one that was stored first.
        states = config.__dict__.setdefault("page_states", PageStates())
    return states

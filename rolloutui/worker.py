"""The Celery worker's consumer (settings.CELERY_WORKER_CONSUMER): Celery's, made to survive a broker
restart.

Why. With Celery 5.7.0 and kombu 5.7.0 (the newest on PyPI when written) a worker whose Redis
restarts exits with "Unrecoverable error: AttributeError('NoneType' object has no attribute
'hostname')" whenever, at the moment the connection drops, it (a) holds an unacknowledged message
and (b) has a BRPOP outstanding. That is this product's normal state: reconciles are requeued with a
countdown, so a worker nearly always holds one (found by tests/live/test_soak.py; the regression
test is tests/live/test_live_broker_restart.py). The sequence in
``celery.worker.consumer.Consumer.on_connection_error_after_connected``:

1. ``connection.collect()`` closes the default channel. kombu's Redis ``Channel.close()`` first
   reads the pending BRPOP reply (``_brpop_read``), which raises ConnectionError (the server is
   gone) and clears ``_in_poll``; ``maybe_close_channel`` ignores the error, so the channel stays
   open (``closed`` is still False). Then ``collect()`` detaches the transport
   (``transport.client = None``).
2. ``connection.close()`` closes the default channel again. Now no BRPOP is pending, so the close
   goes on to requeue the unacknowledged messages (``restore_unacked``), which builds a new
   connection pool from ``transport.client``: None, hence AttributeError, which neither
   ``maybe_close_channel`` nor ``ignore_errors`` catch (they ignore connection errors only). It
   reaches the worker's blueprint as an unrecoverable error and the process exits.

No setting avoids it (broker_connection_retry only governs what happens after this cleanup; the
transport options do not touch ``Channel.close``), and no newer release was available to pin.

Fix. Before Celery's cleanup runs, close the default channel while its transport is still attached,
retrying once: the first attempt consumes the dead BRPOP (ConnectionError), the second finishes the
close (requeueing what it held if Redis is already back; if not, the ConnectionError is ignored as
Celery ignores it, and the messages come back through Redis' own restore of unacknowledged messages
after ``visibility_timeout``, or are gone with a Redis that lost its data, which the periodic resync
repairs). Celery's own ``collect()`` and ``close()`` then find the channel closed and do nothing that
needs the detached transport. Everything else in Celery's handler runs unchanged.
"""

from __future__ import annotations

import logging

from celery.worker.consumer import Consumer as CeleryConsumer
from kombu.common import ignore_errors

log = logging.getLogger(__name__)

# Attempts to close the default channel: one to consume the outstanding BRPOP, one to close.
_CLOSE_ATTEMPTS = 2


def close_default_channel(connection) -> bool:
    """Close ``connection``'s default channel while its transport is attached; True when it ended
    closed (or there was none). Connection errors are ignored, as Celery's own cleanup ignores them."""
    # kombu.Connection has no public accessor that does not open a channel when none exists
    # (``default_channel`` connects), so read the attribute the public property fills.
    channel = getattr(connection, "_default_channel", None)
    if channel is None:
        return True
    for _ in range(_CLOSE_ATTEMPTS):
        if getattr(channel, "closed", True):
            break
        # Redis' socket timeout bounds the read of a dead peer; a connection or channel error is
        # the expected outcome with the broker down and is not worth more than a debug line.
        ignore_errors(connection, channel.close)
    closed = bool(getattr(channel, "closed", True))
    if not closed:
        log.warning("broker connection lost: the default channel did not close; Celery's cleanup follows")
    return closed


class Consumer(CeleryConsumer):
    def on_connection_error_after_connected(self, exc):
        if self.connection is not None:
            close_default_channel(self.connection)
        super().on_connection_error_after_connected(exc)

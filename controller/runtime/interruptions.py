"""Requests interrupted when a pod stopped serving, reported by the simulated cluster
(``DatabaseCluster(on_interrupted=report)``) and announced with the ``requests_interrupted`` signal.

The dashboard's side (``rolloutui``) listens: requests cut off at a drain timeout become an audit
record of the rollout (action ``drain_timeout``), which the Drain panel and the audit show. The
controller never imports the dashboard; a signal is how it tells it.
"""

from __future__ import annotations

import django.dispatch

# Sent with namespace, name (the ModelServing), pod, count, reason ("drain timeout", "deleted",
# "killed", "container restart", "node failed").
requests_interrupted = django.dispatch.Signal()

DRAIN_TIMEOUT = "drain timeout"


def report(namespace: str, name: str, pod: str, count: int, reason: str) -> None:
    requests_interrupted.send(sender=report, namespace=namespace, name=name, pod=pod, count=count, reason=reason)

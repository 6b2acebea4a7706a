"""``python -m controller.k8s watch``: the cluster's one watch process (leader-elected).

It needs no Django: events become Celery messages sent by task name to the broker, and the
Celery workers (which do load Django) run the reconcile passes.

Environment:
  KUBECONFIG                 kubeconfig path (else in-cluster service account, else ~/.kube/config)
  CELERY_BROKER_URL          broker URL (else REDIS_URL with database 0, as the web and worker use)
  ROLLOUTUI_RECONCILE_TASK   task name (default controller.tasks.reconcile), called with (namespace, name)
  ROLLOUTUI_RECONCILE_QUEUE  queue (default reconcile)
  POD_NAMESPACE              namespace of the Lease (default rolloutui)
  ROLLOUTUI_WATCH_NAMESPACE  watch only this namespace (default: all namespaces)
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from urllib.parse import urlsplit, urlunsplit


def _broker_url() -> str:
    if os.environ.get("CELERY_BROKER_URL"):
        return os.environ["CELERY_BROKER_URL"]
    redis_url = os.environ.get("REDIS_URL")
    if not redis_url:
        sys.exit("set CELERY_BROKER_URL or REDIS_URL: the watch sends reconcile tasks to the Celery broker")
    parts = urlsplit(redis_url)
    return urlunsplit((parts.scheme, parts.netloc, "/0", parts.query, parts.fragment))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m controller.k8s", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["watch"])
    parser.add_argument("--lease-namespace", default=os.environ.get("POD_NAMESPACE", "rolloutui"))
    parser.add_argument("--lease-name", default="rolloutui-controller")
    parser.add_argument("--namespace", default=os.environ.get("ROLLOUTUI_WATCH_NAMESPACE") or None)
    parser.add_argument("--task", default=os.environ.get("ROLLOUTUI_RECONCILE_TASK", "controller.tasks.reconcile"))
    parser.add_argument("--queue", default=os.environ.get("ROLLOUTUI_RECONCILE_QUEUE", "reconcile"))
    parser.add_argument("--resync-period", type=float, default=300.0)
    args = parser.parse_args(argv)
    logging.basicConfig(level=os.environ.get("ROLLOUTUI_LOG_LEVEL", "INFO").upper(),
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")

    from celery import Celery

    from controller.k8s.client import build_api_client
    from controller.k8s.runner import run_controller

    celery_app = Celery("rolloutui-watch", broker=_broker_url())

    def enqueue(namespace: str, name: str) -> None:
        celery_app.send_task(args.task, args=(namespace, name), queue=args.queue)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    run_controller(
        build_api_client(), enqueue, lease_namespace=args.lease_namespace, lease_name=args.lease_name,
        namespace=args.namespace, resync_period=args.resync_period, stop=stop,
    )


if __name__ == "__main__":
    main()

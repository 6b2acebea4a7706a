"""``python -m controller.k8s watch``: the cluster's one watch process (leader-elected).

It campaigns for the Lease ``<POD_NAMESPACE>/rolloutui-controller`` and, while leading, watches
ModelServings and their pods and enqueues a reconcile for every change through
``controller.runtime.enqueue.send``, the same deduplicated path the dashboard uses (one message per
ModelServing waiting in the broker, however many pod events arrive), plus a full resync every
``--resync-period`` seconds. The Celery workers run the passes.

Configuration comes from the Django settings (``DJANGO_SETTINGS_MODULE``, default
``rolloutui.settings``): ``REDIS_URL`` for the broker and the queued flags, ``KUBECONFIG`` or the
in-cluster service account for the API server. The Celery app is configured here the same way as
the project's (``CELERY_*`` settings) without importing the dashboard package.

Environment: POD_NAMESPACE (the Lease's namespace, default rolloutui), ROLLOUTUI_WATCH_NAMESPACE
(watch one namespace; default all), ROLLOUTUI_WATCH_HEARTBEAT_FILE (the default of --heartbeat-file).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import threading
from collections.abc import Callable


def django_enqueue() -> Callable[[str, str], None]:
    """Set up Django and a Celery app from its settings; return ``controller.runtime.enqueue.send``."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rolloutui.settings")
    import django

    django.setup()
    from celery import Celery

    app = Celery("rolloutui")
    app.config_from_object("django.conf:settings", namespace="CELERY")
    app.set_default()  # the controller's shared tasks bind to it

    from controller.runtime.enqueue import send

    return send


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m controller.k8s", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("command", choices=["watch"])
    parser.add_argument("--lease-namespace", default=os.environ.get("POD_NAMESPACE", "rolloutui"))
    parser.add_argument("--lease-name", default="rolloutui-controller")
    parser.add_argument("--namespace", default=os.environ.get("ROLLOUTUI_WATCH_NAMESPACE") or None)
    parser.add_argument("--resync-period", type=float, default=300.0)
    parser.add_argument(
        "--heartbeat-file",
        default=os.environ.get("ROLLOUTUI_WATCH_HEARTBEAT_FILE") or None,
        help="touch this file every 10 s while healthy (for a liveness probe: python -m controller.k8s.liveness)",
    )
    args = parser.parse_args(argv)

    enqueue = django_enqueue()  # also configures logging from the settings
    logging.getLogger(__name__).info(
        "watching %s; lease %s/%s", args.namespace or "all namespaces", args.lease_namespace, args.lease_name
    )

    from controller.k8s.client import build_api_client
    from controller.k8s.liveness import Heartbeat
    from controller.k8s.runner import run_controller

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    run_controller(
        build_api_client(),
        enqueue,
        lease_namespace=args.lease_namespace,
        lease_name=args.lease_name,
        namespace=args.namespace,
        resync_period=args.resync_period,
        stop=stop,
        heartbeat=Heartbeat(args.heartbeat_file) if args.heartbeat_file else None,
    )


if __name__ == "__main__":
    main()

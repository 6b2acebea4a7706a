"""Post-reconcile hooks: functions the live app wants called after every reconcile pass.

``settings.ROLLOUTUI_POST_RECONCILE_HOOKS`` lists dotted import paths; each is imported by name on
first use and called as ``hook(namespace, name, view)`` after a pass that found the ModelServing,
with the pass's state view (``controller.core.view.build_view``: the same payload the websocket
gets). The runtime imports no dashboard code: the dashboard (``rolloutui.services.releases.status``)
registers itself through the setting.

A hook must be idempotent and quick: it is called after every pass (a missed call is made good by
the next pass, at the latest the 30 s resync), and an exception in it is logged and never fails
the pass or the other hooks.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string

log = logging.getLogger(__name__)

Hook = Callable[[str, str, Mapping[str, Any]], None]
_loaded: dict[tuple[str, ...], list[Hook]] = {}


def post_reconcile_hooks() -> list[Hook]:
    paths = tuple(getattr(settings, "ROLLOUTUI_POST_RECONCILE_HOOKS", ()) or ())
    if paths not in _loaded:
        _loaded[paths] = [import_string(path) for path in paths]
    return _loaded[paths]


def run_post_reconcile(namespace: str, name: str, view: Mapping[str, Any]) -> None:
    try:
        hooks = post_reconcile_hooks()
    except ImportError:
        log.exception("a post-reconcile hook in ROLLOUTUI_POST_RECONCILE_HOOKS cannot be imported")
        return
    for hook in hooks:
        try:
            hook(namespace, name, view)
        except Exception:
            log.exception(
                "post-reconcile hook %s failed for %s/%s", getattr(hook, "__qualname__", hook), namespace, name
            )


def run_resync_hooks() -> None:
    """``settings.ROLLOUTUI_RESYNC_HOOKS``: dotted paths called with no argument at every resync
    (30 s), for what no reconcile pass covers (the releases of InferenceServices, which KServe
    reconciles). Same rules as the post-reconcile hooks: quick, idempotent, failures logged."""
    paths = tuple(getattr(settings, "ROLLOUTUI_RESYNC_HOOKS", ()) or ())
    for path in paths:
        try:
            import_string(path)()
        except Exception:
            log.exception("resync hook %s failed", path)

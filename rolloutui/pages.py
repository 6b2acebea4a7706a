"""Dashboard pages: server-rendered shells that the JavaScript in static/js/ brings to life.

Both views only read through the services; every control on the pages posts to the REST API
(session auth + CSRF), so the page, the API and the CLI run the same service functions.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required, permission_required
from django.http import Http404
from django.shortcuts import render

from controller.core.phases import PENDING, PHASES
from controller.core.ports import NotFound

VIEW = "rolloutui.view_modelserving"
OPERATE = "rolloutui.operate_modelserving"


def _services():
    import rolloutui.services as services
    import rolloutui.services.cluster
    import rolloutui.services.state  # noqa: F401

    return services


@login_required
@permission_required(VIEW, raise_exception=True)
def modelserving_list(request):
    services = _services()
    phase = request.GET.get("phase") or ""
    search = request.GET.get("q") or ""
    namespace = request.GET.get("namespace") or ""
    rows = services.state.list_summaries(
        namespace=namespace or None, search=search or None, phase=phase if phase in PHASES else None
    )
    rows.sort(key=lambda r: (r["namespace"], r["name"]))
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["phase"]] = counts.get(r["phase"], 0) + 1
    return render(
        request,
        "modelservings/list.html",
        {
            "rows": rows,
            # The filter offers the phases a reconciled object can have; the script colours every
            # known phase (json_script "phases") and shows anything else as a plain badge.
            "phases": [p for p in PHASES if p != PENDING],
            "known_phases": list(PHASES),
            "phase": phase,
            "q": search,
            "namespace": namespace,
            "counts": counts,
            "backend": services.cluster.backend_name(),
        },
    )


@login_required
@permission_required(VIEW, raise_exception=True)
def modelserving_detail(request, namespace, name):
    services = _services()
    try:
        state = services.state.get_state(namespace, name)
    except NotFound:
        raise Http404(f"ModelServing {namespace}/{name} does not exist") from None
    can_operate = request.user.has_perm(OPERATE)
    return render(
        request,
        "modelservings/detail.html",
        {
            "ms_namespace": namespace,
            "ms_name": name,
            "state": state,
            "known_phases": list(PHASES),
            "boot": {
                "namespace": namespace,
                "name": name,
                "canOperate": can_operate,
                "backend": services.cluster.backend_name(),
                "user": request.user.get_username(),
                "api": f"/api/modelservings/{namespace}/{name}/",
                "ws": f"/ws/modelservings/{namespace}/{name}/",
            },
        },
    )

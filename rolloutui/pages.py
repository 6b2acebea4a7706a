"""Dashboard pages: server-rendered shells that the JavaScript in static/js/ brings to life.

Both views only read through the services; every control on the pages posts to the REST API
(session auth + CSRF), so the page, the API and the CLI run the same service functions. The detail
page carries the action registry's description (``services.actions.page_description``) as JSON
(``<script id="rollout-actions">``), from which its buttons and dialogs are built.
"""

from __future__ import annotations

import html
from collections import Counter
from urllib.parse import quote

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import render
from django.urls import reverse
from django.utils.safestring import mark_safe

from controller.core.phases import PENDING, PHASES
from controller.core.ports import NotFound
from rolloutui import pagestates
from rolloutui.services import (
    access,
    actions,
    capacity,
    cluster,
    manifests,
    notifications,
    state,
)
from rolloutui.services.kserve import controls as kserve_controls
from rolloutui.services.kserve import state as kserve_state
from rolloutui.services.probe_advice import advice_of as probe_advice_of
from rolloutui.services.releases import records as release_records

VIEW = "rolloutui.view_modelserving"
OPERATE = "rolloutui.operate_modelserving"


def _viewer_somewhere(view):
    """The page needs the view permission in at least one namespace (``services.access``): 403 otherwise."""

    def checked(request, *args, **kwargs):
        if not access.anywhere(request.user, VIEW):
            raise PermissionDenied(f"{request.user.get_username()} may not view workloads")
        return view(request, *args, **kwargs)

    return checked


def _pct(part, whole) -> int:
    """A bar's width in percent, as ``pct`` in static/js/list.js computes it (Math.round rounds
    halves up: 1 of 8 is 12.5 -> 13)."""
    if not whole or whole <= 0:
        return 0
    return min(100, int(100 * (part or 0) / whole + 0.5))


def escape(value) -> str:
    """``django.utils.html.escape`` (the same five characters) without its lazy-string wrapper,
    which cost more than the escaping itself over the list's values. Integers need none."""
    if type(value) is int:
        return str(value)
    return html.escape(str(value), quote=True)


def _list_rows_html(rows: list[dict]) -> str:
    """The list's rows (the structure ``createRow`` in static/js/list.js builds): a row of six
    cells per workload, in the list's grid (``.ms-row`` in static/css/dashboard.css).

    Rendered in Python, not with a ``{% for %}`` over the rows: at 1,000 rows the template engine
    spent over a second resolving and localising 15,000 variables (``python -m bench list``); this
    takes a few tens of milliseconds. Every value is escaped. A row's ``aria-rowindex`` counts the
    header row as 1, so the first workload is row 2 of the table's ``aria-rowcount``."""
    # One reverse() per kind; a path segment is quoted like the script's encodeURIComponent.
    ms_href = reverse("modelserving-detail", args=("NS_", "NAME_"))
    isvc_href = reverse("inferenceservice-detail", args=("NS_", "NAME_"))
    out = []
    for index, r in enumerate(rows, start=2):
        ns, name = str(r.get("namespace") or ""), str(r.get("name") or "")
        e_ns, e_name = escape(ns), escape(name)
        isvc = r.get("kind") == kserve_state.KIND_INFERENCESERVICE
        href = (isvc_href if isvc else ms_href).replace("NS_", quote(ns, safe=""), 1)
        href = href.replace("NAME_", quote(name, safe=""), 1)
        phase = str(r.get("phase") or "")
        e_phase = escape(phase)
        phase_class = f"phase phase-{e_phase.lower()}" if phase in PHASES else "phase"
        updated, ready, desired = r.get("updated"), r.get("ready"), r.get("desired")
        counts = f"{escape(updated)} / {escape(ready)} / {escape(desired)}"
        if isvc:
            revision = escape(r.get("canary") or "—")
            strategy = escape(r.get("deploymentMode") or "")
        else:
            current, update = r.get("currentRevision"), r.get("updateRevision")
            revision = escape(current or "—")
            if update and update != current:
                revision += f' <span class="arrow">→</span> <b>{escape(update)}</b>'
            strategy = escape(r.get("strategyType") or "")
        kind = "InferenceService" if isvc else "ModelServing"
        key_suffix = "#InferenceService" if isvc else ""
        out.append(
            f'<div class="ms-row" role="row" aria-rowindex="{index}" data-key="{e_ns}/{e_name}{key_suffix}" '
            f'data-kind="{kind}" data-phase="{e_phase}"><div class="ms-cell" role="cell"><a class="ms-link" '
            f'href="{escape(href)}"><span class="muted">{e_ns}/</span>{e_name}</a></div>'
            f'<div class="ms-cell" role="cell"><span class="{"kind-badge kind-isvc" if isvc else "kind-badge"}">'
            f'{kind}</span></div><div class="ms-cell" role="cell"><span class="{phase_class}">{e_phase}</span></div>'
            f'<div class="ms-cell" role="cell"><div class="bars" title="updated {escape(updated)}, '
            f'ready {escape(ready)}, desired {escape(desired)}"><div class="bar"><i class="bar-upd" '
            f'style="width:{_pct(updated, desired)}%"></i></div><div class="bar"><i class="bar-ready" '
            f'style="width:{_pct(ready, desired)}%"></i></div></div><span class="bars-text num">{counts}</span></div>'
            f'<div class="ms-cell mono" role="cell">{revision}</div><div class="ms-cell muted" role="cell">{strategy}'
            f"</div></div>\n"
        )
    return mark_safe("".join(out))


# The rows the server renders as HTML: the list's first screenful and more (a 1,000 px window
# shows ~30 rows of 34 px, and the script keeps 20 more on each side), and what a browser without
# JavaScript shows. The script draws only the rows in and near the viewport from the data in the
# page (``workload-rows``): 10,000 rows of HTML were 8.2 MB, whose parsing and layout kept the
# list from being live for over a second (``python -m bench list --count 10000``).
FIRST_ROWS = 100
# The fields of a row the list shows or filters by (``SHOWN`` in static/js/lib/workload-rows.js):
# the page's data is each row's values in this order, not the API's objects (10,000 rows: 0.9 MB
# instead of 2.8 MB, and JSON.parse 3-4x faster in the browser).
LIST_FIELDS = (
    *("namespace", "name", "kind", "phase", "updated", "ready", "desired"),
    *("currentRevision", "updateRevision", "strategyType", "canary", "deploymentMode"),
)


def _list_filters(request) -> dict[str, str]:
    """The list's filters from the query string, trimmed and lower-cased as static/js/list.js
    reads them from the form; a phase or kind the list does not know filters nothing."""
    phase = request.GET.get("phase") or ""
    kind = request.GET.get("kind") or ""
    return {
        "q": (request.GET.get("q") or "").strip().lower(),
        "namespace": (request.GET.get("namespace") or "").strip(),
        "phase": phase if phase in PHASES else "",
        "kind": kind if kind in kserve_state.KINDS else "",
    }


def _in_scope(row: dict, f: dict[str, str]) -> bool:
    """The row passes the namespace, name and kind filters (``applyFilters`` in list.js): the
    phase counts are counted over these rows, and the phase filter narrows them further."""
    return (
        (not f["namespace"] or row["namespace"] == f["namespace"])
        and (not f["q"] or f["q"] in f"{row['namespace']}/{row['name']}".lower())
        and (not f["kind"] or row["kind"] == f["kind"])
    )


@login_required
@_viewer_somewhere
def modelserving_list(request):
    f = _list_filters(request)
    # Both kinds, with a kind column (InferenceServices on clusters whose adapter reads them). Every
    # row the user may view goes into the page as data, whatever the filters: the script filters
    # as one types, and a filter cleared shows the rows it hid without a request.
    rows = kserve_state.list_workloads(within=access.namespaces(request.user, VIEW, state.modelserving_namespaces))
    in_scope = [r for r in rows if _in_scope(r, f)]
    shown = [r for r in in_scope if not f["phase"] or r["phase"] == f["phase"]]
    return render(
        request,
        "modelservings/list.html",
        {
            "page_data": {"fields": LIST_FIELDS, "rows": [[r.get(f) for f in LIST_FIELDS] for r in rows]},
            "shown": len(shown),
            "rows_html": _list_rows_html(shown[:FIRST_ROWS]),
            "more_rows": max(0, len(shown) - FIRST_ROWS),
            # The filter offers the phases a reconciled object can have; the script colours every
            # known phase (json_script "phases") and shows anything else as a plain badge.
            "phases": [p for p in PHASES if p != PENDING],
            "known_phases": list(PHASES),
            "phase": f["phase"],
            "kind": f["kind"],
            "kinds": list(kserve_state.KINDS),
            "q": request.GET.get("q") or "",
            "namespace": f["namespace"],
            "counts": dict(Counter(r["phase"] for r in in_scope)),
            "backend": cluster.backend_name(),
            # The Notifications page needs operate somewhere: a viewer is not offered a link to a 403.
            "may_see_notifications": access.anywhere(request.user, OPERATE),
        },
    )


@login_required
@_viewer_somewhere
def modelserving_detail(request, namespace, name):
    if not access.allowed(request.user, VIEW, namespace):
        raise Http404(f"ModelServing {namespace}/{name} does not exist")
    try:
        # One read for the state and the probe advice (the advice measures load times on the
        # same pods: listing and timing 2,000 pods again cost more CPU than the state itself).
        read = state.read_state(namespace, name)
    except NotFound:
        raise Http404(f"ModelServing {namespace}/{name} does not exist") from None
    current = read.view
    api = reverse("api-modelserving", kwargs={"namespace": namespace, "name": name})
    return render(
        request,
        "modelservings/detail.html",
        {
            "ms_namespace": namespace,
            "ms_name": name,
            "state": current,
            "known_phases": list(PHASES),
            "boot": {
                "namespace": namespace,
                "name": name,
                "canOperate": access.allowed(request.user, OPERATE, namespace),
                "backend": cluster.backend_name(),
                "user": request.user.get_username(),
                "api": api,
                "ws": f"/ws/modelservings/{namespace}/{name}/",
                # The socket starts from this page's state instead of sending it again (pagestates).
                "pageState": pagestates.of_this_process().remember(namespace, name, current),
                "releasesApi": reverse("api-modelserving-releases", kwargs={"namespace": namespace, "name": name}),
                "releasesPage": reverse("releases"),
                "clusterSettings": cluster.cluster_settings(),
                # The cluster's time and speed: the canary countdown counts on the cluster's clock.
                "clock": capacity.clock(),
            },
            "actions": actions.page_description(request.user, api_base=api, namespace=namespace),
            # The release this ModelServing runs, its environment, and "r31 · v12" per controller
            # revision hash (static/js/detail/panels/release.js re-reads it from the API).
            "releases": release_records.releases_of_modelserving(namespace, name),
            # Shown in the serving gates panel: probes that cannot cover the model load.
            "probe_advice": probe_advice_of(namespace, name, read=read),
        },
    )


STARTER = """apiVersion: workload.serving.volcano.sh/v1alpha1
kind: ModelServing
metadata:
  name: my-model
  namespace: default
spec:
  replicas: 2
  template:
    roles:
      - name: decode
        replicas: 1
        entryTemplate:
          spec:
            containers:
              - name: engine
                image: vllm/vllm-openai:v0.9.1
"""


@login_required
@_viewer_somewhere
def manifest_editor(request, namespace=None, name=None):
    """The YAML editor: a new manifest (``/manifests/apply/``) or the stored one of a ModelServing
    (``.../edit/``, with its resourceVersion so a concurrent change is refused). It validates as
    the operator types (``POST /api/manifests/validate``), marks each error at its line and field,
    and applies through the registry's ``apply`` action (``collection_description``).

    The stored text is whole only for a user who may operate in its namespace. Anyone else who may
    view it gets it read-only with secret-looking values masked (``services.masking``, as the API's
    ``manifest`` shows it), and a line saying so: masked, the text could not be applied as is."""
    read_only = False
    if namespace is not None:
        if not access.allowed(request.user, VIEW, namespace):
            raise Http404(f"ModelServing {namespace}/{name} does not exist")
        read_only = not access.allowed(request.user, OPERATE, namespace)
        try:
            text = manifests.manifest_text(namespace, name, user=request.user)
        except NotFound:
            raise Http404(f"ModelServing {namespace}/{name} does not exist") from None
    else:
        text = STARTER
    return render(
        request,
        "modelservings/editor.html",
        {
            "editing": f"{namespace}/{name}" if namespace is not None else "",
            "ms_namespace": namespace,
            "ms_name": name,
            "read_only": read_only,
            "boot": {
                "text": text,
                "readOnly": read_only,
                "editing": {"namespace": namespace, "name": name} if namespace is not None else None,
                "validate": reverse("api-manifest-validate"),
                "backend": cluster.backend_name(),
            },
            "actions": actions.collection_description(request.user),
        },
    )


@login_required
@_viewer_somewhere
def inferenceservice_detail(request, namespace, name):
    """A KServe InferenceService (issue 13): components, ReplicaSets old and new with their pods,
    the effective strategy with sources, why it waits, traffic, the controls of the registry's
    ``INFERENCESERVICE`` target, audit and history. ``static/js/kserve/main.js`` keeps it live over
    the websocket (``consumers.InferenceServiceConsumer``), reading the API while the socket is down."""
    if not access.allowed(request.user, VIEW, namespace):
        raise Http404(f"InferenceService {namespace}/{name} does not exist")
    try:
        current = kserve_controls.get_state(namespace, name, user=request.user)
    except NotFound:
        raise Http404(f"InferenceService {namespace}/{name} does not exist") from None
    api = actions.INFERENCESERVICE.url(namespace=namespace, name=name)  # /api/inferenceservices/{ns}/{name}/
    return render(
        request,
        "inferenceservices/detail.html",
        {
            "isvc_namespace": namespace,
            "isvc_name": name,
            "state": current,
            "phase": current["phase"],
            "known_phases": list(PHASES),
            "boot": {
                "namespace": namespace,
                "name": name,
                "api": api,
                "history": api + "history/",
                "ws": f"/ws/inferenceservices/{namespace}/{name}/",
                # Whether the socket is sent every change: on Kubernetes only with the
                # InferenceService cache (its watch); otherwise the page also reads the API.
                "pushed": cluster.inferenceservice_changes_pushed(),
                "audit": reverse("api-audit"),
                "canOperate": access.allowed(request.user, OPERATE, namespace),
                "backend": cluster.backend_name(),
            },
            "actions": actions.page_description(
                request.user, api_base=api, targets=(actions.INFERENCESERVICE,), namespace=namespace
            ),
        },
    )


@login_required
def notification_deliveries(request):
    """Recent notification deliveries (``services.notifications``) of the namespaces where the user
    may operate, as ``GET /api/notifications/deliveries/`` lists them; destinations by host only."""
    if not access.anywhere(request.user, OPERATE):
        raise PermissionDenied(f"{request.user.get_username()} may not operate workloads")
    within = access.namespaces(request.user, OPERATE, notifications.namespaces)
    rows = notifications.search(within=within)[:200]
    return render(request, "notifications/deliveries.html", {"rows": rows})

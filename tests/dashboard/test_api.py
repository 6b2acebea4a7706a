"""REST API: every endpoint, permissions, token auth, and clear 4xx answers to bad input."""

from __future__ import annotations

import pytest
from django.test import Client

from controller.core.ports import NoRouter

from .helpers import NAMESPACE, reconcile

pytestmark = pytest.mark.django_db


def url(ms, suffix=""):
    return f"/api/modelservings/{ms['namespace']}/{ms['name']}/{suffix}"


def post(client, path, body):
    return client.post(path, body, content_type="application/json")


# --- Authentication and permissions -----------------------------------------------------------
def test_anonymous_gets_401_with_token_challenge(ms):
    client = Client()
    for path in ("/api/modelservings/", url(ms), url(ms, "revisions/"), "/api/audit/"):
        resp = client.get(path)
        assert resp.status_code == 401, path
        assert resp.headers["WWW-Authenticate"] == "Token"
    assert post(client, url(ms, "pause"), {"reason": "x"}).status_code == 401


def test_user_without_view_permission_gets_403(ms, django_user_model):
    nobody = django_user_model.objects.create_user("nobody", password="x-very-long-pw")
    client = Client()
    client.force_login(nobody)
    assert client.get("/api/modelservings/").status_code == 403
    assert client.get(url(ms)).status_code == 403


@pytest.mark.parametrize(
    "suffix,body",
    [
        ("pause", {"reason": "r"}),
        ("resume", {"reason": "r"}),
        ("promote", {"reason": "r", "full": True}),
        ("rollback", {"reason": "r", "toRevision": 1}),
        ("set-image", {"reason": "r", "role": "decode", "image": "engine:v9"}),
    ],
)
def test_viewer_gets_403_on_every_control(viewer_client, ms, suffix, body):
    resp = post(viewer_client, url(ms, suffix), body)
    assert resp.status_code == 403
    assert "operate" in resp.json()["detail"]


def test_viewer_can_read(viewer_client, ms):
    assert viewer_client.get(url(ms)).status_code == 200
    assert viewer_client.get("/api/modelservings/").status_code == 200


def test_token_auth(viewer, password):
    client = Client()
    resp = client.post(
        "/api/auth/token/", {"username": "viewer", "password": password}, content_type="application/json"
    )
    assert resp.status_code == 200
    token = resp.json()["token"]
    resp = Client().get("/api/modelservings/", HTTP_AUTHORIZATION=f"Token {token}")
    assert resp.status_code == 200
    # A wrong password is refused without a token.
    bad = client.post("/api/auth/token/", {"username": "viewer", "password": "wrong"}, content_type="application/json")
    assert bad.status_code == 400 and "token" not in bad.json()
    assert Client().get("/api/modelservings/", HTTP_AUTHORIZATION="Token nonsense").status_code == 401


def test_token_user_posts_without_csrf(operator, password, ms):
    # Scripts authenticate with a token and need no CSRF token; session users do need one.
    token = Client().post("/api/auth/token/", {"username": "operator", "password": password}).json()["token"]
    resp = Client(enforce_csrf_checks=True).post(
        url(ms, "pause"), {"reason": "script"}, content_type="application/json", HTTP_AUTHORIZATION=f"Token {token}"
    )
    assert resp.status_code == 200, resp.content


def test_session_post_requires_csrf(operator, ms):
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)
    resp = post(client, url(ms, "pause"), {"reason": "no csrf"})
    assert resp.status_code == 403
    assert "CSRF" in resp.json()["detail"]


# --- Reading ------------------------------------------------------------------------------------
def test_list_and_filters(operator_client, ms):
    rows = operator_client.get("/api/modelservings/").json()
    row = next(r for r in rows if r["name"] == ms["name"])
    for key in ("namespace", "phase", "ready", "updated", "desired", "currentRevision", "updateRevision", "paused"):
        assert key in row
    found = operator_client.get("/api/modelservings/", {"search": ms["name"]}).json()
    assert [r["name"] for r in found] == [ms["name"]]
    assert operator_client.get("/api/modelservings/", {"namespace": "no-such-namespace"}).json() == []
    phase = row["phase"]
    assert ms["name"] in [r["name"] for r in operator_client.get("/api/modelservings/", {"phase": phase}).json()]
    bad = operator_client.get("/api/modelservings/", {"phase": "Sleeping"})
    assert bad.status_code == 400 and "phase" in bad.json()


def test_detail_is_the_service_state(operator_client, ms):
    from rolloutui.services import state

    body = operator_client.get(url(ms)).json()
    expected = state.get_state(ms["namespace"], ms["name"])
    # The same keys as the websocket payload; "time" and live counters may move between reads.
    assert set(body) == set(expected)
    assert body["name"] == ms["name"] and body["revisions"] == expected["revisions"]


def test_unknown_modelserving_is_404(operator_client):
    for path in ("/api/modelservings/default/does-not-exist/", "/api/modelservings/default/does-not-exist/revisions/"):
        resp = operator_client.get(path)
        assert resp.status_code == 404, path
    resp = post(operator_client, "/api/modelservings/default/does-not-exist/pause", {"reason": "x"})
    assert resp.status_code == 404


def test_pods_of_one_instance(operator_client, ms):
    pods = operator_client.get(url(ms, "pods/"), {"group": 0, "role": "prefill", "ordinal": 0}).json()
    assert {p["podIndex"] for p in pods} == {"0", "1"}  # entry + one worker
    pod = pods[0]
    for key in ("node", "phase", "readinessGates", "containers", "restarts", "inFlight", "revision"):
        assert key in pod
    assert pod["containers"][0]["image"] == "engine:v1"
    assert operator_client.get(url(ms, "pods/"), {"group": -1}).status_code == 400


class CountingRouter(NoRouter):
    """The router port over fixed counts, recording how it is asked (one call per pod, or one for all)."""

    def __init__(self, counts):
        self.counts, self.calls = counts, []

    def in_flight(self, namespace, pod_name):
        self.calls.append(("in_flight", pod_name))
        return self.counts.get(pod_name, 0)

    def in_flight_many(self, namespace, pod_names):
        names = list(pod_names)
        self.calls.append(("in_flight_many", len(names)))
        return {n: self.counts.get(n, 0) for n in names}


def test_the_pods_of_a_role_carry_in_flight_counts_from_one_router_call(operator_client, ms, monkeypatch):
    from rolloutui.services import state

    everything = operator_client.get(url(ms, "pods/")).json()
    decode = [p["name"] for p in everything if p["role"] == "decode"]
    assert len(everything) == 4 * (2 + 2) and len(decode) == 4 * 2  # 4 groups: prefill 1x(entry+worker), decode 2
    router = CountingRouter({decode[0]: 3})
    monkeypatch.setattr(state, "get_router", lambda: router)
    pods = operator_client.get(url(ms, "pods/"), {"role": "decode"}).json()
    assert router.calls == [("in_flight_many", len(decode))]
    assert {p["name"]: p["inFlight"] for p in pods} == {name: 3 if name == decode[0] else 0 for name in decode}
    keys = [(int(p["group"]), int(p["roleOrdinal"])) for p in pods]
    assert keys == sorted(keys)


def test_the_pods_of_an_unknown_modelserving_are_404(operator_client):
    assert operator_client.get("/api/modelservings/default/does-not-exist/pods/").status_code == 404


def test_manifest(operator_client, ms):
    body = operator_client.get(url(ms, "manifest/")).json()
    assert body["metadata"]["name"] == ms["name"] and "status" not in body


# --- Controls -------------------------------------------------------------------------------
def test_pause_and_resume_write_audit(operator_client, ms):
    resp = post(operator_client, url(ms, "pause"), {"reason": "investigating latency"})
    assert resp.status_code == 200, resp.content
    body = resp.json()
    assert body["audit"]["action"] == "pause" and body["audit"]["reason"] == "investigating latency"
    assert body["audit"]["who"] == "operator" and body["audit"]["source"] == "api"
    assert body["state"]["phase"] == "Paused" and body["state"]["spec"]["paused"] is True
    again = post(operator_client, url(ms, "pause"), {"reason": "twice"})
    assert again.status_code == 400 and "paused" in str(again.json())
    assert post(operator_client, url(ms, "resume"), {"reason": "fine again"}).status_code == 200
    audit = operator_client.get("/api/audit/", {"name": ms["name"]}).json()
    assert [a["action"] for a in audit["results"]][:2] == ["resume", "pause"]


@pytest.mark.parametrize("suffix", ["pause", "resume", "promote", "rollback", "set-image"])
@pytest.mark.parametrize("reason", [None, "", "   "])
def test_every_control_requires_a_reason(operator_client, ms, suffix, reason):
    body = (
        {"toRevision": 1}
        if suffix == "rollback"
        else {"role": "decode", "image": "x:1"}
        if suffix == "set-image"
        else {}
    )
    if reason is not None:
        body["reason"] = reason
    resp = post(operator_client, url(ms, suffix), body)
    assert resp.status_code == 400
    assert "reason" in resp.json()
    assert "reason" in resp.json()["reason"][0]


def test_promote_bad_input(operator_client, ms_partitioned):
    ms = ms_partitioned
    neg = post(operator_client, url(ms, "promote"), {"reason": "r", "partition": -1})
    assert neg.status_code == 400 and "partition" in neg.json()
    assert "negative" in neg.json()["partition"][0]
    both = post(operator_client, url(ms, "promote"), {"reason": "r", "partition": 1, "full": True})
    assert both.status_code == 400 and "partition" in both.json()
    text = post(operator_client, url(ms, "promote"), {"reason": "r", "partition": "two"})
    assert text.status_code == 400 and "partition" in text.json()
    up = post(operator_client, url(ms, "promote"), {"reason": "r", "partition": 5})
    assert up.status_code == 400 and "partition" in up.json()
    typo = post(operator_client, url(ms, "promote"), {"reason": "r", "partiton": 1})
    assert typo.status_code == 400 and "partiton" in typo.json()


def test_promote_step_and_full(operator_client, ms_partitioned):
    ms = ms_partitioned
    assert ms["state"]["spec"]["partition"] == 2
    step = post(operator_client, url(ms, "promote"), {"reason": "canary looks good"})
    assert step.status_code == 200, step.content
    assert step.json()["state"]["spec"]["partition"] == 1
    full = post(operator_client, url(ms, "promote"), {"reason": "all in", "full": True})
    assert full.status_code == 200
    assert full.json()["state"]["spec"]["partition"] == 0
    nothing = post(operator_client, url(ms, "promote"), {"reason": "again"})
    assert nothing.status_code == 400 and "partition" in str(nothing.json())


def test_set_image_rollback_revisions_and_diff(operator_client, ms):
    bad_role = post(operator_client, url(ms, "set-image"), {"reason": "r", "role": "nope", "image": "engine:v2"})
    assert bad_role.status_code == 400 and "role" in bad_role.json()
    no_image = post(operator_client, url(ms, "set-image"), {"reason": "r", "role": "decode"})
    assert no_image.status_code == 400 and "image" in no_image.json()

    resp = post(operator_client, url(ms, "set-image"), {"reason": "new engine", "role": "decode", "image": "engine:v2"})
    assert resp.status_code == 200, resp.content
    reconcile(ms["name"])
    revisions = operator_client.get(url(ms, "revisions/")).json()
    numbers = [r["number"] for r in revisions]
    assert numbers[:2] == [1, 2]
    for key in ("number", "hash", "created", "changeCause"):
        assert key in revisions[0]

    diff = operator_client.get(url(ms, "revisions/diff"), {"from": 1, "to": 2})
    assert diff.status_code == 200
    changes = diff.json()["changes"]
    assert any("image" in c["path"] and c["from"] == "engine:v1" and c["to"] == "engine:v2" for c in changes)
    assert "runtime" in diff.json()

    unknown = operator_client.get(url(ms, "revisions/diff"), {"from": 1, "to": 99})
    assert unknown.status_code == 400 and "99" in unknown.json()["to"][0]
    missing = operator_client.get(url(ms, "revisions/diff"), {"from": 1})
    assert missing.status_code == 400 and "to" in missing.json()
    word = operator_client.get(url(ms, "revisions/diff"), {"from": "one", "to": 2})
    assert word.status_code == 400 and "from" in word.json()

    unknown_rev = post(operator_client, url(ms, "rollback"), {"reason": "r", "toRevision": 42})
    assert unknown_rev.status_code == 400 and "toRevision" in unknown_rev.json()
    assert "42" in unknown_rev.json()["toRevision"][0]
    zero = post(operator_client, url(ms, "rollback"), {"reason": "r", "toRevision": 0})
    assert zero.status_code == 400 and "toRevision" in zero.json()
    missing_rev = post(operator_client, url(ms, "rollback"), {"reason": "r"})
    assert missing_rev.status_code == 400 and "toRevision" in missing_rev.json()

    back = post(operator_client, url(ms, "rollback"), {"reason": "v2 regressed p99", "toRevision": 1})
    assert back.status_code == 200, back.content
    audit = back.json()["audit"]
    assert audit["action"] == "rollback" and audit["reason"] == "v2 regressed p99"
    assert audit["fromRevision"] and audit["toRevision"]


def test_a_set_image_preview_runs_as_a_job_and_errors_name_the_field(
    operator_client, ms, celery_eager, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        resp = post(operator_client, url(ms, "preview/"), {"setImage": {"role": "decode", "image": "engine:v2"}})
    assert resp.status_code == 202, resp.content
    job = operator_client.get(resp.json()["url"]).json()
    assert job["status"] == "done", job
    assert job["result"]["desired"] == 4 and {"capacity", "durationSeconds", "blockedReasons"} <= set(job["result"])
    bad_role = post(operator_client, url(ms, "preview/"), {"setImage": {"role": "nope", "image": "engine:v2"}})
    assert bad_role.status_code == 400 and "nope" in bad_role.json()["setImage.role"][0]
    no_image = post(operator_client, url(ms, "preview/"), {"setImage": {"role": "decode"}})
    assert no_image.status_code == 400 and "image" in no_image.json()["setImage"]
    neither = post(operator_client, url(ms, "preview/"), {})
    assert neither.status_code == 400 and "exactly one" in neither.json()["patch"][0]
    invalid = post(operator_client, url(ms, "preview/"), {"patch": {"spec": {"replicas": -1}}})
    assert invalid.status_code == 400 and any(k.startswith("patch.") for k in invalid.json())


def test_fault_injection_endpoints_are_audited_and_name_bad_fields(operator_client, viewer_client, ms):
    added = post(operator_client, "/api/sim/add-node/", {"gpus": 4, "reason": "more room"})
    assert added.status_code == 200, added.content
    node = added.json()["audit"]["details"]["node"]
    assert added.json()["audit"]["action"] == "add_node"
    assert post(viewer_client, "/api/sim/add-node/", {"gpus": 4, "reason": "x"}).status_code == 403
    assert "gpus" in post(operator_client, "/api/sim/add-node/", {"gpus": 0, "reason": "x"}).json()
    failed = post(operator_client, "/api/sim/fail-node/", {"node": node, "reason": "rack down"})
    assert failed.status_code == 200 and failed.json()["audit"]["action"] == "fail_node"
    pod = operator_client.get(url(ms, "pods/")).json()[0]["name"]
    killed = post(operator_client, "/api/sim/kill-pod/", {"namespace": ms["namespace"], "pod": pod, "reason": "chaos"})
    assert killed.status_code == 200 and killed.json()["audit"]["name"] == ms["name"]
    gone = post(operator_client, "/api/sim/kill-pod/", {"namespace": ms["namespace"], "pod": "nope", "reason": "x"})
    assert gone.status_code == 400 and "pod" in gone.json()


def test_history_refuses_a_since_that_is_not_a_number_and_an_unknown_modelserving(viewer_client, ms):
    assert viewer_client.get(url(ms, "history/")).status_code == 200
    bad = viewer_client.get(url(ms, "history/"), {"since": "yesterday"})
    assert bad.status_code == 400 and "since" in bad.json()
    assert viewer_client.get("/api/modelservings/default/does-not-exist/history/").status_code == 404


# --- Audit ----------------------------------------------------------------------------------
def test_audit_filters_and_pagination(operator_client, viewer_client, ms):
    for i in range(3):
        assert post(operator_client, url(ms, "pause"), {"reason": f"p{i}"}).status_code == 200
        assert post(operator_client, url(ms, "resume"), {"reason": f"r{i}"}).status_code == 200
    page = viewer_client.get("/api/audit/", {"namespace": NAMESPACE, "name": ms["name"], "page_size": 4}).json()
    assert page["count"] == 6 and len(page["results"]) == 4 and page["next"]
    assert page["results"][0]["reason"] == "r2"  # newest first
    pauses = viewer_client.get("/api/audit/", {"name": ms["name"], "action": "pause"}).json()
    assert pauses["count"] == 3
    assert viewer_client.get("/api/audit/", {"name": ms["name"], "who": "someone-else"}).json()["count"] == 0
    for key in ("who", "when", "source", "action", "reason", "fromRevision", "toRevision", "result"):
        assert key in page["results"][0]
    found = viewer_client.get("/api/audit/", {"name": ms["name"], "q": "R2"}).json()
    assert [r["reason"] for r in found["results"]] == ["r2"]
    assert viewer_client.get("/api/audit/", {"source": "fax"}).status_code == 400


# --- Schema and docs ----------------------------------------------------------------------------
def test_openapi_schema_lists_the_endpoints(operator_client):
    resp = operator_client.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert resp.status_code == 200
    import json

    paths = json.loads(resp.content)["paths"]
    for p in ("/api/modelservings/", "/api/audit/", "/api/auth/token/"):
        assert p in paths
    assert any(p.endswith("/rollback") or p.endswith("/rollback/") or "rollback" in p for p in paths)
    assert operator_client.get("/api/docs/").status_code == 200
    # The browsable API renders for a browser.
    assert operator_client.get("/api/modelservings/", HTTP_ACCEPT="text/html").status_code == 200


# --- Pages ----------------------------------------------------------------------------------
def test_pages_require_sign_in_and_view_permission(ms, django_user_model):
    resp = Client().get("/")
    assert resp.status_code == 302 and resp["Location"].startswith("/accounts/login/")
    nobody = django_user_model.objects.create_user("nobody2", password="x-very-long-pw")
    client = Client()
    client.force_login(nobody)
    assert client.get("/").status_code == 403


def test_list_page_renders_rows(viewer_client, ms):
    resp = viewer_client.get("/")
    assert resp.status_code == 200
    assert ms["name"] in resp.content.decode()


def test_detail_page_paused_says_paused(operator_client, viewer_client, ms):
    post(operator_client, url(ms, "pause"), {"reason": "hold"})
    html = viewer_client.get(f"/modelservings/{ms['namespace']}/{ms['name']}/").content.decode()
    assert 'data-testid="phase">Paused<' in html
    assert viewer_client.get("/modelservings/default/does-not-exist/").status_code == 404

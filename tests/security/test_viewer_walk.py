"""The walk: a viewer's session, wherever it goes, never carries a secret.

One world on the embedded simulated cluster holds secrets everywhere a workload keeps them: a
ModelServing and a KServe InferenceService with secret env values (``HF_TOKEN``, ``*_PASSWORD``,
``*_KEY``), URLs with passwords and secret command-line flags; a second revision (so revisions,
diffs and history carry them on both sides); the audit record of the apply that made it (its patch
holds a secret); and a release (a model version whose ``artifactUri`` carries credentials, an
environment, a planned deployment revision). Every secret is a unique marker.

Then every page and every GET endpoint Django routes (found through the URL resolver, so a page or
endpoint added later is walked without touching this file), the websocket's first state message
and the CLI's read commands are read: as a member of ``viewers``, and as a user holding only a
namespace grant of the viewer role, no marker may appear in any answer, in any of the forms it could
be written in (as is, URL-encoded, JSON- or HTML-escaped, base64). The same walk as an operator finds
every marker somewhere (operators see what they edit), so the viewer's walk is not vacuous. And an
anonymous client is sent to sign in, or refused, everywhere that is not public by design.
"""

from __future__ import annotations

import base64
import html
import io
import json
import uuid
from dataclasses import dataclass
from unittest import mock
from urllib.parse import quote, quote_plus

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.urls.exceptions import NoReverseMatch
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.simcluster.database.store import DatabaseCluster
from controller.simcluster.database.tick import tick
from controller.simcluster.kserve import controller as kserve_controller
from rolloutui.management.commands.rollout import READ_COMMANDS
from rolloutui.models import NamespaceGrant
from tests.conftest import TEST_PASSWORD
from tests.dashboard.helpers import reconcile
from tests.dashboard.test_ws import communicator
from tests.factories import group_strategy, inferenceservice, modelserving, prefill_decode
from tests.live.helpers import config
from tests.live.test_live_kserve import STANDARD
from tests.releases.conftest import PROFILES, version_values

pytestmark = pytest.mark.django_db

NAMESPACE = "vault"
MS_NAME = "chat"
ISVC_NAME = "llm"
ENVIRONMENT = "staging"
MODEL, VERSION, VERSION_2 = "chat-llm", "v1", "v2"


# -- The secrets -----------------------------------------------------------------------------------------------
def marker(where: str) -> str:
    # Letters, digits and dashes only: the same text as is, URL-encoded, JSON- and HTML-escaped, so
    # one search finds every textual form; base64 is searched apart (``encoded_forms``).
    return f"SECRETMARKER-{where}-{uuid.uuid4().hex[:10]}"


@dataclass(frozen=True)
class Secrets:
    """One marker per place a secret is kept."""

    ms_hf_token: str = marker("ms-hf-token")
    ms_db_password: str = marker("ms-db-password")
    ms_api_key: str = marker("ms-api-key")
    ms_database_url: str = marker("ms-database-url")
    ms_upstream_url: str = marker("ms-upstream-url")
    ms_api_key_flag: str = marker("ms-api-key-flag")
    ms_hf_token_flag: str = marker("ms-hf-token-flag")
    # What the second revision (an applied manifest, audited with its patch) brings.
    ms_hf_token_v2: str = marker("ms-hf-token-v2")
    ms_api_key_flag_v2: str = marker("ms-api-key-flag-v2")
    isvc_hf_token: str = marker("isvc-hf-token")
    isvc_db_password: str = marker("isvc-db-password")
    isvc_api_key: str = marker("isvc-api-key")
    isvc_database_url: str = marker("isvc-database-url")
    isvc_storage_url: str = marker("isvc-storage-url")
    isvc_api_key_flag: str = marker("isvc-api-key-flag")
    isvc_hf_token_flag: str = marker("isvc-hf-token-flag")
    artifact_uri: str = marker("artifact-uri")
    artifact_uri_v2: str = marker("artifact-uri-v2")

    def named(self) -> dict[str, str]:
        return dict(vars(self))


def container_secrets(
    *, hf_token: str, db_password: str, api_key: str, database_url: str, upstream: str, api_key_flag, hf_token_flag
) -> dict:
    """A serving container's env and command line holding each kind of secret."""
    return {
        "env": [
            {"name": "HF_TOKEN", "value": hf_token},
            {"name": "DB_PASSWORD", "value": db_password},
            {"name": "OPENAI_API_KEY", "value": api_key},
            {"name": "DATABASE_URL", "value": f"postgres://app:{database_url}@db:5432/app"},
            {"name": "UPSTREAM", "value": f"https://user:{upstream}@upstream.example/v1"},
            {"name": "LOG_LEVEL", "value": "info"},
        ],
        "args": ["--model", "chat-llm", f"--api-key={api_key_flag}", "--hf-token", hf_token_flag, "--port=8000"],
    }


def ms_manifest(s: Secrets, *, revision: int) -> dict:
    held = container_secrets(
        hf_token=s.ms_hf_token if revision == 1 else s.ms_hf_token_v2,
        db_password=s.ms_db_password,
        api_key=s.ms_api_key,
        database_url=s.ms_database_url,
        upstream=s.ms_upstream_url,
        api_key_flag=s.ms_api_key_flag if revision == 1 else s.ms_api_key_flag_v2,
        hf_token_flag=s.ms_hf_token_flag,
    )
    roles = prefill_decode("engine:v1", decode_replicas=1, prefill_workers=0)
    for role in roles:
        role["entryTemplate"]["spec"]["containers"][0].update(held)
    return modelserving(
        name=MS_NAME, namespace=NAMESPACE, replicas=2, roles=roles, strategy=group_strategy(maxUnavailable=1)
    )


def isvc_manifest(s: Secrets) -> dict:
    body = inferenceservice(ISVC_NAME, namespace=NAMESPACE, replicas=2)
    model = body["spec"]["predictor"]["model"]
    model.update(
        container_secrets(
            hf_token=s.isvc_hf_token,
            db_password=s.isvc_db_password,
            api_key=s.isvc_api_key,
            database_url=s.isvc_database_url,
            upstream=s.isvc_storage_url,
            api_key_flag=s.isvc_api_key_flag,
            hf_token_flag=s.isvc_hf_token_flag,
        )
    )
    model["storageUri"] = f"https://reader:{s.isvc_storage_url}@models.example/chat-llm/"
    return body


# -- The world ---------------------------------------------------------------------------------------------------
class ManualClock:
    def __init__(self) -> None:
        self.t = 1_000_000.0

    def now(self) -> float:
        return self.t


@dataclass
class World:
    secrets: Secrets
    operator: object
    viewer: object
    granted_viewer: object
    releases: tuple[int, ...]
    preview_job: str
    pod: str  # a running pod of the ModelServing (its events and log)


def _user(django_user_model, username: str, group: str | None = None):
    user = django_user_model.objects.create_user(username=username, password=TEST_PASSWORD)
    if group:
        user.groups.add(Group.objects.get(name=group))
    return user


@pytest.fixture
def world(db, django_user_model) -> World:
    from rolloutui.services import actions, cluster, preview
    from rolloutui.services.releases import deploy as release_deploy
    from rolloutui.services.releases import records

    s = Secrets()
    operator = _user(django_user_model, "walk-operator", "operators")
    viewer = _user(django_user_model, "walk-viewer", "viewers")
    granted_viewer = _user(django_user_model, "walk-granted-viewer")
    NamespaceGrant.objects.create(user=granted_viewer, namespace=NAMESPACE, role="viewer")

    # The ModelServing, its first revision, then a second one through the audited apply action.
    c = cluster.get_cluster()
    if not c.list_nodes():
        for _ in range(3):
            c.add_node(8)
    c.create_modelserving(ms_manifest(s, revision=1))
    reconcile(MS_NAME, NAMESPACE)
    applied = json.dumps(ms_manifest(s, revision=2))
    actions.perform(actions.APPLY, operator, {"manifest": applied, "reason": "rotate the token"}, source="api")
    reconcile(MS_NAME, NAMESPACE)

    # The InferenceService, rolled out by the simulated KServe, then a second generation.
    kube = DatabaseCluster(ManualClock(), actor="operator", config=config())
    kube.add_node(8)
    kube.create_object(kserve_controller.config_map(STANDARD))
    kube.create_object(isvc_manifest(s))
    for _ in range(30):
        kube.clock.t += 1
        tick(kube)
    actions.perform(
        actions.ISVC_SET_IMAGE, operator, NAMESPACE, ISVC_NAME, {"image": "engine:v2", "reason": "v2"}, source="api"
    )
    for _ in range(5):
        kube.clock.t += 1
        tick(kube)

    # The ModelServing's pods run (the simulated kubelet's log prints the engine's command line).
    for step in range(1, 40):
        reconcile(MS_NAME, NAMESPACE)
        tick(c, now=c.clock.now() + step * 2.0)
    pods = c.list_pods(NAMESPACE, MS_NAME)
    pod = next(
        p["metadata"]["name"]
        for p in pods
        if any("running" in (cs.get("state") or {}) for cs in p["status"].get("containerStatuses") or [])
    )

    # The releases: model versions whose artifact URIs carry credentials, an environment, v1 deployed
    # (its artifact URI written into the ModelServing's env, MODEL_URI: a third revision) and v2 planned
    # (what deploying it would change shows both URIs).
    for version, secret in ((VERSION, s.artifact_uri), (VERSION_2, s.artifact_uri_v2)):
        uri = f"s3://trainer:{secret}@models.example/chat-llm/{version}/"
        records.register_model_version(operator, version_values(version, artifactUri=uri), source="api")
    records.create_environment(
        operator,
        {
            "name": ENVIRONMENT,
            "rank": 1,
            "resourceProfiles": PROFILES,
            "targets": [{"namespace": NAMESPACE, "name": MS_NAME, "roles": ["prefill", "decode"]}],
        },
        source="api",
    )
    planned = [
        records.create_release(
            operator,
            {"environment": ENVIRONMENT, "modelVersion": f"{MODEL}:{version}", "reason": "to staging"},
            source="api",
        )[0].number
        for version in (VERSION, VERSION_2)
    ]
    release_deploy.deploy(operator, NAMESPACE, MS_NAME, planned[0], reason="v1 to staging", source="api")
    reconcile(MS_NAME, NAMESPACE)
    # The operator's preview job (only its owner may read it; queued: no worker runs here).
    job = preview.start(operator, NAMESPACE, MS_NAME, set_image={"role": "decode", "image": "engine:v3"}, source="api")
    return World(s, operator, viewer, granted_viewer, tuple(planned), str(job.pk), pod)


# -- Finding a secret in an answer -----------------------------------------------------------------------------
def base64_forms(secret: str) -> set[str]:
    """The text every base64 encoding of a string containing ``secret`` contains, whatever the
    bytes before it: the secret is encoded at each of the three offsets in a 3-byte group, and only
    the characters made from its own bits are kept."""
    forms = set()
    for offset in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            encoded = encode(b"\0" * offset + secret.encode()).decode()
            first = (offset * 8 + 5) // 6  # the characters that hold bits of the padding before it
            last = (offset + len(secret)) * 8 // 6  # the characters made of whole bits of the secret
            forms.add(encoded[first:last])
    return forms


def encoded_forms(secret: str) -> set[str]:
    return {
        secret,
        quote(secret, safe=""),
        quote_plus(secret),
        json.dumps(secret)[1:-1],
        html.escape(secret),
        *base64_forms(secret),
    }


@dataclass
class Answer:
    where: str
    status: int | str
    text: str
    route: str = ""
    location: str = ""


def leaks(answers: list[Answer], secrets: dict[str, str]) -> list[str]:
    """``"<where>: <secret's name> (as <form>)"`` for every secret found in an answer."""
    found = []
    for answer in answers:
        for name, secret in secrets.items():
            for form in encoded_forms(secret):
                # Markers are case-distinct text; base64 forms are case-sensitive, the rest are not.
                hit = form in answer.text if form not in (secret,) else secret.lower() in answer.text.lower()
                if hit:
                    found.append(
                        f"{answer.where} [{answer.status}]: {name}" + ("" if form == secret else f" (as {form})")
                    )
                    break
    return found


def seen_everywhere(answers: list[Answer], secrets: dict[str, str]) -> set[str]:
    text = "\n".join(a.text for a in answers)
    return {name for name, secret in secrets.items() if secret in text}


@settings(max_examples=200)
@given(before=st.binary(max_size=12), after=st.binary(max_size=12), urlsafe=st.booleans())
def test_a_secret_is_found_in_any_base64_text_that_encodes_it(before, after, urlsafe):
    secret = marker("b64")
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    text = encode(before + secret.encode() + after).decode()
    assert leaks([Answer("GET /x", 200, text)], {"secret": secret}) != []


# -- Every page and GET endpoint ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Route:
    name: str  # with its namespace: ``admin:index``
    pattern: str
    params: frozenset[str]
    gets: bool
    admin: bool


def _routes(patterns, prefix: str = "", namespace: str = ""):
    for p in patterns:
        if isinstance(p, URLResolver):
            inner = f"{namespace}{p.namespace}:" if p.namespace else namespace
            yield from _routes(p.url_patterns, prefix + str(p.pattern), inner)
        elif isinstance(p, URLPattern):
            view = p.callback
            cls = getattr(view, "view_class", None) or getattr(view, "cls", None)
            # A class-based view answers GET only when it defines get and allows it (a control view
            # or the sign-out answer 405); a function view is a page.
            gets = cls is None or (hasattr(cls, "get") and "get" in cls.http_method_names)
            name = f"{namespace}{p.name}" if p.name else ""
            params = frozenset(p.pattern.regex.groupindex) | frozenset(p.pattern.converters)
            yield Route(name, prefix + str(p.pattern), params, gets, namespace.startswith("admin:"))


def all_routes() -> list[Route]:
    return list(_routes(get_resolver().url_patterns))


# Query strings a route needs to answer with data (a required parameter, or one that shows more).
QUERIES = {"api-revision-diff": "from=1&to=3"}

# Routes that are public by design, with why (everything else needs a signed-in user).
PUBLIC = {
    "healthz": "the liveness probe",
    "readyz": "the readiness probe",
    "login": "the sign-in page",
    "oidc_authentication_init": "single sign-on's start (404 while it is off)",
    "oidc_authentication_callback": "single sign-on's callback (404 while it is off)",
    "schema": "the OpenAPI schema: the API's shape, no data",
    "metrics": "Prometheus' scrape: without ROLLOUTUI_METRICS_TOKEN's bearer, series naming no object",
    "api-docs": "Swagger UI over the schema",
    "admin:login": "the admin site's sign-in page",
    "admin:logout": "the admin site's sign-out: back to the admin index, which asks to sign in",
}


def bindings(w: World) -> list[dict[str, str]]:
    """Values for path parameters, one dictionary per object of the world; a route is walked with
    every binding that fills all its parameters."""
    return [
        {"namespace": NAMESPACE, "name": MS_NAME},
        {"namespace": NAMESPACE, "name": ISVC_NAME},
        *({"namespace": NAMESPACE, "name": MS_NAME, "number": str(number)} for number in w.releases),
        {"model": MODEL, "version": VERSION},
        {"model": MODEL, "version": VERSION_2},
        {"name": ENVIRONMENT},
        {"job_id": w.preview_job},
        {"namespace": NAMESPACE, "name": w.pod},
    ]


# The admin site is for staff (no viewer or operator is): whatever its parameters name, a user who
# is not staff is sent to its sign-in before anything is looked up.
ADMIN_BINDING = {"app_label": "releases", "object_id": "1"}


def urls_of(route: Route, w: World) -> list[str]:
    if not route.name:
        return []  # nothing can reverse it (the admin's catch-all); the operator's walk lists it
    query = QUERIES.get(route.name)
    out = []
    for binding in [ADMIN_BINDING] if route.admin else bindings(w) if route.params else [{}]:
        if not route.params <= set(binding):
            continue
        try:
            path = reverse(route.name, kwargs={k: binding[k] for k in route.params})
        except NoReverseMatch:
            continue
        url = f"{path}?{query}" if query else path
        if url not in out:
            out.append(url)
    return out


def body_of(response) -> str:
    raw = b"".join(response.streaming_content) if response.streaming else response.content
    headers = "\n".join(f"{k}: {v}" for k, v in response.items())
    return headers + "\n\n" + raw.decode("utf-8", errors="replace")


def walk_http(client: Client, w: World) -> tuple[list[Answer], dict[str, set[int]]]:
    """Every GET route with every binding: the answers, and each route's statuses."""
    answers: list[Answer] = []
    statuses: dict[str, set[int]] = {}
    for route in all_routes():
        if not route.gets:
            continue
        for url in urls_of(route, w):
            response = client.get(url)
            location = response.get("Location", "")
            answers.append(Answer(f"GET {url}", response.status_code, body_of(response), route.name, location))
            statuses.setdefault(route.name, set()).add(response.status_code)
    return answers, statuses


# -- The websocket's first message and the CLI's read commands ----------------------------------------------------
def first_ws_message(user) -> Answer:
    async def read() -> str:
        comm = communicator({"namespace": NAMESPACE, "name": MS_NAME}, user)
        connected, _ = await comm.connect()
        assert connected
        text = await comm.receive_from(timeout=5)
        await comm.disconnect()
        return text

    # Channels closes "old" database connections around every hop to its database thread; inside
    # the test's transaction that is the test's own connection (on PostgreSQL it is closed and the
    # walk's next query fails). Django's test client keeps it open the same way for HTTP requests.
    with mock.patch("channels.db.close_old_connections", lambda: None):
        text = async_to_sync(read)()
    assert json.loads(text)["name"] == MS_NAME  # a state, not a refusal
    return Answer(f"websocket /ws/modelservings/{NAMESPACE}/{MS_NAME}/", "first message", text)


TARGET = f"{NAMESPACE}/{MS_NAME}"
# The argument lists each read command of ``manage.py rollout`` is walked with (a namespace-granted
# viewer lists and reads the audit of its namespace: everywhere needs a permission everywhere).
CLI_READS = {
    "list": [[], ["-n", NAMESPACE]],
    "get": [[TARGET]],
    "status": [[TARGET, "--timeout", "0"]],
    "history": [[TARGET]],
    "diff": [[TARGET, "--from", "1", "--to", "3"]],
    "audit": [[], [TARGET]],
}


def rollout_cli(*argv: str) -> Answer:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("rollout", *argv, stdout=out, stderr=err)
        status = "ok"
    except CommandError as exc:
        status = f"error: {exc}"
    except SystemExit as leave:  # status' exit codes (2: still rolling out when --timeout 0 passed)
        status = f"exit {leave.code}"
    return Answer(f"manage.py rollout {' '.join(argv)}", status, out.getvalue() + err.getvalue(), route=argv[0])


def cli_reads(username: str) -> list[Answer]:
    assert set(CLI_READS) == set(READ_COMMANDS), "a new read command: add its arguments to CLI_READS"
    answers = [
        rollout_cli(command, *arguments, "--user", username, *output)
        for command, variants in CLI_READS.items()
        for arguments in variants
        for output in ([], ["-o", "json"], ["-o", "yaml"])
    ]
    # Each command answered at least once (a walk of refusals would prove nothing).
    refused = {a.route for a in answers} - {a.route for a in answers if not str(a.status).startswith("error")}
    assert not refused, [f"{a.where}: {a.status}" for a in answers if a.route in refused]
    return answers


def walk(client: Client, user, w: World) -> tuple[list[Answer], dict[str, set[int]]]:
    answers, statuses = walk_http(client, w)
    answers.append(first_ws_message(user))
    answers.extend(cli_reads(user.get_username()))
    return answers, statuses


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


# -- The promises ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("who", ["viewer", "granted_viewer"], ids=["member of viewers", "viewer by namespace grant"])
def test_a_viewer_never_sees_a_secret_on_any_page_endpoint_websocket_or_cli_read(world, who):
    user = getattr(world, who)
    answers, statuses = walk(signed_in(user), user, world)
    # The walk read the objects (not a wall of refusals): the ModelServing's and InferenceService's pages.
    assert 200 in statuses["modelserving-detail"] and 200 in statuses["inferenceservice-detail"], statuses
    found = leaks(answers, world.secrets.named())
    assert not found, "\n".join(found)


def test_an_operator_sees_every_secret_somewhere_on_the_same_walk(world):
    answers, statuses = walk(signed_in(world.operator), world.operator, world)
    assert seen_everywhere(answers, world.secrets.named()) == set(world.secrets.named())
    # Every GET route answered 200 at least once: a new route the bindings cannot fill fails here
    # (add a binding or a query) instead of going unwalked.
    unwalked = {
        r.name or r.pattern: statuses.get(r.name)
        for r in all_routes()
        if r.gets and not r.admin and r.name not in PUBLIC and 200 not in statuses.get(r.name, set())
    }
    assert unwalked == {}


def test_an_anonymous_client_is_sent_to_sign_in_or_refused_on_every_page_and_endpoint(world):
    answers, _ = walk_http(Client(), world)
    # Django's login_required redirects to the sign-in page (302), the admin site to its own; DRF
    # answers 401 (403 without an authenticator that can challenge).
    sign_in = (reverse("login"), reverse("admin:login"))
    wrong = [
        f"{a.where}: {a.status} {a.location}".rstrip()
        for a in answers
        if a.route not in PUBLIC
        and a.status not in (401, 403)
        and not (a.status == 302 and a.location.startswith(sign_in))
    ]
    assert any(a.route.startswith("admin:") for a in answers), "the admin site was not walked"
    assert not wrong, "\n".join(wrong)
    found = leaks(answers, world.secrets.named())
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["diff", TARGET, "--from", "1", "--to", "3", "-o", "json"], id="revision diff"),
        pytest.param(["audit", TARGET, "-o", "json"], id="audit details"),
        pytest.param(["audit", TARGET, "-o", "yaml"], id="audit details as yaml"),
    ],
)
def test_the_cli_masks_secrets_for_a_viewer_as_the_api_does_and_shows_them_to_an_operator(world, argv):
    secrets = {"hf_token_v2": world.secrets.ms_hf_token_v2, "api_key_flag_v2": world.secrets.ms_api_key_flag_v2}
    as_viewer = rollout_cli(*argv, "--user", world.viewer.get_username())
    assert as_viewer.status == "ok" and "<masked>" in as_viewer.text
    assert leaks([as_viewer], secrets) == []
    as_operator = rollout_cli(*argv, "--user", world.operator.get_username())
    assert seen_everywhere([as_operator], secrets) == set(secrets)


def test_a_viewer_may_not_preview_from_the_cli_and_the_refusal_is_audited(world):
    """A preview needs operate wherever it is asked for: the page and the API refuse a viewer, and so
    does the server-side CLI (it used to run it as a read)."""
    from rolloutui.models import AuditRecord

    argv = ["preview", TARGET, "--role", "decode", "--image", "engine:v9"]
    refused = rollout_cli(*argv, "--user", world.viewer.get_username())
    assert refused.status.startswith("error: permission denied"), refused.status
    record = AuditRecord.objects.filter(action="preview", actor_name=world.viewer.get_username()).first()
    assert record is not None and record.result == AuditRecord.Result.ERROR and record.source == "cli"
    allowed = rollout_cli(*argv, "--user", world.operator.get_username(), "-o", "json")
    assert allowed.status == "ok" and json.loads(allowed.text)["converged"] is not None

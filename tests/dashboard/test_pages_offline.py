"""The pages' scripts in Chromium, served by Django in this process (``offline.OfflineSite``):
the page's own delta code against the golden fixtures, forged status values that must stay text,
a strict Content-Security-Policy, controls built from an action registry, and list rows updated in
place. No Redis, Celery or Daphne: the live product is ``test_browser.py``'s job.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Page, expect

from .delta_fixtures import FIXTURES
from .helpers import NAMESPACE, reconcile, same_json
from .offline import ORIGIN, OfflineSite

# Each forged value records which field ran, if any ever runs.
RAN = "window.__xss=(window.__xss||[]).concat('{}')"


def forged(field: str) -> str:
    """A value that runs script wherever it is parsed as HTML (as markup, inside an attribute, or
    as a Plotly label)."""
    ran = RAN.format(field)
    return f'<img src=x onerror="{ran}">"><svg onload="{ran}"><a href="javascript:{ran}">{field}</a>'


def no_script_ran(page: Page) -> None:
    assert page.evaluate("window.__xss") is None, page.evaluate("window.__xss")
    # Nothing the server sent became an element or an event handler attribute.
    made = page.evaluate("""() => [...document.querySelectorAll('img, svg, a[href^="javascript"]')]
        .filter((el) => !el.closest('.js-plotly-plot, #js-plotly-tester') && !el.classList.contains('brand-mark'))
        .map((el) => el.outerHTML)""")
    assert made == []
    handlers = page.evaluate("""() => [...document.querySelectorAll('*')].flatMap((el) =>
        [...el.attributes].filter((a) => a.name.startsWith('on')).map((a) => el.tagName + ' ' + a.name))""")
    assert handlers == []


def shot(page: Page, path) -> None:
    # A sticky top bar is painted mid-page in a full-page capture; pin it for the screenshot.
    page.add_style_tag(content=".topbar { position: static; }")
    page.screenshot(path=str(path), full_page=True)


def api_url(ms: dict, action: str) -> str:
    return f"/api/modelservings/{ms['namespace']}/{ms['name']}/{action}"


def post_json(client, path: str, body: dict):
    resp = client.post(path, data=json.dumps(body), content_type="application/json")
    assert resp.status_code < 300, resp.content
    return resp.json()


def current_state(ms: dict) -> dict:
    from rolloutui.services import state

    return state.get_state(ms["namespace"], ms["name"])


# --- The delta format, the page's side ------------------------------------------------------------
def test_the_pages_apply_delta_turns_every_fixture_base_into_its_expected_state(page: Page):
    fixtures = {p.stem: json.loads(p.read_text()) for p in sorted(FIXTURES.glob("*.json"))}
    assert len(fixtures) >= 20
    OfflineSite(page, client=None)
    page.route(
        ORIGIN + "/", lambda route: route.fulfill(content_type="text/html", body="<!doctype html><title>t</title>")
    )
    page.goto(ORIGIN + "/")
    results = page.evaluate(
        """async (fixtures) => {
            const { applyDelta } = await import("/static/js/detail/stream.js");
            const out = {};
            for (const [name, f] of Object.entries(fixtures)) {
                const before = JSON.stringify(f.base);
                // Through JSON text, as the socket delivers it.
                const applied = applyDelta(JSON.parse(before), JSON.parse(JSON.stringify(f.delta)));
                out[name] = { applied, baseUntouched: JSON.stringify(f.base) === before };
            }
            return out;
        }""",
        fixtures,
    )
    for name, fixture in fixtures.items():
        assert results[name]["baseUntouched"], name
        diff = same_json(results[name]["applied"], fixture["expected"])
        assert diff is None, f"{name}: {diff}"


# --- Forged status values stay text ---------------------------------------------------------------
def forge_status(ms: dict, operator_client) -> dict:
    """Values an operator types (a reason, which becomes the audit and the revision's change cause)
    and values the status carries (untyped in the CRD: phase, blocked reasons, effective strategy,
    role summaries, revision names), all forged. Returns the state the page will get."""
    from rolloutui.services import cluster

    post_json(
        operator_client, api_url(ms, "set-image"), {"role": "decode", "image": "engine:v2", "reason": forged("reason")}
    )
    reconcile(ms["name"])
    c = cluster.get_cluster()
    obj = c.get_modelserving(ms["namespace"], ms["name"])
    status = dict(obj.get("status") or {})
    status.update(
        {
            "phase": forged("phase"),
            "currentRevision": forged("currentRevision"),
            "waiting": [
                {
                    "kind": "budget",
                    "reason": forged("waiting.reason"),
                    "groups": [0, 1],
                    "role": forged("waiting.role"),
                },
                {"kind": forged("waiting.kind"), "reason": forged("waiting.kind.reason"), "groups": [2]},
            ],
            "strategy": {
                "type": forged("strategy.type"),
                "group": {
                    "total": forged("strategy.total"),
                    "maxUnavailable": {
                        "value": forged("strategy.value"),
                        "count": 1,
                        "source": forged("strategy.source"),
                    },
                },
                "roles": {
                    forged("strategy.role"): {"total": 2, "maxSurge": {"value": 1, "count": 1, "source": "object"}}
                },
            },
            "roles": [
                {"name": "prefill", "desired": 4, "ready": 4, "updated": 0, "progress": 0.5},
                {"name": forged("roles.name"), "desired": 4, "ready": 2, "updated": 1, "progress": 0.25},
            ],
            "conditions": [
                {"type": forged("condition"), "status": "True", "reason": "x", "message": forged("message")}
            ],
        }
    )
    c.replace_modelserving_status(
        ms["namespace"], ms["name"], status, resource_version=obj["metadata"]["resourceVersion"]
    )
    return current_state(ms)


def test_forged_status_values_render_as_text_on_the_detail_page_and_no_script_runs(
    ms, operator_client, page: Page, screenshot_dir
):
    from rolloutui.consumers import make_delta

    state = forge_status(ms, operator_client)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    site = OfflineSite(page, operator_client, full_state=lambda: state)
    page.set_viewport_size({"width": 1440, "height": 1000})
    page.goto(site.url(f"/modelservings/{ms['namespace']}/{ms['name']}/"))
    expect(page.get_by_test_id("conn")).to_have_text("live")

    # The server-rendered first state and the socket's snapshot: every value as text.
    expect(page.get_by_test_id("phase")).to_have_text(forged("phase"))
    expect(page.locator("#fact-rev")).to_contain_text(forged("currentRevision"))
    expect(page.locator("#fact-strategy")).to_have_text("ServingGroupRollingUpdate")
    waits = page.get_by_test_id("waits")
    for field in ("waiting.reason", "waiting.role", "waiting.kind", "waiting.kind.reason"):
        expect(waits).to_contain_text(forged(field))
    strategy = page.get_by_test_id("strategy")
    for field in ("strategy.type", "strategy.total", "strategy.value", "strategy.source", "strategy.role"):
        expect(strategy).to_contain_text(forged(field))
    expect(page.locator("#roles")).to_contain_text(forged("roles.name"))
    expect(page.get_by_test_id("revisions")).to_contain_text(forged("reason"))
    expect(page.get_by_test_id("audit")).to_contain_text(forged("reason"))
    page.wait_for_selector("#chart-progress .main-svg")
    expect(page.locator("#chart-progress")).to_contain_text("roles.name")

    # A delta carries new forged values: still text.
    newer = {
        **state,
        "time": state["time"] + 1,
        "phase": forged("delta.phase"),
        "blocked": [
            *state["blocked"],
            {"group": 3, "role": "decode", "kind": "drain", "reason": forged("delta.reason")},
        ],
    }
    site.socket.send(make_delta(state, newer))
    expect(page.get_by_test_id("phase")).to_have_text(forged("delta.phase"))
    expect(waits).to_contain_text(forged("delta.reason"))

    # The dialogs list revisions (change causes) and roles (from the status) as options.
    page.get_by_test_id("btn-rollback").click()
    expect(page.get_by_test_id("rollback-to")).to_contain_text(forged("reason"))
    page.locator("#dialog-cancel").click()
    page.get_by_test_id("btn-set-image").click()
    expect(page.get_by_test_id("si-role")).to_contain_text(forged("roles.name"))
    page.locator("#dialog-cancel").click()

    # The topology's tooltip and pod list name the forged role (a row of its own on the canvas).
    box = page.get_by_test_id("topology").bounding_box()
    layout = page.evaluate(
        """() => {
            const L = window.__rollout.topo.layout;
            return { labelW: L.labelW, cell: L.cell, gap: L.gap, slots: L.slots.map((s) => s.role) };
        }"""
    )
    row = layout["slots"].index(forged("roles.name"))
    x = box["x"] + layout["labelW"] + layout["cell"] / 2
    y = box["y"] + 14 + row * (layout["cell"] + layout["gap"]) + layout["cell"] / 2
    page.mouse.move(x, y)
    expect(page.locator("#tip")).to_contain_text(forged("roles.name"))
    page.mouse.click(x, y)
    expect(page.get_by_test_id("cell-detail")).to_contain_text(forged("roles.name"))
    shot(page, screenshot_dir / "detail-forged-status.png")

    no_script_ran(page)
    assert not errors, errors


def test_forged_status_values_render_as_text_on_the_list_page_and_no_script_runs(
    ms, operator_client, page: Page, screenshot_dir
):
    forge_status(ms, operator_client)
    site = OfflineSite(page, operator_client)
    page.clock.install()
    page.goto(site.url("/"))
    row = page.locator(f".ms-row[data-key='{NAMESPACE}/{ms['name']}']")
    # Server-rendered first, then refreshed by the script from the API (the next poll, 5 s later).
    expect(row.locator(".phase")).to_have_text(forged("phase"))
    page.clock.run_for(5000)
    expect(page.locator("#refresh-status")).to_contain_text("updated")
    expect(row.locator(".phase")).to_have_text(forged("phase"))
    # An unknown phase gets no colour class made from its text.
    assert row.locator(".phase").get_attribute("class") == "phase"
    expect(row).to_contain_text(forged("currentRevision"))
    shot(page, screenshot_dir / "list-forged-status.png")
    no_script_ran(page)


# --- A strict Content-Security-Policy -------------------------------------------------------------
CSP = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        # Plotly sets inline styles; scripts are what this policy is about.
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "object-src 'none'",
        "base-uri 'none'",
        "connect-src 'self' ws://testserver",
    ]
)


def watch_csp(page: Page) -> None:
    page.add_init_script(
        """document.addEventListener("securitypolicyviolation", (e) =>
            (window.__csp = window.__csp || []).push(
                `${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`));"""
    )


@pytest.mark.parametrize("path", ["/", "/modelservings/{namespace}/{name}/"])
def test_the_pages_work_under_a_strict_content_security_policy(ms, operator_client, page: Page, path):
    watch_csp(page)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    site = OfflineSite(
        page, operator_client, full_state=lambda: current_state(ms), headers={"Content-Security-Policy": CSP}
    )
    page.goto(site.url(path.format(**ms)))
    if path == "/":
        # The first refresh is the first poll, 5 s after the load (the server rendered the rows).
        expect(page.locator("#refresh-status")).to_contain_text("updated", timeout=15000)
        page.fill("#filter-q", ms["name"])
        expect(page.locator("#ms-count")).to_have_text("1")
    else:
        expect(page.get_by_test_id("conn")).to_have_text("live")
        page.wait_for_selector("#chart-progress .main-svg")
        page.wait_for_selector("#audit li")
        page.get_by_test_id("btn-pause").click()
        expect(page.locator("#dialog")).to_be_visible()
        page.locator("#dialog-cancel").click()
    assert page.evaluate("window.__csp") is None, page.evaluate("window.__csp")
    assert not errors, errors
    # No template syntax leaked into the page (a multi-line {# #} comment is printed as text).
    assert not re.search(r"\{[#%{]", page.inner_text("body"))


# --- Controls from an action registry -------------------------------------------------------------
def test_controls_are_built_from_the_action_registry_and_post_to_the_control_endpoints(
    ms, operator_client, page: Page, screenshot_dir
):
    state = current_state(ms)
    site = OfflineSite(page, operator_client, full_state=lambda: state)
    page.goto(site.url(f"/modelservings/{ms['namespace']}/{ms['name']}/"))
    expect(page.get_by_test_id("conn")).to_have_text("live")
    buttons = page.locator("#controls [data-action]")
    # The page's rollout-actions JSON (rolloutui.services.actions): one button per action and preset.
    expect(buttons).to_have_text(
        [
            "Pause",
            "Resume",
            "Promote one step",
            "Promote fully",
            "Set image",
            "Abort",
            "Roll back",
            "Scale",
            "Autoscale",
            "Autoscale off",
            "Delete",
        ]
    )
    # Disabled with the reason said: partition 0 and not paused.
    expect(page.get_by_test_id("btn-promote")).to_be_disabled()
    expect(page.get_by_test_id("btn-promote-full")).to_be_disabled()
    expect(page.get_by_test_id("controls-why")).to_contain_text("Partition is 0")

    page.get_by_test_id("btn-pause").click()
    page.fill("[data-testid=dialog-reason]", "hold on")
    page.click("[data-testid=dialog-confirm]")
    expect(page.get_by_test_id("phase")).to_have_text("Paused")
    assert site.requests[-1] == ("POST", api_url(ms, "pause"), {"reason": "hold on"})

    # Paused: "Promote fully" (the promote action's preset) applies now and sends its values.
    expect(page.get_by_test_id("btn-promote-full")).to_be_enabled()
    page.get_by_test_id("btn-promote-full").click()
    page.screenshot(path=str(screenshot_dir / "detail-registry-promote-dialog.png"))
    page.fill("[data-testid=dialog-reason]", "all good")
    page.click("[data-testid=dialog-confirm]")
    expect(page.locator("#dialog")).not_to_be_visible()
    assert site.requests[-1] == ("POST", api_url(ms, "promote"), {"reason": "all good", "full": True})

    page.get_by_test_id("btn-set-image").click()
    page.get_by_test_id("si-role").select_option("decode")
    page.get_by_test_id("si-image").fill("engine:v3")
    page.fill("[data-testid=dialog-reason]", "new build")
    page.click("[data-testid=dialog-confirm]")
    expect(page.locator("#dialog")).not_to_be_visible()
    assert site.requests[-1] == (
        "POST",
        api_url(ms, "set-image"),
        {"reason": "new build", "role": "decode", "image": "engine:v3"},
    )

    # Scale: the number of ServingGroups, from the registry's integer field.
    page.get_by_test_id("btn-scale").click()
    expect(page.locator("#dialog")).to_contain_text("drain")
    page.get_by_test_id("field-scale-replicas").fill("6")
    page.fill("[data-testid=dialog-reason]", "evening peak")
    page.click("[data-testid=dialog-confirm]")
    expect(page.locator("#dialog")).not_to_be_visible()
    method, path, body = site.requests[-1]
    assert (method, path) == ("POST", api_url(ms, "scale"))
    assert body["replicas"] == 6 and body["reason"] == "evening peak" and not body.get("allowZero")


def test_disabled_controls_say_why_and_promote_fully_resumes_a_paused_rollout(ms, operator_client, page: Page):
    state = current_state(ms)
    site = OfflineSite(page, operator_client, full_state=lambda: state)
    page.goto(site.url(f"/modelservings/{ms['namespace']}/{ms['name']}/"))
    expect(page.get_by_test_id("conn")).to_have_text("live")
    expect(page.get_by_test_id("btn-promote")).to_be_disabled()
    expect(page.get_by_test_id("controls-why")).to_contain_text("Partition is 0")
    expect(page.get_by_test_id("controls-why")).to_contain_text("Only one revision exists")
    page.get_by_test_id("btn-pause").click()
    page.fill("[data-testid=dialog-reason]", "hold")
    page.click("[data-testid=dialog-confirm]")
    expect(page.get_by_test_id("phase")).to_have_text("Paused")
    expect(page.get_by_test_id("paused-banner")).to_be_visible()
    page.get_by_test_id("btn-promote-full").click()
    expect(page.locator("#dialog")).to_contain_text("resumes")
    page.fill("[data-testid=dialog-reason]", "go")
    page.click("[data-testid=dialog-confirm]")
    expect(page.locator("#dialog")).not_to_be_visible()
    assert [r[1:] for r in site.requests] == [
        (api_url(ms, "pause"), {"reason": "hold"}),
        (api_url(ms, "promote"), {"reason": "go", "full": True}),
    ]


def test_autoscale_off_applies_only_while_autoscale_is_on(ms, operator_client, page: Page):
    state = current_state(ms)
    assert "autoscale" not in state["spec"]  # off: the state is what it was before the setting existed
    site = OfflineSite(page, operator_client, full_state=lambda: state)
    page.goto(site.url(f"/modelservings/{ms['namespace']}/{ms['name']}/"))
    expect(page.get_by_test_id("conn")).to_have_text("live")
    expect(page.get_by_test_id("btn-autoscale-off")).to_be_disabled()
    expect(page.get_by_test_id("controls-why")).to_contain_text("Autoscale is off: nothing to turn off.")
    expect(page.get_by_test_id("btn-autoscale")).to_be_enabled()

    post_json(operator_client, api_url(ms, "autoscale"), {"maxReplicas": 6, "reason": "evening peaks"})
    state = current_state(ms)
    assert state["spec"]["autoscale"] is True
    page.reload()
    expect(page.get_by_test_id("conn")).to_have_text("live")
    expect(page.get_by_test_id("btn-autoscale-off")).to_be_enabled()
    expect(page.get_by_test_id("controls-why")).not_to_contain_text("Autoscale is off")


# --- The list page --------------------------------------------------------------------------------
def test_list_rows_are_made_once_and_updated_in_place(ms, operator_client, page: Page):
    from rolloutui.services import cluster

    from .helpers import manifest

    site = OfflineSite(page, operator_client)
    page.clock.install()
    page.goto(site.url("/"))
    key = f"{NAMESPACE}/{ms['name']}"
    expect(page.locator(f".ms-row[data-key='{key}'] .phase")).to_have_text(ms["state"]["phase"])
    # The server rendered the rows: the first refresh is the next poll, 5 s later.
    page.clock.run_for(5000)
    expect(page.locator("#refresh-status")).to_contain_text("updated")
    page.evaluate(f"document.querySelector(\".ms-row[data-key='{key}']\").__sameRow = true")

    # A pause, a new ModelServing before it in name order, and the next refresh.
    post_json(operator_client, api_url(ms, "pause"), {"reason": "hold"})
    cluster.get_cluster().create_modelserving(manifest("aaa-" + ms["name"]))
    page.clock.run_for(5000)
    expect(page.locator(f".ms-row[data-key='{key}'] .phase")).to_have_text("Paused")
    assert page.evaluate(f"document.querySelector(\".ms-row[data-key='{key}']\").__sameRow") is True
    keys = page.locator("#ms-rows .ms-row[data-key]").evaluate_all("(rows) => rows.map((r) => r.dataset.key)")
    assert keys == sorted(keys) and f"{NAMESPACE}/aaa-{ms['name']}" in keys
    expect(page.locator("#ms-count")).to_have_text(str(len(keys)))

    # Filtering hides rows; the phase counts follow.
    page.locator("label.seg-item", has_text="Paused").click()
    expect(page.locator("#ms-count")).to_have_text("1")
    expect(page.locator(f".ms-row[data-key='{NAMESPACE}/aaa-{ms['name']}']")).to_be_hidden()
    expect(page.locator("[data-phase-count=Paused]")).to_have_text("1")

    # A ModelServing that goes away loses its row.
    cluster.get_cluster().delete_modelserving(NAMESPACE, "aaa-" + ms["name"])
    page.clock.run_for(5000)
    expect(page.locator(f".ms-row[data-key='{NAMESPACE}/aaa-{ms['name']}']")).to_have_count(0)
    assert page.evaluate(f"document.querySelector(\".ms-row[data-key='{key}']\").__sameRow") is True


# A row's shape as a person sees it: tags, attributes (sorted; style by the width it sets), text.
ROW_SHAPE = """(tr) => {
    const shape = (el) => [
        el.tagName,
        [...el.attributes].filter((a) => a.name !== "style").map((a) => [a.name, a.value]).sort(),
        el.style ? el.style.width : "",
        el.children.length ? null : el.textContent,
        [...el.children].map(shape),
    ];
    return shape(tr);
}"""


def test_the_server_renders_list_rows_exactly_as_the_script_builds_them(ms, operator_client, page: Page):
    """Rows are rendered by pages._list_rows_html (first paint) and by list.js (later rows): both
    must give the same row, or the first refresh would rewrite every cell."""
    from rolloutui.services import cluster

    from .helpers import manifest

    site = OfflineSite(page, operator_client)
    page.clock.install()
    page.goto(site.url("/"))
    key = f"{NAMESPACE}/{ms['name']}"
    expect(page.locator(f".ms-row[data-key='{key}'] .phase")).to_have_text(ms["state"]["phase"])
    # Every change the first refresh makes to the server's rows: none when the two renderings agree.
    page.evaluate(
        """() => {
            window.__rowWrites = [];
            const seen = (ms) => ms.forEach((m) => window.__rowWrites.push(m.type + " " + m.target.nodeName));
            const every = { subtree: true, childList: true, attributes: true, characterData: true };
            new MutationObserver(seen).observe(document.getElementById("ms-rows"), every);
        }"""
    )
    page.clock.run_for(5000)
    expect(page.locator("#refresh-status")).to_contain_text("updated")
    assert page.evaluate("window.__rowWrites") == []

    # A row the script builds (a ModelServing that appeared after the first paint) against the row
    # the server renders for it on the next load.
    other = "aaa-" + ms["name"]
    cluster.get_cluster().create_modelserving(manifest(other))
    page.clock.run_for(5000)
    row = page.locator(f".ms-row[data-key='{NAMESPACE}/{other}']")
    expect(row).to_have_count(1)
    built = row.evaluate(ROW_SHAPE)
    page.goto(site.url("/"))
    expect(row).to_have_count(1)
    assert row.evaluate(ROW_SHAPE) == built


# --- The websocket's acknowledgements ---------------------------------------------------------------
def test_the_page_acknowledges_each_message_by_echoing_its_token_and_keeps_the_field_out_of_its_state(
    ms, operator_client, page: Page
):
    from rolloutui.consumers import make_delta

    state = current_state(ms)
    site = OfflineSite(page, operator_client, full_state=lambda: {**state, "ack": {"n": 1, "token": "first-t0k"}})
    page.goto(site.url(f"/modelservings/{ms['namespace']}/{ms['name']}/"))
    expect(page.get_by_test_id("conn")).to_have_text("live")
    paused = {**state, "time": state["time"] + 1, "phase": "Paused"}
    site.socket.send({**make_delta(state, paused), "ack": {"n": 2, "token": "second-t0k"}})
    expect(page.get_by_test_id("phase")).to_have_text("Paused")
    acks = [m for m in site.socket.received if m.get("type") == "ack"]
    assert acks == [
        {"type": "ack", "n": 1, "token": "first-t0k"},
        {"type": "ack", "n": 2, "token": "second-t0k"},
    ]
    # The delta applied to the state as received, without asking for the full state again.
    assert not [m for m in site.socket.received if m.get("type") == "resync"]

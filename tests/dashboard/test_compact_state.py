"""The detail page's compact first state (``rolloutui/compactstate.py`` and its page half,
``static/js/detail/compact.js``): what the page expands is the state, key for key and in the same
order, and the page draws the same from it as from the plain JSON; and the page preloads every
module its script imports (``templatetags/modulepreload.py``)."""

from __future__ import annotations

import copy
import json
import re

import orjson
import pytest
from playwright.sync_api import Page

from rolloutui.compactstate import MIN_ROWS, compact_state, expand_state
from rolloutui.templatetags.modulepreload import imported_paths, module_graph
from rolloutui.templatetags.pagejson import page_json, page_state_json

from .delta_fixtures import FIXTURES
from .helpers import NAMESPACE, create_modelserving, reconcile, unique_name
from .offline import ORIGIN, OfflineSite
from .test_pages_offline import api_url, current_state, post_json

AWKWARD_ROWS = [
    # Keys that are JavaScript's own names, markup that must not close the script element,
    # separators JSON allows raw, and values that only look alike: true is not 1, "" is not null.
    {"__proto__": {"polluted": True}, "constructor": "x", "text": "</script><!--&", "flag": True, "n": 1},
    {"__proto__": None, "constructor": "y", "text": "a\u2028b\u2029c é 漢字", "flag": 1, "n": True},
    {"text": "", "flag": None, "n": 1.5, "nested": {"a": [1, {"b": None}], "": 0}},
    {"n": -0.0, "text": None, "flag": False, "nested": {}},
    {},
]


def fixture_states() -> dict[str, dict]:
    """The states of the delta fixtures (real rollouts on the simulated cluster, and hand-made
    shapes: fields removed from items, falsy values, nested objects), each with its lists long."""
    states = {}
    for path in sorted(FIXTURES.glob("*.json")):
        fixture = json.loads(path.read_text())
        for which in ("base", "expected"):
            if isinstance(fixture.get(which), dict):
                states[f"{path.stem}.{which}"] = fixture[which]
    return states


def awkward_state() -> dict:
    state = copy.deepcopy(next(iter(fixture_states().values())))
    state["instances"] = [*state["instances"], *AWKWARD_ROWS * 4]
    state["awkward"] = AWKWARD_ROWS * 4
    state["shared"] = [{"digest": f"sha256:{i % 3}", "surge": i % 5 == 0, "gone": None} for i in range(40)]
    state["lists"] = [{"roles": [{"name": "a", "n": i}] * (i % 3)} for i in range(20)]
    return state


def script_text(element: str) -> str:
    m = re.fullmatch(r'<script id="initial-state" type="application/json">(.*)</script>', element, re.S)
    assert m, element[:200]
    return m.group(1)


def same_with_order(a, b) -> bool:
    """Equal, with every object's keys in the same order (json.dumps keeps the order it is given)."""
    return json.dumps(a) == json.dumps(b)


@pytest.mark.parametrize("min_rows", [1, MIN_ROWS])
def test_expanding_the_compact_form_gives_back_every_fixture_state_with_its_keys_in_order(min_rows):
    states = {**fixture_states(), "awkward": awkward_state()}
    assert len(states) >= 40
    for name, state in states.items():
        text = script_text(str(page_json(compact_state(state, min_rows=min_rows), "initial-state")))
        expanded = expand_state(orjson.loads(text))
        assert expanded == state and same_with_order(expanded, state), name


def test_long_lists_of_objects_become_tables_with_shared_strings_and_nested_tables():
    state = awkward_state()
    compact = compact_state(state, min_rows=1)
    assert {"instances", "awkward", "shared", "lists"} <= set(compact["tabled"])
    shared = compact["state"]["shared"]
    digest = shared["columns"][shared["keys"].index("digest")]
    assert digest["values"] == ["sha256:0", "sha256:1", "sha256:2"] and len(digest["index"]) == 40
    instances = compact["state"]["instances"]
    gate_times = instances["columns"][instances["keys"].index("gateTimes")]
    assert "table" in gate_times or isinstance(gate_times, list)
    roles = compact["state"]["lists"]["columns"][0]
    assert roles["lengths"] == [i % 3 for i in range(20)] and roles["table"]["rows"] == sum(i % 3 for i in range(20))
    # True and 1 never share a column's values: the awkward rows' "flag" and "n" stay as written.
    awkward = compact["state"]["awkward"]
    assert isinstance(awkward["columns"][awkward["keys"].index("flag")], list)


def test_what_is_not_a_list_of_objects_with_string_keys_stays_as_it_was():
    state = {"a": [1, 2, 3] * 10, "b": [{"x": 1}, 2] * 10, "c": [{1: "int key"}] * 20, "d": "text", "e": None}
    compact = compact_state(state, min_rows=1)
    assert compact["tabled"] == [] and compact["state"] == state
    assert compact_state([1, 2]) == [1, 2] and compact_state({1: 2}) == {1: 2}


def test_the_page_state_element_is_escaped_like_page_json():
    state = awkward_state()
    element = str(page_state_json(state, "initial-state"))
    text = script_text(element)
    for raw in "<>&":
        assert raw not in text
    assert "</script" not in element[: -len("</script>")].lower()


def test_the_compact_state_of_a_large_modelserving_is_a_third_of_its_json():
    """A state shaped like a 1,000-group ModelServing's (the fixtures' instances, repeated with
    their group numbers moved on): the page's bytes shrink to well under half."""
    base = next(iter(fixture_states().values()))
    one = base["instances"][0]
    state = {**base, "instances": [{**one, "group": g, "ordinal": 0} for g in range(2000)]}
    plain = orjson.dumps(state)
    compact = orjson.dumps(compact_state(state))
    assert len(compact) * 2 < len(plain)
    assert expand_state(orjson.loads(compact)) == state


# --- The page's half, in Chromium -------------------------------------------------------------------
def expand_in_page(page: Page, payloads: dict[str, str]) -> dict[str, str]:
    """Each compact JSON text expanded by the page's own module, then written by JSON.stringify
    (which keeps the key order), beside the plain JSON text parsed and written alike."""
    OfflineSite(page, client=None)
    page.route(
        ORIGIN + "/", lambda route: route.fulfill(content_type="text/html", body="<!doctype html><title>t</title>")
    )
    page.goto(ORIGIN + "/")
    return page.evaluate(
        """async (payloads) => {
            const { expandState } = await import("/static/js/detail/compact.js");
            const out = {};
            for (const [name, [compact, plain]] of Object.entries(payloads)) {
                const expanded = expandState(JSON.parse(compact));
                out[name] = {
                    same: JSON.stringify(expanded) === JSON.stringify(JSON.parse(plain)),
                    // A key named "__proto__" is data, as JSON.parse makes it: no object's prototype changed.
                    prototypes: JSON.stringify(expanded).includes('"__proto__"')
                        ? (expanded.awkward || []).every((row) => Object.getPrototypeOf(row) === Object.prototype)
                        : true,
                };
            }
            out.untouched = ({}).polluted === undefined;
            return out;
        }""",
        payloads,
    )


def test_the_page_expands_every_compact_state_into_the_state_itself(page: Page):
    states = {**fixture_states(), "awkward": awkward_state()}
    payloads = {}
    for name, state in states.items():
        for min_rows in (1, MIN_ROWS):
            compact = script_text(str(page_json(compact_state(state, min_rows=min_rows), "initial-state")))
            plain = script_text(str(page_json(state, "initial-state")))
            payloads[f"{name}/{min_rows}"] = [compact, plain]
    results = expand_in_page(page, payloads)
    assert results.pop("untouched") is True
    wrong = {name: r for name, r in results.items() if not (r["same"] and r["prototypes"])}
    assert not wrong, wrong


def test_the_page_takes_a_plain_state_as_it_is(page: Page):
    state = fixture_states()["paused.base"]
    plain = script_text(str(page_json(state, "initial-state")))
    results = expand_in_page(page, {"plain": [plain, plain]})
    assert results["plain"]["same"]


FIRST_RENDER = """() => ({
    canvas: document.getElementById("topology").toDataURL(),
    topology: document.getElementById("topo-sub").textContent,
    legend: document.getElementById("legend").textContent,
    cells: document.querySelector(".topo-cells").textContent,
    label: document.getElementById("topology").getAttribute("aria-label"),
    facts: document.getElementById("facts").textContent,
    funnel: document.getElementById("gate-funnel").textContent,
    roles: document.getElementById("roles").textContent,
    waits: document.getElementById("waits").textContent,
    drain: document.getElementById("drain").textContent,
    strategy: document.getElementById("strategy").textContent,
    progress: JSON.stringify(window.__rollout.samples),
    state: JSON.stringify(window.__rollout.state),
})"""


def first_render(page: Page, site_client, path: str, rewrite=None) -> dict:
    """The page as first drawn from the state in its HTML: the socket is held back (it never sends),
    so nothing but the server-rendered state is drawn."""
    site = OfflineSite(page, site_client, rewrite_html=rewrite)
    page.route_web_socket(re.compile(r"^ws://testserver/ws/.*"), lambda ws: None)  # with its ?page= too
    page.set_viewport_size({"width": 1440, "height": 1000})
    page.goto(site.url(path))
    page.wait_for_function("() => window.__firstRenderMs !== undefined")
    return page.evaluate(FIRST_RENDER)


def as_plain_json(html: str) -> str:
    """The page with its compact first state written as plain JSON instead (the old page)."""
    m = re.search(r'(<script id="initial-state" type="application/json">)(.*?)(</script>)', html, re.S)
    state = expand_state(orjson.loads(m.group(2)))
    plain = str(page_json(state, "initial-state"))
    return html[: m.start()] + plain + html[m.end() :]


def rolled_part_way(name: str, clock, operator_client) -> dict:
    """A 12-group ModelServing on the manual clock, Ready, then part way into a new image's
    rollout: instances of two revisions in more than one state (so the cells differ), then the clock
    stands still, so that two loads of the page get the very same state."""
    from controller.simcluster.database.tick import tick
    from rolloutui.services import cluster

    sim = cluster.get_cluster()
    for _ in range(10):
        sim.add_node(8)
    create_modelserving(name, replicas=12)
    ms = {"namespace": NAMESPACE, "name": name}
    new_image = {"role": "decode", "image": "engine:v2", "reason": "t"}
    for step in range(200):
        if step == 60:
            post_json(operator_client, api_url(ms, "set-image"), new_image)
        clock.t += 1.0
        tick(sim)
        reconcile(name)
        state = current_state(ms)
        instances = state["instances"]
        if step > 60 and len({i["revision"] for i in instances}) > 1 and len({i["state"] for i in instances}) > 1:
            return state
    raise AssertionError(f"no mixed rollout state: {[(i['revision'], i['state']) for i in instances]}")


@pytest.mark.django_db
def test_the_detail_page_draws_the_same_topology_and_progress_from_the_compact_state_as_from_plain_json(
    operator_client, page: Page, browser, monkeypatch
):
    from controller.models import SimClock
    from controller.simcluster.database import clock as sim_clock
    from tests.live.helpers import ManualClock

    clock = ManualClock()
    monkeypatch.setattr(sim_clock, "_shared", clock)
    config = {"timing": {"schedule": 1, "pull": 1, "start": 1, "load": 3, "terminate": 1}}
    SimClock.objects.update_or_create(pk=1, defaults={"wall_base": clock.t, "sim_base": clock.t, "config": config})
    name = unique_name("compact")
    state = rolled_part_way(name, clock, operator_client)
    assert len(state["instances"]) >= MIN_ROWS
    path = f"/modelservings/{NAMESPACE}/{name}/"
    html = operator_client.get(path).content.decode()
    assert '"compactState":1' in html and '"instances":{"rows"' in html

    compact = first_render(page, operator_client, path)
    plain_page = browser.new_page()
    try:
        plain = first_render(plain_page, operator_client, path, rewrite=as_plain_json)
    finally:
        plain_page.close()
    assert json.loads(compact["state"])["time"] == json.loads(plain["state"])["time"], "the state moved between loads"
    different = {k: (compact[k][:200], plain[k][:200]) for k in compact if compact[k] != plain[k]}
    assert not different, different
    assert json.loads(compact["state"])["instances"] == json.loads(json.dumps(state["instances"]))


# --- Module preloads ---------------------------------------------------------------------------------
def test_imports_are_read_from_static_import_and_export_lines_only():
    text = """import { a,
        b as c } from "./a.js";
    import * as d from '../lib/d.js';
    export { e } from "./e.js";
    import "./f.js";
    import x from "https://elsewhere/x.js";
    const s = 'import y from "./not-an-import.js"';
    console.log("from ./g.js");"""
    assert imported_paths("js/detail/main.js", text) == [
        "js/detail/a.js",
        "js/lib/d.js",
        "js/detail/e.js",
        "js/detail/f.js",
    ]


@pytest.mark.django_db
def test_the_detail_page_preloads_every_module_it_loads(ms, operator_client, page: Page):
    graph = module_graph("js/detail/main.js")
    assert "js/detail/compact.js" in graph and "js/topology.js" in graph and len(graph) == len(set(graph))
    site = OfflineSite(page, operator_client, full_state=lambda: current_state(ms))
    page.goto(site.url(f"/modelservings/{ms['namespace']}/{ms['name']}/"))
    page.wait_for_function("() => window.__firstRenderMs !== undefined")
    preloaded = page.evaluate(
        "() => [...document.head.querySelectorAll('link[rel=modulepreload]')].map((l) => new URL(l.href).pathname)"
    )
    loaded = page.evaluate(
        """() => performance.getEntriesByType("resource").map((e) => new URL(e.name).pathname)
            .filter((p) => p.startsWith("/static/js/"))"""
    )
    assert preloaded == ["/static/" + p for p in graph]
    assert set(loaded) <= set(preloaded), set(loaded) - set(preloaded)

"""The pods of a role instance (``core.podtemplate.build_instance_pods``) and its named steps, one
table each: the labels a pod carries, the environment that tells it its instance, and its spec
(environment in every container, scheduler, hostname under the headless Service, in-place gate)."""

from __future__ import annotations

import pytest

from controller.core import naming
from controller.core.podtemplate import _group_env, _pod_labels, _pod_spec, build_instance_pods
from tests.factories import role

INPLACE = {"conditionType": naming.CONDITION_INPLACE_READY}


def env_of(container: dict) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container.get("env") or []}


def test_the_worked_example_builds_an_entry_and_a_worker_that_find_the_entry():
    ms = {"metadata": {"name": "chat", "namespace": "team", "uid": "u1"}}
    pods = build_instance_pods(
        ms=ms, revision_hash="r1", role_data=role("prefill", workers=1), group=1, ordinal=0, in_place_gate=False
    )
    assert [p["metadata"]["name"] for p in pods] == ["chat-1-prefill-0-0", "chat-1-prefill-0-1"]
    worker = pods[1]
    assert env_of(worker["spec"]["containers"][0]) == {
        "GROUP_SIZE": "2",
        "WORKER_INDEX": "1",
        "ENTRY_ADDRESS": "chat-1-prefill-0-0.chat-pods.team.svc",
    }
    assert (worker["spec"]["hostname"], worker["spec"]["subdomain"]) == ("chat-1-prefill-0-1", "chat-pods")
    assert worker["metadata"]["ownerReferences"][0]["uid"] == "u1"


def test_pod_indexes_build_only_the_pods_asked_for():
    ms = {"metadata": {"name": "chat"}}
    pods = build_instance_pods(
        ms=ms,
        revision_hash="r1",
        role_data=role("prefill", workers=3),
        group=0,
        ordinal=0,
        in_place_gate=False,
        pod_indexes=[2],
    )
    assert [p["metadata"]["name"] for p in pods] == ["chat-0-prefill-0-2"]
    assert pods[0]["metadata"]["namespace"] == "default"


@pytest.mark.parametrize(
    "template_labels, index, extra, expected",
    [
        pytest.param({}, 0, None, {naming.LABEL_ENTRY: "true"}, id="the entry pod is labelled entry"),
        pytest.param({}, 1, None, {}, id="a worker pod carries no entry label"),
        pytest.param({"team": "a"}, 1, None, {"team": "a"}, id="the templates own labels are kept"),
        pytest.param(
            {naming.LABEL_ROLE: "forged"}, 1, None, {naming.LABEL_ROLE: "decode"}, id="the controllers labels win"
        ),
        pytest.param({}, 1, {"compat": "v1"}, {"compat": "v1"}, id="extra labels are added last"),
    ],
)
def test_the_labels_step_names_the_pods_place_and_keeps_the_templates_labels(template_labels, index, extra, expected):
    labels = _pod_labels({"labels": template_labels}, "chat", 2, "decode", 1, index, "r1", "h1", extra)
    assert {
        naming.LABEL_NAME: "chat",
        naming.LABEL_GROUP_ORDINAL: "2",
        naming.LABEL_ROLE: "decode",
        naming.LABEL_ROLE_ORDINAL: "1",
        naming.LABEL_POD_INDEX: str(index),
        naming.LABEL_REVISION: "r1",
        naming.LABEL_ROLE_TEMPLATE_HASH: "h1",
        **expected,
    }.items() <= labels.items()
    assert (naming.LABEL_ENTRY in labels) == (index == 0)


@pytest.mark.parametrize(
    "workers, index, expected",
    [
        pytest.param(0, 0, ("1", "0"), id="a lone entry is a group of one at index zero"),
        pytest.param(3, 2, ("4", "2"), id="the second worker of three is index two of four"),
    ],
)
def test_the_group_env_step_tells_a_pod_its_group_size_index_and_entry(workers, index, expected):
    env = {e["name"]: e["value"] for e in _group_env(workers, index, "entry.addr")}
    assert (env["GROUP_SIZE"], env["WORKER_INDEX"], env["ENTRY_ADDRESS"]) == (*expected, "entry.addr")


ENV = _group_env(1, 1, "entry.addr")


@pytest.mark.parametrize(
    "spec, scheduler, gate, check",
    [
        pytest.param(
            {"containers": [{"name": "c", "env": [{"name": "GROUP_SIZE", "value": "9"}, {"name": "X", "value": "1"}]}]},
            None,
            False,
            lambda s: (
                s["containers"][0]["env"][0] == {"name": "X", "value": "1"}
                and env_of(s["containers"][0])["GROUP_SIZE"] == "2"
            ),
            id="the group env replaces a containers own value of the same name and keeps the rest",
        ),
        pytest.param(
            {"containers": [{"name": "c"}], "initContainers": [{"name": "i"}]},
            None,
            False,
            lambda s: env_of(s["initContainers"][0])["WORKER_INDEX"] == "1",
            id="init containers get the group env too",
        ),
        pytest.param(
            {}, None, False, lambda s: s["containers"] == [], id="a spec without containers gets an empty list"
        ),
        pytest.param(
            {"containers": []}, "volcano", False, lambda s: s["schedulerName"] == "volcano", id="the scheduler is set"
        ),
        pytest.param(
            {"containers": []}, None, False, lambda s: "schedulerName" not in s, id="no scheduler leaves the default"
        ),
        pytest.param(
            {"containers": [], "readinessGates": [INPLACE, {"conditionType": "other"}]},
            None,
            True,
            lambda s: s["readinessGates"] == [{"conditionType": "other"}, INPLACE],
            id="the in place gate is there once and last",
        ),
        pytest.param(
            {"containers": []}, None, False, lambda s: "readinessGates" not in s, id="no in place gate is asked for"
        ),
        pytest.param(
            {"containers": []},
            None,
            False,
            lambda s: (s["hostname"], s["subdomain"]) == ("chat-0-decode-0-1", "chat-pods"),
            id="the pod is its own hostname under the headless service",
        ),
    ],
)
def test_the_pod_spec_step_adds_what_the_instance_needs(spec, scheduler, gate, check):
    assert check(_pod_spec(spec, ENV, "chat-0-decode-0-1", "chat", scheduler, gate))

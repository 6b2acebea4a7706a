"""Image digests: the digest each pod runs is read from ``status.containerStatuses[].imageID``,
recorded on its revision the first time, shown per instance and per revision, and a revision
whose tag now resolves to other bytes is flagged; the simulated registry resolves tags at pull
time and a scenario's ``retag`` moves one."""

from __future__ import annotations

import json

import pytest

from controller.core import digests, naming
from controller.core.observe import parse_pod
from controller.core.ports import NoRouter
from controller.core.reconcile import reconcile
from controller.core.revisions import History
from controller.core.view import build_view
from controller.simcluster import physics
from controller.simcluster.config import ClusterConfig, default_digest
from controller.simcluster.runner import Runner
from controller.simcluster.scenario import parse_scenario

A = "sha256:" + "a" * 64
B = "sha256:" + "b" * 64


@pytest.mark.parametrize(
    "image_id, expected",
    [
        pytest.param("docker.io/library/engine@" + A, A, id="a repository digest gives the part after the at sign"),
        pytest.param("docker-pullable://engine@" + A, A, id="docker's pullable prefix is dropped with the repository"),
        pytest.param(A, A, id="a bare digest is itself"),
        pytest.param("", None, id="an image not pulled yet has no digest"),
        pytest.param(None, None, id="no imageID has no digest"),
    ],
)
def test_digest_of_reads_an_image_id(image_id, expected):
    assert digests.digest_of(image_id) == expected


def pod(name: str, rev: str, image: str, image_id: str, *, status_image: str | None = None, deleting=False) -> dict:
    labels = {
        naming.LABEL_REVISION: rev,
        naming.LABEL_GROUP_ORDINAL: "0",
        naming.LABEL_ROLE: "serve",
        naming.LABEL_ROLE_ORDINAL: "0",
        naming.LABEL_POD_INDEX: "0",
    }
    meta = {"name": name, "uid": "", "labels": labels}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {
        "metadata": meta,
        "spec": {"containers": [{"name": "engine", "image": image}]},
        "status": {"containerStatuses": [{"name": "engine", "image": status_image or image, "imageID": image_id}]},
    }


def revision(rev: str, record: dict | None = None) -> dict:
    annotations = {digests.ANNOTATION_DIGESTS: json.dumps(record)} if record is not None else {}
    return {"metadata": {"name": f"chat-{rev}", "labels": {naming.LABEL_REVISION: rev}, "annotations": annotations}}


@pytest.mark.parametrize(
    "record, pods, expected",
    [
        pytest.param(
            None,
            [pod("p", "r1", "engine:v1", "engine@" + A)],
            {"engine:v1": {"digest": A}},
            id="the first digest seen is recorded",
        ),
        pytest.param(
            {"engine:v1": {"digest": A}},
            [pod("p", "r1", "engine:v1", "engine@" + A)],
            None,
            id="the same digest again changes nothing",
        ),
        pytest.param(
            {"engine:v1": {"digest": A}},
            [pod("p", "r1", "engine:v1", "engine@" + B)],
            {"engine:v1": {"digest": A, "moved": B}},
            id="a tag now running other bytes is flagged and the first digest kept",
        ),
        pytest.param(
            None,
            [pod("p", "r1", "engine:v1", "docker.io/library/engine@" + A, status_image="docker.io/library/engine:v1")],
            {"engine:v1": {"digest": A}},
            id="a normalised image name in the status still matches the spec",
        ),
        pytest.param(
            None,
            [pod("p", "r1", "engine:v2", "engine@" + A, status_image="engine:v1")],
            None,
            id="a container still running the old image of an in-place update is not recorded",
        ),
        pytest.param(
            None,
            [pod("p", "r1", "engine:v1", "engine@" + A, deleting=True)],
            None,
            id="a pod being deleted is not read",
        ),
        pytest.param(
            None, [pod("p", "r2", "engine:v1", "engine@" + A)], None, id="pods of another revision are not its own"
        ),
        pytest.param(
            {"engine@" + A: {"digest": A}},
            [pod("p", "r1", "engine@" + A, "engine@" + B)],
            None,
            id="a digest-pinned image is never flagged",
        ),
    ],
)
def test_digest_record_on_a_revision(record, pods, expected):
    out = digests.updates([revision("r1", record)], digests.running(parse_pod(p) for p in pods))
    if expected is None:
        assert out == {}
    else:
        assert json.loads(out["chat-r1"]) == expected


def test_the_registry_resolves_a_tag_at_pull_time_and_a_retag_leaves_running_pods_alone():
    config = ClusterConfig()
    assert config.digest("vllm/vllm-openai:v0.9.1") == default_digest("vllm/vllm-openai:v0.9.1")
    assert physics.image_id("vllm/vllm-openai:v0.9.1", config) == "vllm/vllm-openai@" + default_digest(
        "vllm/vllm-openai:v0.9.1"
    )
    assert config.digest("engine@" + A) == A  # pinned: its own digest, whatever the registry says
    moved = config.retag("engine:v1")
    assert moved == default_digest("engine:v1#1") and config.digest("engine:v1") == moved
    assert config.retag("engine:v1") == default_digest("engine:v1#2")


SCENARIO = {
    "name": "retag",
    "seed": 3,
    "until": 400,
    "cluster": {
        "nodes": 2,
        "gpusPerNode": 2,
        "timing": {"schedule": 1, "pull": 5, "start": 1, "load": 10, "terminate": 1},
    },
    "modelServing": {
        "apiVersion": naming.API_VERSION,
        "kind": naming.KIND,
        "metadata": {"name": "chat", "namespace": "default"},
        "spec": {
            "replicas": 2,
            "template": {
                "roles": [
                    {
                        "name": "serve",
                        "replicas": 1,
                        "entryTemplate": {
                            "spec": {
                                "containers": [
                                    {
                                        "name": "engine",
                                        "image": "engine:v1",
                                        "resources": {"limits": {naming.GPU_RESOURCE: "1"}},
                                    }
                                ]
                            }
                        },
                    }
                ]
            },
        },
    },
    "events": [
        {"at": 0, "do": "apply"},
        {"at": 60, "do": "retag", "image": "engine:v1"},
        {"at": 70, "do": "deletePods", "group": 1},
    ],
}


def test_a_moved_tag_is_seen_per_instance_and_flags_its_revision():
    runner = Runner(parse_scenario(SCENARIO))
    trace = runner.run()
    assert trace["converged"] is True
    assert [e["do"] for e in trace["events"] if not e.get("error")] == ["apply", "retag", "deletePods"]
    store = runner.store
    (rev,) = store.list_revisions("default", "chat")
    first, moved = default_digest("engine:v1"), default_digest("engine:v1#1")
    assert json.loads(rev["metadata"]["annotations"][digests.ANNOTATION_DIGESTS]) == {
        "engine:v1": {"digest": first, "moved": moved}
    }
    # Per instance: group 0 still runs what it pulled first, group 1 was recreated after the move.
    ms = store.get_modelserving("default", "chat")
    view = build_view(ms, store.list_pods("default", "chat"), store.list_revisions("default", "chat"), {}, 400.0)
    assert {i["group"]: i["digest"] for i in view["instances"]} == {0: first, 1: moved}
    pods = {p["metadata"]["labels"][naming.LABEL_GROUP_ORDINAL]: p for p in store.list_pods("default", "chat")}
    assert pods["1"]["status"]["containerStatuses"][0]["imageID"] == "engine@" + moved
    (shown,) = view["revisions"]
    assert shown["images"] == [{"image": "engine:v1", "digest": first, "moved": moved}]
    assert shown["digestMoved"] is True
    # The record is in the cluster: a fresh History (a restarted controller) reads the same flag.
    assert History.from_objects(store.list_revisions("default", "chat")).revisions[0].to_json()["digestMoved"] is True


def test_an_unmoved_tag_records_one_digest_and_no_flag():
    raw = {**SCENARIO, "events": [{"at": 0, "do": "apply"}, {"at": 70, "do": "deletePods", "group": 1}]}
    runner = Runner(parse_scenario(raw))
    runner.run()
    clock_rev = runner.store.list_revisions("default", "chat")[0]
    assert json.loads(clock_rev["metadata"]["annotations"][digests.ANNOTATION_DIGESTS]) == {
        "engine:v1": {"digest": default_digest("engine:v1")}
    }
    result = reconcile(runner.store, NoRouter(), runner.clock, "default", "chat")
    assert result.view["revisions"][0]["digestMoved"] is False

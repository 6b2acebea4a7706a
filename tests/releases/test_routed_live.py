"""The Routed gate on the running app's embedded cluster: the database store answers with the live
traffic's table (``DatabaseCluster.routable_pods``), so a pod marked draining leaves it and its
instance drops back to Loaded on the next pass."""

from __future__ import annotations

import pytest

from controller.core import naming
from rolloutui.services import state
from rolloutui.services.cluster import get_cluster

pytestmark = pytest.mark.django_db


def test_the_live_routers_table_is_the_routable_entry_pods_and_drives_the_routed_gate(chat):
    cluster = get_cluster()
    pods = cluster.list_pods("default", "chat")
    entries = sorted(p["metadata"]["name"] for p in pods if p["metadata"]["labels"].get(naming.LABEL_POD_INDEX) == "0")
    table = cluster.routable_pods("default", "chat", pods)
    assert sorted(table) == entries and set(table.values()) == {None}
    view = state.get_state("default", "chat")
    assert {i["gate"] for i in view["instances"]} == {"Serving"}

    marked = entries[0]
    cluster.patch_pod("default", marked, {"metadata": {"annotations": {naming.ANNOTATION_DRAINING: "1.0"}}})
    assert marked not in cluster.routable_pods("default", "chat")

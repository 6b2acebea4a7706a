"""Dashboard users mapped to Kubernetes RBAC with SubjectAccessReview (optional on the
Kubernetes backend): a permission the dashboard grants holds only where the cluster's RBAC lets the
same user get (view) or patch (operate) ModelServings. The API server double answers the reviews
from its authorizer, over HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from apiserver_double import MODELSERVINGS, RESOURCES, RunningApiServer

from controller.k8s import KubernetesCluster
from rolloutui.services import access

VIEW, OPERATE = "rolloutui.view_modelserving", "rolloutui.operate_modelserving"


# The cluster's RBAC: alice may read ModelServings in team-a and patch them nowhere; members of the
# Kubernetes group "dash:operators" may patch in team-a.
def rbac(user, verb, group, resource, namespace, name) -> bool:
    if resource != "modelservings" or group != "serving.rolloutui.io":
        return False
    if user == "dash:alice" and verb in ("get", "list") and namespace == "team-a":
        return True
    return False


@pytest.fixture
def reviewed(settings, monkeypatch) -> Iterator[RunningApiServer]:
    with RunningApiServer(RESOURCES, {MODELSERVINGS}, authorizer=rbac) as server:
        settings.ROLLOUTUI_K8S_ACCESS_REVIEW = True
        settings.ROLLOUTUI_K8S_USER_PREFIX = "dash:"
        monkeypatch.setattr("rolloutui.services.cluster.backend_name", lambda: "kubernetes")
        monkeypatch.setattr("rolloutui.services.cluster.get_cluster", lambda: KubernetesCluster(server.api_client()))
        yield server


def member(django_user_model, name, group):
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user(name, password=f"{name}-password-1")
    user.groups.add(Group.objects.get(name=group))
    return user


def test_the_cluster_narrows_a_dashboard_permission_to_what_its_rbac_allows(reviewed, django_user_model, db):
    alice = member(django_user_model, "alice", "operators")
    assert access.allowed(alice, VIEW, "team-a")
    assert not access.allowed(alice, VIEW, "team-b")
    assert not access.allowed(alice, OPERATE, "team-a")  # the cluster lets her read, not patch
    assert access.namespaces(alice, VIEW, lambda: {"team-a", "team-b", "team-c"}) == {"team-a"}
    review = reviewed.emu.reviews[0]
    assert review["user"] == "dash:alice" and review["groups"] == ["dash:operators"]
    assert review["resourceAttributes"]["resource"] == "modelservings"


def test_the_cluster_never_widens_what_the_dashboard_refuses(reviewed, django_user_model, db):
    # Nothing in the dashboard: no review is even asked.
    nobody = django_user_model.objects.create_user("alice", password="alice-password-1")
    assert not access.allowed(nobody, VIEW, "team-a")
    assert reviewed.emu.reviews == []


def test_an_unanswered_review_refuses(settings, monkeypatch, django_user_model, db):
    from rolloutui.embedded_redis import free_port

    with RunningApiServer(RESOURCES, {MODELSERVINGS}) as gone:
        api = gone.api_client()
        api.configuration.host = f"http://127.0.0.1:{free_port()}"
    settings.ROLLOUTUI_K8S_ACCESS_REVIEW = True
    settings.ROLLOUTUI_K8S_USER_PREFIX = ""
    monkeypatch.setattr("rolloutui.services.cluster.backend_name", lambda: "kubernetes")
    monkeypatch.setattr("rolloutui.services.cluster.get_cluster", lambda: KubernetesCluster(api))
    alice = member(django_user_model, "alice", "viewers")
    assert not access.allowed(alice, VIEW, "team-a")


def test_without_the_setting_no_review_is_asked(settings, django_user_model, db):
    settings.ROLLOUTUI_K8S_ACCESS_REVIEW = False
    alice = member(django_user_model, "alice", "viewers")
    assert access.allowed(alice, VIEW, "team-b")

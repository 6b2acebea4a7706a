"""The manifests service (apply, delete, validate) and the CLI's reading subcommands, in this
process against the database-backed simulated cluster (the controller run with ``reconcile``)."""

from __future__ import annotations

import io
import json

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError

from controller.core import naming
from controller.core.ports import Conflict
from rolloutui.models import AuditRecord
from rolloutui.services import cluster, manifests, state
from tests.paths import KTHENA_EXAMPLES

from .helpers import NAMESPACE, manifest, reconcile, unique_name

pytestmark = pytest.mark.django_db


def stored(name: str) -> dict:
    return cluster.get_cluster().get_modelserving(NAMESPACE, name)


def test_json_and_multi_document_yaml_are_applied_and_other_kinds_are_skipped(operator):
    one, two = unique_name(), unique_name()
    text = json.dumps(manifest(one)) + "\n---\n" + yaml.safe_dump(manifest(two))
    text += "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"
    records = manifests.apply(operator, manifest=text, reason="two at once", source="api")
    assert [(r.name, r.details["outcome"]) for r in records] == [(one, "created"), (two, "created")]
    checked = manifests.validate(text)
    assert checked["errors"] == [] and checked["documents"][2]["skipped"].startswith("not a ModelServing")


def test_a_kthena_example_is_applied_as_written_and_stored_under_our_api_version(operator):
    text = (KTHENA_EXAMPLES / "model-serving__sample.yaml").read_text()
    assert naming.KTHENA_API_VERSION in text
    (record,) = manifests.apply(operator, manifest=text, reason="kthena", source="cli")
    # Kthena's sample runs nginx without any probe: applied, with the probe advice in the answer.
    warnings = record.details.pop("warnings")
    assert [w.split(":")[0] for w in warnings] == [
        "role prefill",
        "role prefill workers",
        "role decode",
        "role decode workers",
    ]
    assert record.details == {"document": 0, "apiVersion": naming.KTHENA_API_VERSION, "outcome": "created"}
    assert stored("sample")["apiVersion"] == naming.API_VERSION


def test_an_update_replaces_the_spec_keeps_foreign_annotations_and_reports_unchanged_text(operator):
    name = unique_name()
    body = manifest(name, max_surge=1)
    manifests.apply(operator, manifest=yaml.safe_dump(body), reason="create", source="cli")
    cluster.get_cluster().patch_modelserving(NAMESPACE, name, {"metadata": {"annotations": {"team/owner": "ml"}}})
    del body["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"]["maxSurge"]
    body["spec"]["template"]["roles"][1]["entryTemplate"]["spec"]["containers"][0]["image"] = "engine:v2"
    (record,) = manifests.apply(operator, manifest=yaml.safe_dump(body), reason="new image", source="cli")
    obj = stored(name)
    assert record.details["outcome"] == "configured"
    assert "maxSurge" not in obj["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"]  # removed fields go
    assert obj["metadata"]["annotations"]["team/owner"] == "ml"
    assert "new image" in obj["metadata"]["annotations"][naming.ANNOTATION_CHANGE_CAUSE]
    (again,) = manifests.apply(operator, manifest=yaml.safe_dump(body), reason="same", source="cli")
    assert again.details["outcome"] == "unchanged"


def test_the_editors_text_carries_its_resource_version_and_a_stale_one_is_refused_and_audited(operator):
    name = unique_name()
    manifests.apply(operator, manifest=yaml.safe_dump(manifest(name)), reason="create", source="api")
    text = manifests.manifest_text(NAMESPACE, name)
    assert "resourceVersion" in text
    cluster.get_cluster().patch_modelserving(NAMESPACE, name, {"spec": {"replicas": 5}})  # someone else
    with pytest.raises(Conflict):
        manifests.apply(operator, manifest=text.replace("engine:v1", "engine:v2"), reason="stale", source="page")
    assert AuditRecord.objects.filter(name=name, reason="stale", result="error").exists()
    assert stored(name)["spec"]["replicas"] == 5


@pytest.mark.parametrize(
    "edit, path, line",
    [
        (lambda t: t.replace("replicas: 4", "replicas: -4", 1), "spec.replicas", "replicas: -4"),
        (lambda t: t.replace("name: decode", "name: Decode!", 1), "spec.template.roles[1].name", "name: Decode!"),
        # A missing field is marked at its nearest parent.
        (lambda t: t.replace("    roles:", "    rolez:", 1), "spec.template.roles", "  template:"),
    ],
    ids=["a-bad-value", "a-bad-name-in-a-list", "a-missing-field-at-its-parent"],
)
def test_an_invalid_manifest_names_the_field_and_its_line_and_nothing_is_applied(operator, edit, path, line):
    name = unique_name()
    text = edit(yaml.safe_dump(manifest(name), sort_keys=False))
    with pytest.raises(manifests.ManifestError) as err:
        manifests.apply(operator, manifest=text, reason="bad", source="api")
    (error,) = err.value.errors
    assert error["path"] == path
    assert line in text.splitlines()[error["line"] - 1]
    assert manifests.validate(text)["errors"] == err.value.errors
    assert not cluster.get_cluster().list_modelservings(NAMESPACE) or name not in [
        m["metadata"]["name"] for m in cluster.get_cluster().list_modelservings(NAMESPACE)
    ]


def test_text_that_is_not_yaml_names_its_line(operator):
    with pytest.raises(manifests.ManifestError) as err:
        manifests.apply(operator, manifest="apiVersion: x\nspec: [unclosed\n", reason="r", source="api")
    assert err.value.errors[0]["line"] and "not valid YAML or JSON" in err.value.errors[0]["message"]


def test_a_viewer_may_not_apply_or_delete_and_the_attempt_is_audited(viewer, operator):
    from rolloutui.services.controls import ControlDenied

    name = unique_name()
    with pytest.raises(ControlDenied):
        manifests.apply(viewer, manifest=yaml.safe_dump(manifest(name)), reason="r", source="api")
    manifests.apply(operator, manifest=yaml.safe_dump(manifest(name)), reason="r", source="api")
    with pytest.raises(ControlDenied):
        manifests.delete(viewer, NAMESPACE, name, reason="r", source="api")
    assert AuditRecord.objects.filter(actor=viewer, result="error").count() == 2


def test_delete_removes_it_with_its_pods_and_its_history(operator):
    from controller.models import ProgressSample

    name = unique_name()
    manifests.apply(operator, manifest=yaml.safe_dump(manifest(name)), reason="r", source="api")
    reconcile(name)
    ProgressSample.objects.create(namespace=NAMESPACE, name=name, t=1.0, data={})
    record = manifests.delete(operator, NAMESPACE, name, reason="done", source="cli")
    assert record.action == "delete" and record.result == "ok"
    assert name not in [m["metadata"]["name"] for m in cluster.get_cluster().list_modelservings(NAMESPACE)]
    assert not cluster.get_cluster().list_pods(NAMESPACE, name)
    assert not ProgressSample.objects.filter(name=name).exists()


# --- rollout_verdict: what `rollout status` decides from ----------------------------------------------------
def obj(*, generation=2, observed=2, converged=False, conditions=(), update="new", paused=False):
    return {
        "metadata": {"generation": generation},
        "spec": {"replicas": 4, "paused": paused},
        "status": {
            "observedGeneration": observed,
            "converged": converged,
            "conditions": list(conditions),
            "updateRevision": update,
            "updatedReplicas": 1,
            "availableReplicas": 3,
        },
    }


DEADLINE = {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": "no progress"}


@pytest.mark.parametrize(
    "ms, instances, verdict",
    [
        (obj(converged=True), [], "done"),
        (obj(converged=True, observed=1), [], "progressing"),
        (obj(), [{"group": 3, "role": "decode", "ordinal": 0, "revision": "new", "state": "Failed"}], "failed"),
        (obj(), [{"group": 3, "role": "decode", "ordinal": 0, "revision": "old", "state": "Failed"}], "progressing"),
        (obj(conditions=[DEADLINE]), [], "failed"),
        (obj(paused=True), [], "progressing"),
    ],
    ids=[
        "converged-on-the-observed-generation-is-done",
        "converged-on-an-older-generation-is-not-done-yet",
        "a-failed-instance-of-the-new-revision-fails-it",
        "a-failed-instance-of-the-old-revision-does-not",
        "the-progress-deadline-fails-it",
        "paused-goes-on",
    ],
)
def test_rollout_verdict(ms, instances, verdict):
    assert state.rollout_verdict(ms, {"instances": instances})["verdict"] == verdict


# --- The CLI's reading subcommands ---------------------------------------------------------------------------
def run(*args: str) -> str:
    out = io.StringIO()
    call_command("rollout", *args, "--user", "viewer", stdout=out)
    return out.getvalue()


def test_list_get_history_diff_and_audit_print_text_json_and_yaml(viewer, operator, ms_partitioned):
    from rolloutui.services import controls

    ms = ms_partitioned
    target = f"{NAMESPACE}/{ms['name']}"
    controls.set_image(operator, NAMESPACE, ms["name"], role="decode", image="engine:v2", reason="v2", source="cli")
    reconcile(ms["name"])
    assert ms["name"] in run("list")
    rows = json.loads(run("list", "-o", "json"))
    assert any(r["name"] == ms["name"] for r in rows)
    assert f"Name:       {target}" in run("get", target)
    view = yaml.safe_load(run("get", target, "-o", "yaml"))
    assert view["name"] == ms["name"] and len(view["revisions"]) == 2
    assert "v2" in run("history", target)
    changes = json.loads(run("diff", target, "--from", "1", "--to", "2", "-o", "json"))["changes"]
    assert any(c["to"] == "engine:v2" for c in changes)
    trail = json.loads(run("audit", target, "-o", "json"))
    assert trail[0]["action"] == "set_image" and trail[0]["reason"] == "v2"
    watched = run("get", target, "--watch", "--timeout", "0.3", "--interval", "0.1")
    assert watched.count("Name:") == 1  # nothing changed meanwhile: printed once


def test_status_exits_2_on_timeout_and_0_once_converged(viewer, ms):
    target = f"{NAMESPACE}/{ms['name']}"
    current = state.rollout_status(NAMESPACE, ms["name"])
    if current["verdict"] == "done":
        assert "rolled out" in run("status", target, "--timeout", "1")
    else:
        with pytest.raises(SystemExit) as leave:
            run("status", target, "--timeout", "0.2", "--interval", "0.05")
        assert leave.value.code == 2


def test_reading_needs_the_view_permission(django_user_model, ms):
    django_user_model.objects.create_user(username="nobody", password="x")
    with pytest.raises(CommandError, match="permission denied"):
        call_command("rollout", "list", "--user", "nobody", stdout=io.StringIO())


def test_a_folder_is_loaded_file_by_file_and_a_bad_file_does_not_stop_the_others(operator, tmp_path):
    good, other = unique_name(), unique_name()
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(manifest(good)))
    (tmp_path / "b.json").write_text("{not json")
    (tmp_path / "c.yml").write_text(yaml.safe_dump(manifest(other)))
    (tmp_path / "notes.txt").write_text("ignored")
    lines = manifests.load_path(str(tmp_path), operator, reason="start-up")
    assert lines[0].endswith(f"default/{good} created") and "b.json" in lines[1] and "not valid YAML" in lines[1]
    assert lines[2].endswith(f"default/{other} created") and len(lines) == 3
    assert AuditRecord.objects.filter(name=good, source="system", reason="start-up").exists()


def test_the_history_starts_when_the_modelserving_did(operator):
    from controller.models import ProgressSample
    from controller.runtime.backend import get_clock

    name = unique_name()
    ProgressSample.objects.create(namespace=NAMESPACE, name=name, t=get_clock().now() - 3600, data={"roles": {"a": 1}})
    manifests.apply(operator, manifest=yaml.safe_dump(manifest(name)), reason="r", source="api")
    ProgressSample.objects.create(namespace=NAMESPACE, name=name, t=get_clock().now() + 1, data={"roles": {"a": 0}})
    assert [p["roles"] for p in state.progress_history(NAMESPACE, name)] == [{"a": 0}]


@pytest.mark.parametrize(
    "change,field",
    [
        (lambda spec: spec["template"].pop("gangPolicy"), "spec.template.gangPolicy"),
        (
            lambda spec: spec["template"]["gangPolicy"]["minRoleReplicas"].update(decode=1),
            "spec.template.gangPolicy.minRoleReplicas",
        ),
    ],
    ids=[
        "Kthena CRD rule: gangPolicy is required once set",
        "Kthena CRD rule: minRoleReplicas is immutable",
    ],
)
def test_an_update_kthenas_crd_refuses_is_refused_naming_the_field_and_audited(operator, change, field):
    from controller.core.controls import ControlError

    name = unique_name()
    body = manifest(name)
    body["spec"]["template"]["gangPolicy"] = {"minRoleReplicas": {"prefill": 1, "decode": 2}}
    manifests.apply(operator, manifest=yaml.safe_dump(body), reason="create", source="cli")
    change(body["spec"])
    with pytest.raises(ControlError) as err:
        manifests.apply(operator, manifest=yaml.safe_dump(body), reason="drop the gang", source="cli")
    assert err.value.field == field
    assert AuditRecord.objects.filter(action="apply", result="error", reason="drop the gang").exists()
    assert stored(name)["spec"]["template"]["gangPolicy"] == {"minRoleReplicas": {"prefill": 1, "decode": 2}}

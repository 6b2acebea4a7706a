"""The simulated kubelet's state in each pod (annotation ``sim.rolloutui.io/kubelet``) moves from one
stage per pod to one entry per container (``controller.simcluster.physics``), so pods of a cluster
created before keep going after an upgrade instead of stalling.

Previous shape: ``{"stage": "schedule" | "starting" | "loading" | "ready" | "backoff" |
"terminating" | "failed", "at", "attempt", "running": {container: image}, "restarts": {container:
n}, "startedAt"}``. Self-contained on purpose: a migration must not follow later code changes.
"""

import json

from django.db import migrations

ANNOTATION = "sim.rolloutui.io/kubelet"


def _container(spec: dict, i: int, old: dict) -> dict:
    name = spec.get("name", f"c{i}")
    stage, at = old.get("stage"), old.get("at")
    runs = (old.get("running") or {}).get(name)
    entry = {
        "name": name,
        "image": spec.get("image", ""),
        "runs": runs,
        "restarts": int((old.get("restarts") or {}).get(name, 0)),
        "state": "waiting",
        "reason": "ContainerCreating",
        "startedAt": old.get("startedAt"),
        "ready": False,
        "started": False,
        "attempts": max(int(old.get("attempt") or 1), 1),
        "step": None,
        "at": None,
    }
    if stage == "starting":
        entry.update(step="run", at=at)
    elif stage == "backoff":
        entry.update(reason="CrashLoopBackOff", step="run", at=at)
    elif stage in ("loading", "ready", "terminating", "failed") and runs is not None:
        entry.update(state="running", reason="", started=True)
        if stage == "loading":
            entry.update(step="loaded", at=at)
        elif stage == "ready":
            entry.update(ready=True)
    return entry


def convert(old: dict, pod: dict) -> dict:
    stage = old.get("stage")
    if stage == "schedule":
        return {"phase": "scheduling", "at": old.get("at")}
    containers = [_container(c, i, old) for i, c in enumerate((pod.get("spec") or {}).get("containers") or [])]
    phase = {"terminating": "terminating", "failed": "killed"}.get(stage, "running")
    return {"phase": phase, "at": old.get("at") if phase == "terminating" else None, "containers": containers}


def forwards(apps, schema_editor):
    SimObject = apps.get_model("controller", "SimObject")
    for row in SimObject.objects.filter(kind="Pod").iterator():
        annotations = (row.data.get("metadata") or {}).get("annotations") or {}
        try:
            old = json.loads(annotations.get(ANNOTATION) or "{}")
        except ValueError:
            continue
        if "stage" not in old:
            continue
        state = convert(old, row.data)
        row.data["metadata"]["annotations"][ANNOTATION] = json.dumps(state, separators=(",", ":"))
        times = [c["at"] for c in state.get("containers") or [] if c["at"] is not None]
        if state.get("at") is not None:
            times.append(state["at"])
        row.next_at = min(times) if times else None
        # A new resourceVersion, so no process keeps using a decoded copy of the old object.
        row.resource_version += 1
        row.data["metadata"]["resourceVersion"] = str(row.resource_version)
        row.save(update_fields=["data", "next_at", "resource_version"])


class Migration(migrations.Migration):
    dependencies = [("controller", "0001_initial")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]

"""The pod label contract of request paths: which revisions each pod is compatible with.

With ``spec.traffic.path`` set, every pod carries ``revision.serving.rolloutui.io/<hash>: "true"``
for every revision whose template of the pod's role equals the pod's (``naming.revision_compat_label``),
besides ``serving.rolloutui.io/revision`` (the revision it was created from). A router keeps a request
on one revision R by choosing every hop among pods labelled for R.

Pods get the labels when created (``create``); when a new revision appears, the pods of the roles it
did not change get its label, and once a revision is gone from the history its label goes: a
``patchLabels`` action (a metadata merge patch, no restart). Without a path nothing here runs, so the
ModelServings that declare none keep exactly the pods and actions they had.

Worked example: revision a1 {prefill: P1, decode: D1}; the spec changes decode only -> b2 {prefill:
P1, decode: D2}. Prefill pods (created on a1) carry a1 and get b2 added; old decode pods carry a1
only; new decode pods are created with b2 only. When a1 is garbage collected, prefill pods lose a1.
"""

from __future__ import annotations

from typing import Any

from ..naming import LABEL_REVISION_COMPAT_VALUE, compat_revisions, revision_compat_label
from ..observe import PodObs
from ..passcache import PODS_LIMIT, PassCache, bounded_put
from ..plan import PATCH_LABELS, Action
from ..revisions import role_hash
from .builder import PlanBuilder
from .context import PassContext

BECAUSE_LABELS = "revision labels"


def labels_wanted(ctx: PassContext) -> bool:
    """The contract applies: the ModelServing declares a request path."""
    return ctx.ms.traffic.has_path


def template_revisions(ctx: PassContext) -> dict[str, dict[str, list[str]]]:
    """role -> role template hash -> the revisions (sorted) whose template of that role it is: every
    readable revision of the history and the update revision."""
    by_role: dict[str, dict[str, list[str]]] = {}
    known = {r.hash: r.role_hashes() for r in ctx.history.revisions if r.readable}
    known[ctx.update_hash] = dict(ctx.update_role_hashes)
    for rev in ctx.equivalent:
        if rev in known:
            known[rev] = dict(ctx.update_role_hashes)
    for rev, hashes in sorted(known.items()):
        for role, rhash in hashes.items():
            by_role.setdefault(role, {}).setdefault(rhash, []).append(rev)
    return by_role


def compatible_revisions(out: PlanBuilder, role: str, role_hash: str, own: str) -> list[str]:
    """The revisions a pod of ``role`` with template ``role_hash``, created from ``own``, is
    compatible with: ``own`` always (even unreadable), and every revision with the same template of
    that role. Computed once per pass (``PlanBuilder.template_revisions``)."""
    if out.template_revisions is None:
        out.template_revisions = template_revisions(out.ctx)
    revs = set(out.template_revisions.get(role, {}).get(role_hash, ()))
    revs.add(own)
    return sorted(revs)


def compat_labels(revisions: list[str]) -> dict[str, str]:
    return {revision_compat_label(rev): LABEL_REVISION_COMPAT_VALUE for rev in revisions}


def create_labels(out: PlanBuilder, role: str, role_data: dict[str, Any], own: str) -> dict[str, str]:
    """The compatibility labels a new pod of ``role`` built from ``role_data`` (of revision
    ``own``) gets; none without a path."""
    if not labels_wanted(out.ctx):
        return {}
    return compat_labels(compatible_revisions(out, role, role_hash(role_data), own))


def label_patch(current: set[str], wanted: list[str]) -> dict | None:
    """The merge patch taking a pod from the revisions its labels name to ``wanted``; None when
    they agree. Example: {a1} -> [a1, b2] gives {"metadata": {"labels": {"revision...io/b2": "true"}}};
    {a1, b2} -> [b2] removes a1's label (null)."""
    add = [rev for rev in wanted if rev not in current]
    remove = sorted(current - set(wanted))
    if not add and not remove:
        return None
    labels: dict[str, str | None] = {revision_compat_label(rev): LABEL_REVISION_COMPAT_VALUE for rev in add}
    labels.update({revision_compat_label(rev): None for rev in remove})
    return {"metadata": {"labels": labels}}


def compat_of(pod: PodObs, cache: PassCache | None) -> frozenset[str]:
    """The revisions a pod's compatibility labels name, read once per parse with a cache: a pass
    with a path compares every pod's labels with the history."""
    if cache is None:
        return frozenset(compat_revisions((pod.raw.get("metadata") or {}).get("labels")))
    hit = cache.compat.get(pod.uid)
    if hit is not None and hit[0] is pod:
        return hit[1]
    value = frozenset(compat_revisions((pod.raw.get("metadata") or {}).get("labels")))
    bounded_put(cache.compat, PODS_LIMIT, pod.uid, (pod, value))
    return value


def sync_revision_labels(out: PlanBuilder) -> None:
    """One ``patchLabels`` action per instance whose pods' compatibility labels differ from what
    the history says now. Pods this pass removes or that are terminating are left alone."""
    ctx = out.ctx
    if not labels_wanted(ctx):
        return
    cache = ctx.cache
    # (role, template, own revision) -> the revisions wanted, as a set: pods alike share it.
    wanted_of: dict[tuple[str, str, str], tuple[list[str], frozenset[str]]] = {}

    def differs(role: str, pod) -> bool:
        if pod.deleting or pod.name in out.removing_pods:
            return False
        key = (role, pod.role_hash, pod.revision)
        wanted = wanted_of.get(key)
        if wanted is None:
            revs = compatible_revisions(out, role, pod.role_hash, pod.revision)
            wanted = wanted_of[key] = (revs, frozenset(revs))
        return compat_of(pod, cache) != wanted[1]

    # Most passes find every pod's labels right: that is learnt without sorting anything. Only
    # then are the instances walked in order, for the actions' order.
    if out.template_revisions is None:
        out.template_revisions = template_revisions(ctx)
    memo_key = (out.template_revisions, frozenset(out.removing_pods))
    if not any(_group_differs(group, differs, cache, memo_key) for group in ctx.observed.groups.values()):
        return
    for o in sorted(ctx.observed.groups):
        group = ctx.observed.groups[o]
        for (role, ordinal), inst in sorted(group.instances.items()):
            patches = {}
            for _, pod in sorted(inst.pods.items()):
                if pod.deleting or pod.name in out.removing_pods:
                    continue
                key = (role, pod.role_hash, pod.revision)
                wanted = wanted_of.get(key)
                if wanted is None:
                    revs = compatible_revisions(out, role, pod.role_hash, pod.revision)
                    wanted = wanted_of[key] = (revs, frozenset(revs))
                current = compat_of(pod, cache)
                if current != wanted[1]:
                    patches[pod.name] = label_patch(current, wanted[0])
            if patches:
                out.act(
                    Action(
                        PATCH_LABELS,
                        o,
                        role,
                        ordinal,
                        inst.revision,
                        BECAUSE_LABELS,
                        pod_names=list(patches),
                        patches=patches,
                    )
                )


def _group_differs(group: Any, differs: Any, cache: PassCache | None, memo_key: tuple[Any, ...]) -> bool:
    """Whether some pod of ``group`` has labels other than it should (``differs``). With a cache,
    memoised on the group under ``memo_key``: what ``differs`` reads besides the group's own pods
    (the templates of the history's revisions and the pods this pass removes), so the same pods
    under the same key answer as they did. Worked example, the seed example with paths: 160 pods
    checked per pass, 1,195 passes; the group changes in ~800 of them (a pod moved), the rest
    answer from the memo."""
    if cache is None:
        return _walk_differs(group, differs)
    memo = cache.memo_of(group)
    hit = memo.labels_differ
    if hit is not None and hit[0] == memo_key:
        return hit[1]
    value = _walk_differs(group, differs)
    memo.labels_differ = (memo_key, value)
    return value


def _walk_differs(group: Any, differs: Any) -> bool:
    return any(differs(role, pod) for (role, _), inst in group.instances.items() for pod in inst.pods.values())


__all__ = [
    "BECAUSE_LABELS",
    "compatible_revisions",
    "create_labels",
    "label_patch",
    "labels_wanted",
    "sync_revision_labels",
    "template_revisions",
]

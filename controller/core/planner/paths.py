"""Keeping a consistent request path possible while a coordinated update moves the roles.

With ``spec.traffic.path`` (say ``[prefill, decode]``) and ``revisionAffine`` routing, a request
enters at an instance of the path's first role and every later hop must run a template of the same
revision (a role whose template is equal in two revisions is compatible with both). Requests enter
at the first role, so the rule the planner keeps is about entries:

    every Ready entry instance keeps a consistent path: for some revision its template belongs to,
    every later role of the path has a Ready instance of that revision (within ``scope``).

Two named cases guard it when a coordinated replacement is about to start (``replacement_case``):

- **new entry without a path**: a replacement of the first role would bring up entries of the update
  revision while a later role has no Ready instance of it; the entry waits ("decode on revision 3
  has no Ready instance: new prefill instances would have no consistent path"). The later role's
  own replacements (or surge) create that half first, within their budgets.
- **last path of old entries**: taking this instance out of service would leave Ready entries with
  no consistent path (the last old decode while old prefill instances serve); it waits until those
  entries are replaced ("keeps its last Ready decode of revision 2: prefill instances of revision 2
  would have no consistent path").

Both only ever delay a replacement; when nothing can move any more, ``coordination`` reports the
stall with the strategy changes that would free it (surge for a single-instance role, typically).
Entries already without a path (a failure, not this pass's doing) never block anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..observe import GroupObs, InstanceObs
from ..revisions import role_hashes
from ..spec import SCOPE_ANY
from .builder import PlanBuilder
from .context import PassContext

# The named cases of ``replacement_case``.
ALLOWED = "allowed"
NEW_ENTRY_WITHOUT_PATH = "new entry without a path"
LAST_PATH_OF_ENTRIES = "last path of Ready entries"


@dataclass(frozen=True, slots=True)
class PathView:
    """What the rule reads, in one scope (a group, or the whole ModelServing for scope ``any``).

    ``templates``: revision -> role -> that role's template hash, for the revisions in play;
    ``ready``: role -> template hash -> Ready instances that take new requests; ``names``: how a
    revision is named in words ("revision 3")."""

    path: tuple[str, ...]
    templates: Mapping[str, Mapping[str, str]]
    ready: Mapping[str, Mapping[str, int]]
    names: Mapping[str, str] = field(default_factory=dict)

    def name(self, rev: str) -> str:
        return self.names.get(rev) or f"revision {rev}"

    def count(self, role: str, template: str | None) -> int:
        return (self.ready.get(role) or {}).get(template or "", 0) if template else 0

    def has_path(self, rev: str) -> bool:
        """Every later hop of the path has a Ready instance of ``rev``'s template."""
        roles = self.templates.get(rev) or {}
        return all(self.count(role, roles.get(role)) > 0 for role in self.path[1:])

    def revisions_of(self, role: str, template: str) -> list[str]:
        return sorted(rev for rev, roles in self.templates.items() if roles.get(role) == template)

    def stranded(self) -> dict[str, list[str]]:
        """Entry templates with Ready instances and no consistent path, each with the revisions it
        belongs to."""
        first = self.path[0]
        out = {}
        for template, n in sorted((self.ready.get(first) or {}).items()):
            revs = self.revisions_of(first, template)
            if n > 0 and not any(self.has_path(rev) for rev in revs):
                out[template] = revs
        return out

    def without(self, role: str, template: str) -> PathView:
        """The same view with one Ready instance of ``role`` at ``template`` gone."""
        ready = {r: dict(t) for r, t in self.ready.items()}
        ready.setdefault(role, {})[template] = ready.get(role, {}).get(template, 0) - 1
        return PathView(self.path, self.templates, ready, self.names)


@dataclass(frozen=True, slots=True)
class Case:
    case: str
    reason: str = ""


def replacement_case(view: PathView, role: str, leaving: str | None, update: str) -> Case:
    """May an instance of ``role`` be replaced by one of revision ``update`` now?

    ``leaving``: the template of the instance that leaves service, when it is Ready and takes
    requests (None: it serves none, its going changes no path). See the module docstring for the
    two cases; worked example: path [prefill, decode], prefill P1 x2 and decode D1 x1 Ready, update
    revision 3 = {prefill P3, decode D3}. Replacing a prefill -> "decode on revision 3 has no Ready
    instance: ..."; replacing the decode -> "keeps its last Ready decode of revision 2: ...".
    """
    if role not in view.path:
        return Case(ALLOWED)
    first = view.path[0]
    if role == first:
        target = view.templates.get(update) or {}
        for later in view.path[1:]:
            if view.count(later, target.get(later)) == 0:
                return Case(
                    NEW_ENTRY_WITHOUT_PATH,
                    f"{later} on {view.name(update)} has no Ready instance: new {first} instances would have no "
                    "consistent path",
                )
    if leaving is not None and role != first:
        before = view.stranded()
        after = view.without(role, leaving).stranded()
        newly = [revs for template, revs in after.items() if template not in before]
        if newly:
            revs = [rev for rev in newly[0] if view.has_path(rev)] or newly[0]
            name = view.name(revs[-1]) if revs else "their revision"
            return Case(
                LAST_PATH_OF_ENTRIES,
                f"keeps its last Ready {role} of {name}: {first} instances of {name} would have no consistent path",
            )
    return Case(ALLOWED)


class PathKeeper:
    """The pass's tally of Ready instances per scope, spent as replacements start (``take``)."""

    def __init__(self, ctx: PassContext) -> None:
        traffic = ctx.ms.traffic
        self.path = traffic.path
        self.any_scope = traffic.scope == SCOPE_ANY
        self.update = ctx.update_hash
        self.ready: dict[int | None, dict[str, dict[str, int]]] = {}
        revisions = {ctx.update_hash}
        for group in ctx.observed.groups.values():
            group_revisions, group_tally = _group_tally(ctx, group, self.path)
            revisions.update(group_revisions)
            for role, by_hash in group_tally.items():
                tally = self.ready.setdefault(self._key(group.ordinal), {}).setdefault(role, {})
                for rhash, count in by_hash.items():
                    tally[rhash] = tally.get(rhash, 0) + count
        self.templates: dict[str, dict[str, str]] = {}
        self.names: dict[str, str] = {}
        for rev in sorted(revisions):
            data = ctx.data_of(rev)
            if data is None:
                continue  # never guessed: an unreadable revision's entries simply count as without path
            self.templates[rev] = dict(ctx.update_role_hashes) if rev in ctx.equivalent else role_hashes(data)
            record = ctx.history.get(rev)
            number = ctx.update.number if rev == ctx.update_hash else (record.number if record else 0)
            if number:
                self.names[rev] = f"revision {number}"

    def _key(self, group: int) -> int | None:
        return None if self.any_scope else group

    def view(self, group: int) -> PathView:
        return PathView(self.path, self.templates, self.ready.get(self._key(group), {}), self.names)

    def case(self, ctx: PassContext, inst: InstanceObs) -> Case:
        leaving = inst.role_hash if ctx.available(inst) and not inst.being_removed else None
        return replacement_case(self.view(inst.group), inst.role, leaving, self.update)

    def take(self, ctx: PassContext, inst: InstanceObs) -> None:
        """``inst`` leaves service in this pass (its replacement starts)."""
        if inst.role not in self.path or not ctx.available(inst) or inst.being_removed:
            return
        tally = self.ready.setdefault(self._key(inst.group), {}).setdefault(inst.role, {})
        tally[inst.role_hash] = tally.get(inst.role_hash, 0) - 1


def _group_tally(
    ctx: PassContext, group: GroupObs, path: tuple[str, ...]
) -> tuple[frozenset[str], dict[str, dict[str, int]]]:
    """The revisions ``group``'s instances run, and its available instances of the path's roles
    counted by role and template (in the instances' order, as ``PathKeeper`` merges them). With a
    cache, memoised on the group under the pass's availability shape (``ctx.available`` reads only
    the group and the shape) and the path: a pass over the seed example's 160 instances whose
    group did not change takes them from the memo. The caller copies the counts (``take`` spends
    them)."""
    memo = ctx.cache.memo_of(group) if ctx.cache is not None and ctx.shape is not None else None
    hit = memo.path_tally if memo is not None else None
    if hit is not None and hit[0] is ctx.shape and hit[1] == path:
        return hit[2], hit[3]
    revisions = frozenset(inst.revision for inst in group.instances.values())
    tally: dict[str, dict[str, int]] = {}
    for inst in group.instances.values():
        if inst.role in path and ctx.available(inst):
            by_hash = tally.setdefault(inst.role, {})
            by_hash[inst.role_hash] = by_hash.get(inst.role_hash, 0) + 1
    if memo is not None:
        memo.path_tally = (ctx.shape, path, revisions, tally)
    return revisions, tally


def keeps_paths(ctx: PassContext) -> bool:
    """The rule applies: a request path with revision-affine routing, under a coordinated update."""
    traffic = ctx.ms.traffic
    return traffic.has_path and traffic.affine and ctx.ms.strategy.coordination is not None


def keeper_of(out: PlanBuilder) -> PathKeeper | None:
    """The pass's ``PathKeeper`` (made on first use), or None when the rule does not apply."""
    if not keeps_paths(out.ctx):
        return None
    if out.path_keeper is None:
        out.path_keeper = PathKeeper(out.ctx)
    return out.path_keeper

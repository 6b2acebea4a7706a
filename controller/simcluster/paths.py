"""Request paths of the simulated router, as pure rules: which pods a request passes through when
the ModelServing declares ``spec.traffic.path`` (``controller.core.spec.Traffic``), whether that
path stays on one revision, and whether its hops agree on the KV cache format.

- A hop is a routable entry pod (``routing.routable_entries``: Ready, not draining, not
  terminating) of the hop's role. ``scope: group`` keeps every hop of a request in the ServingGroup
  of its first hop; ``scope: any`` takes each hop from any group.
- A pod is **compatible** with every revision whose template of the pod's role equals the pod's
  (the pod's role-template-hash label against each stored revision's role hashes), and always with
  the revision it was created from. A role left unchanged by an update is thus compatible with both
  revisions. A path is **consistent** when some revision is compatible with all of its hops (the
  intersection of their compatible sets is not empty), **mixed** otherwise.
- ``revisionAffine``: the first hop is chosen (least busy) only among the pods from which a
  consistent path can be completed in its scope; every later hop only among the pods that keep
  the path consistent. When there is none the request is refused at once (``noRoute``).
- ``blind``: every hop is the least busy pod of its role (in the first hop's group for scope
  ``group``); mixed paths happen and are counted. A request with no pod for some role is refused
  (``noRoute``) either way.
- Whatever the routing, hops whose images declare different ``kvFormat`` cannot hand the KV cache
  over: the request fails with ``kvMismatch`` (``routing.send_path``).

Example: revision A (prefill p1, decode d1) and B (prefill p2, decode d1: decode unchanged). A
decode pod created from A is compatible with A and B, so prefill of B -> that decode pod is
consistent (revision B); prefill of A -> a decode pod created from a revision C that changed decode
is mixed.

The table of one routable set (``PathTable``) is built once per change of the pods or revisions;
routing a request then costs a pass over the candidates of each hop, like the one-hop router's.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import compress
from operator import itemgetter, not_

from controller.core import naming
from controller.core.ports import Obj
from controller.core.revisions import History
from controller.core.spec import SCOPE_GROUP, Traffic

from . import weights

NO_ROUTE = "noRoute"
KV_MISMATCH = "kvMismatch"

# Compatible revisions of a pod, by (role, role template hash).
CompatTable = dict[tuple[str, str], frozenset[str]]


@dataclass(frozen=True, slots=True)
class Revisions:
    """What the router knows of the stored revisions: ``compat`` maps (role, role template hash)
    to the revisions whose template of that role has that hash; ``number`` each revision's number."""

    compat: CompatTable
    number: dict[str, int]

    @classmethod
    def of(cls, revision_objects: Iterable[Obj]) -> Revisions:
        history = History.from_objects(list(revision_objects))
        compat: dict[tuple[str, str], set[str]] = {}
        for rev in history.revisions:
            for role, rhash in rev.role_hashes().items():
                compat.setdefault((role, rhash), set()).add(rev.hash)
        return cls({k: frozenset(v) for k, v in compat.items()}, {r.hash: r.number for r in history.revisions})


EMPTY_REVISIONS = Revisions({}, {})


def _labels(pod: Obj) -> dict:
    return (pod.get("metadata") or {}).get("labels") or {}


def role_of(pod: Obj) -> str | None:
    return _labels(pod).get(naming.LABEL_ROLE)


def group_of(pod: Obj) -> str | None:
    return _labels(pod).get(naming.LABEL_GROUP_ORDINAL)


def compatible(pod: Obj, revisions: Revisions) -> frozenset[str]:
    """The revisions ``pod`` can serve a consistent path of (see the module docstring)."""
    labels = _labels(pod)
    own = labels.get(naming.LABEL_REVISION)
    found = revisions.compat.get((labels.get(naming.LABEL_ROLE), labels.get(naming.LABEL_ROLE_TEMPLATE_HASH)))
    if found is None:
        return frozenset((own,)) if own else frozenset()
    return found | {own} if own and own not in found else found


def consistent_revisions(hop_sets: Iterable[frozenset[str]]) -> frozenset[str]:
    """The revisions a path is consistent with: the intersection of its hops' compatible sets
    (empty: the path is mixed). Example: [{A, B}, {B}] -> {B}; [{A}, {B}] -> {} (mixed)."""
    out: frozenset[str] | None = None
    for s in hop_sets:
        out = s if out is None else out & s
        if not out:
            return frozenset()
    return out or frozenset()


@dataclass(slots=True)
class Choice:
    """A routed path: its pods in order, the revisions it is consistent with (empty: mixed), and
    the revision the request is counted under."""

    pods: list[Obj]
    revisions: frozenset[str]
    revision: str | None
    pair: str | None = None  # a mixed path's "<first hop's revision>/<first hop off it>"

    @property
    def mixed(self) -> bool:
        return not self.revisions

    def first_break(self, compat_of: Callable[[Obj], frozenset[str]]) -> tuple[str | None, str | None]:
        """For a mixed path, the revision labels of the first hop and of the first hop that leaves
        no common revision (the trace's ``mixedByPair`` key)."""
        common: frozenset[str] | None = None
        for pod in self.pods:
            s = compat_of(pod)
            common = s if common is None else common & s
            if not common:
                return _labels(self.pods[0]).get(naming.LABEL_REVISION), _labels(pod).get(naming.LABEL_REVISION)
        return None, None


class PathTable:
    """One routable set seen through a path: the pods of each hop's role per scope unit, each pod's
    compatible revisions, and (per unit) the revisions every role can serve. Built once per change
    of the pods or revisions; ``choose`` routes one request."""

    def __init__(self, traffic: Traffic, routable: Iterable[Obj], revisions: Revisions) -> None:
        self.traffic = traffic
        self.revisions = revisions
        roles = traffic.path
        by_group = traffic.scope == SCOPE_GROUP
        self.compat: dict[str, frozenset[str]] = {}  # pod uid -> compatible revisions
        # unit (group ordinal, or "" for scope any) -> role -> pods. Every list of the table is in
        # name order (a stable sort: pods of one name keep the order given), so the least busy pod
        # of a list is its first pod with the fewest requests (``_first_least_busy``).
        self.units: dict[str, dict[str, list[Obj]]] = {}
        wanted = set(roles)
        in_order = sorted(routable, key=_pod_name)
        for pod in in_order:
            role = role_of(pod)
            if role not in wanted:
                continue
            unit = (group_of(pod) or "") if by_group else ""
            self.units.setdefault(unit, {r: [] for r in roles})[role].append(pod)
            self.compat[pod["metadata"]["uid"]] = compatible(pod, revisions)
        # Per unit: the revisions with a compatible pod for every role (empty when a role has none).
        self.feasible: dict[str, frozenset[str]] = {}
        self.complete: set[str] = set()  # units with at least one pod per role
        for unit, pods_by_role in self.units.items():
            if all(pods_by_role[r] for r in roles):
                self.complete.add(unit)
            self.feasible[unit] = consistent_revisions(
                frozenset().union(*(self.compat[p["metadata"]["uid"]] for p in pods_by_role[r])) for r in roles
            )
        self.by_group = by_group
        self._set_first_candidates(in_order, roles[0])
        # (unit, role, revision) -> the role's pods in the unit compatible with that revision: a
        # path on one revision (the usual case) picks its later hops from these without filtering.
        self.by_revision: dict[tuple[str, str, str], list[Obj]] = {}
        for unit, pods_by_role in self.units.items():
            for role in roles[1:]:
                for pod in pods_by_role[role]:
                    for rev in self.compat[pod["metadata"]["uid"]]:
                        self.by_revision.setdefault((unit, role, rev), []).append(pod)

    def _set_first_candidates(self, in_order: list[Obj], first: str) -> None:
        """The first hop's pods of the complete units (``first_blind``) and those of them a
        consistent path can start on (``first_affine``), in name order."""
        self.first_affine: list[Obj] = []
        self.first_blind: list[Obj] = []
        self.starts: dict[str, tuple[str, frozenset[str]]] = {}  # uid -> (unit, ``reach``) of those
        for pod in in_order:
            if role_of(pod) != first:
                continue
            unit = (group_of(pod) or "") if self.by_group else ""
            if unit not in self.complete:
                continue
            self.first_blind.append(pod)
            uid = pod["metadata"]["uid"]
            reach = self.compat[uid] & self.feasible[unit]
            self.starts[uid] = (unit, reach)
            if reach:
                self.first_affine.append(pod)

    def compat_of(self, pod: Obj) -> frozenset[str]:
        return self.compat.get(pod["metadata"]["uid"]) or compatible(pod, self.revisions)

    def first_candidates(self) -> list[Obj]:
        """The pods a request may start on (before a canary weight narrows them)."""
        return self.first_affine if self.traffic.affine else self.first_blind

    def reach(self, pod: Obj) -> frozenset[str]:
        """The revisions a consistent path starting on ``pod`` can be completed on in its scope."""
        return self._start_of(pod)[1]

    def _start_of(self, pod: Obj) -> tuple[str, frozenset[str]]:
        """``(unit, reach)`` of a path starting on ``pod``: kept for the first hop's candidates."""
        start = self.starts.get(pod["metadata"]["uid"])
        if start is not None:
            return start
        unit = (group_of(pod) or "") if self.by_group else ""
        return unit, self.compat_of(pod) & self.feasible.get(unit, frozenset())

    def choose(
        self,
        in_flight: Callable[[Obj], int],
        candidates: list[Obj] | None = None,
        restrict: Callable[[frozenset[str]], frozenset[str]] | None = None,
    ) -> Choice | None:
        """Route one request: the least busy first hop among ``candidates`` (default
        ``first_candidates``; a canary weight passes its side's: a subsequence of them, so in name
        order too), then each later hop as the routing says. ``restrict`` narrows the revisions an
        affine path may stay on after its first hop (the weight's side). None: refused
        (``noRoute``)."""
        first = _first_least_busy(self.first_candidates() if candidates is None else candidates, in_flight)
        if first is None:
            return None
        unit, common = self._start_of(first)
        pods_by_role = self.units[unit]
        pods = [first]
        if self.traffic.affine:
            if restrict is not None:
                common = restrict(common) or common
            for role in self.traffic.path[1:]:
                if len(common) == 1:
                    candidates = self.by_revision.get((unit, role, next(iter(common))), [])
                else:
                    candidates = [p for p in pods_by_role[role] if self.compat_of(p) & common]
                hop = _first_least_busy(candidates, in_flight)
                if hop is None:  # cannot happen: every revision in common has a pod per role
                    return None
                common = common & self.compat_of(hop)
                pods.append(hop)
        else:
            for role in self.traffic.path[1:]:
                hop = _first_least_busy(pods_by_role[role], in_flight)
                if hop is None:
                    return None
                pods.append(hop)
            common = consistent_revisions(self.compat_of(p) for p in pods)
        return Choice(pods, common, self.counted_revision(first, common))

    def counted_revision(self, first: Obj, common: frozenset[str]) -> str | None:
        """The revision a path's request is counted under: the first hop's own when the path is
        consistent with it (or mixed), else the newest revision the path is consistent with (a
        first hop of a role the update left unchanged, on a path of the new revision)."""
        own = _labels(first).get(naming.LABEL_REVISION)
        if not common or own in common:
            return own
        return max(common, key=lambda h: (self.revisions.number.get(h, 0), h))


def route(
    table: PathTable,
    in_flight: Callable[[Obj], int],
    weight: weights.Weight | None = None,
    weight_rng: random.Random | None = None,
) -> Choice | None:
    """Route one request through ``table`` under the canary ``weight`` (None: by load alone), the
    same way in both routers. A mixed path's ``pair`` names where it broke (``first_break``)."""
    candidates, restrict = table.first_candidates(), None
    if weight is not None:
        candidates, restrict = weighted_first(table, candidates, weight, weight_rng)
    choice = table.choose(in_flight, candidates, restrict)
    if choice is not None and choice.mixed:
        a, b = choice.first_break(table.compat_of)
        choice.pair = f"{a}/{b}"
    return choice


def weighted_first(table: PathTable, candidates: list[Obj], weight: weights.Weight, rng: random.Random | None):
    """The canary weight on a path's first hop (``weights.first_hop``, one draw from ``rng``).
    Returns the first-hop candidates and how to narrow the revisions the path then stays on.

    With affine routing the side is the revision the path will stay on, not the first pod's own:
    a first hop of a role the update left unchanged can start a path of either side, so each
    candidate is offered once per side it can reach, and the path is kept on the side drawn. Blind
    routing has no side to keep: the first pod's own revision decides, as without a path."""
    rng = rng if rng is not None else random.Random(0)
    if not table.traffic.affine:
        return weights.first_hop(candidates, weight, rng, revision_label), None
    canary = weight.revision
    offers = []
    for pod in candidates:
        reach = table.reach(pod)
        if canary in reach:
            offers.append((pod, True))
        if reach - {canary}:
            offers.append((pod, False))
    drawn = weights.first_hop(offers, weight, rng, lambda offer: canary if offer[1] else None)
    if not drawn:
        return [], None
    chosen = [pod for pod, _ in drawn]  # one side's offers: each pod once
    if drawn[0][1]:
        return chosen, lambda common: common & {canary}
    return chosen, lambda common: common - {canary}


def revision_label(pod: Obj) -> str | None:
    return _labels(pod).get(naming.LABEL_REVISION)


_METADATA = itemgetter("metadata")
_NAME = itemgetter("name")


def _pod_name(pod: Obj) -> str:
    return pod["metadata"]["name"]


def _first_least_busy(pods: list[Obj], in_flight: Callable[[Obj], int]) -> Obj | None:
    """``_least_busy`` of pods in name order: the first of those with the fewest requests in flight.
    Example: counts [1, 0, 2, 0] -> the second pod (the first of the two idle ones).

    Every hop of every request comes here (the seed example with paths: 16,000 requests x 3 hops
    x up to ~100 pods). A count source with ``each`` (counts that are lengths, never below 0) is
    first read lazily up to its first idle pod: while most pods are idle (a first hop holds its
    pod until the first token only) that is near the start, and no pod after it is read."""
    each = getattr(in_flight, "each", None)
    if each is None:
        counts = list(map(in_flight, pods))
    else:
        idle = next(compress(pods, map(not_, each(pods))), None)
        if idle is not None:
            return idle
        counts = list(each(pods))
    return pods[counts.index(min(counts))] if counts else None


def _least_busy(pods: list[Obj], in_flight: Callable[[Obj], int]) -> Obj | None:
    """The pod with the fewest requests in flight; of several, the first by name (of pods of one
    name, the first in ``pods``). The reference rule ``_first_least_busy`` applies to ordered pods."""
    if not pods:
        return None
    each = getattr(in_flight, "each", None)  # a count source that reads many pods at once
    counts = list(each(pods)) if each is not None else list(map(in_flight, pods))
    low = min(counts)
    if counts.count(low) == 1:
        return pods[counts.index(low)]
    # Ties are the rule while most pods are idle: the first name among them, read without a
    # Python call per pod (every hop of every request comes here).
    tied = list(compress(pods, map(low.__eq__, counts)))
    names = list(map(_NAME, map(_METADATA, tied)))
    return tied[names.index(min(names))]


def kv_mismatch(formats: Iterable[str | None]) -> bool:
    """Hops whose images declare different KV formats (an undeclared one agrees with any)."""
    declared = {f for f in formats if f is not None}
    return len(declared) > 1

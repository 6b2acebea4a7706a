"""The gate funnel (``gates.funnel``) walks the instances once; it must equal the plain definition:
per gate the instances whose highest gate it is, the one of them that has waited longest (the
earliest (since, key)), and the median and longest gap from Loaded to Routed of every routed
instance."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.core.gates import GATES, ROUTED, InstanceGates, funnel, ready_to_routed


def reference_funnel(gates):
    """The funnel as first written: a list per gate, a min per gate, a sort of every gap."""
    out = []
    at_gate = {gate: [] for gate in GATES}
    for key, g in gates:
        bucket = at_gate.get(g.highest)
        if bucket is not None:
            bucket.append((key, g))
    for gate in GATES:
        at = at_gate[gate]
        slowest = None
        waiting = [(g.waiting_since, key) for key, g in at if g.waiting_since is not None and g.waiting]
        if waiting:
            since, (group, role, ordinal) = min(waiting)
            slowest = {"group": group, "role": role, "ordinal": ordinal, "since": since}
        out.append({"gate": gate, "count": len(at), "slowest": slowest})
    gaps = sorted(ready_to_routed(g) for _, g in gates if ROUTED in g.reached)
    if gaps:
        out[GATES.index(ROUTED)]["fromLoaded"] = {
            "instances": len(gaps),
            "medianSeconds": round(gaps[(len(gaps) - 1) // 2], 3),
            "maxSeconds": round(gaps[-1], 3),
        }
    return out


TIMES = st.sampled_from([0.0, 1.0, 2.5, 10.0, 10.0, 40.0])


@st.composite
def instance_gates(draw):
    """Gates reached in order (with times that may go down: a gap can be negative), or some gate
    missing in the middle (Routed without Loaded), a highest gate, a waiting gate and since."""
    reached = {gate: draw(TIMES) for gate in GATES[: draw(st.integers(0, len(GATES)))]}
    if reached and draw(st.booleans()):
        reached.pop(draw(st.sampled_from(sorted(reached))))
    highest = draw(st.one_of(st.none(), st.sampled_from(GATES)))
    waiting = draw(st.one_of(st.none(), st.sampled_from(GATES)))
    since = draw(st.one_of(st.none(), TIMES))
    return InstanceGates(reached, None, None, waiting, since, highest, False)


KEYS = st.tuples(st.integers(0, 3), st.sampled_from(["prefill", "decode"]), st.integers(0, 3))


@settings(max_examples=300, deadline=None, database=None)
@given(gates=st.lists(st.tuples(KEYS, instance_gates()), max_size=12))
def test_the_one_walk_funnel_equals_the_plain_definition(gates):
    assert funnel(gates) == reference_funnel(gates)

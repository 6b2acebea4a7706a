"""``role_rolling._admission_order``: a role's outdated instances, unavailable ones first, each part
from the highest ordinal down; the order the planner admits replacements in."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from controller.core.planner.role_rolling import _admission_order
from controller.core.planner.role_state import RoleState


def test_unavailable_instances_come_first_each_part_from_the_highest_ordinal():
    state = RoleState("decode", 4, 0, 1, 0)
    state.outdated_pending = [0, 1, 2, 3]
    state.available = {0, 2}
    assert _admission_order(state) == [3, 1, 2, 0]


@given(pending=st.sets(st.integers(0, 200)), available=st.sets(st.integers(0, 200)))
def test_the_order_is_the_sort_by_availability_then_descending_ordinal(pending, available):
    state = RoleState("decode", 201, 0, 1, 0)
    state.outdated_pending = list(pending)
    state.available = set(available)
    assert _admission_order(state) == sorted(pending, key=lambda k: (k in available, -k))

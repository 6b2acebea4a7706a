"""The preview's timeline reads the blocked reasons straight from status' grouped ``waiting``
(``preview.waiting_reasons``, issue 27): the same reasons in the same order as ``expand_waiting``."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.core.view import expand_waiting
from controller.simcluster.preview import waiting_reasons

_entries = st.lists(
    st.fixed_dictionaries(
        {"reason": st.sampled_from(["budget", "paused", "partition", None]), "kind": st.just("budget")},
        optional={
            "role": st.sampled_from([None, "", "prefill", "decode"]),
            "groups": st.lists(st.one_of(st.none(), st.integers(0, 6)), max_size=5),
        },
    ),
    max_size=6,
)


# Slow draws are the shared host's load (a draw stalled 4 s at load 15), not the strategy's size.
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_entries)
def test_the_reasons_are_those_of_the_expanded_entries_in_their_order(waiting):
    assert waiting_reasons(waiting) == [b.get("reason", "") for b in expand_waiting(waiting)]


def test_the_docstring_example_reads_group_one_twice_then_three_then_no_group():
    waiting = [
        {"reason": "r1", "role": None, "groups": [3, 1]},
        {"reason": "r2", "role": "a", "groups": [None]},
        {"reason": "r3", "role": None, "groups": [1]},
    ]
    assert waiting_reasons(waiting) == ["r1", "r3", "r1", "r2"]

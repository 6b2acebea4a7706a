"""The lenient reading of a manifest that list rows and pause/resume rely on: it never raises, so
an invalid ModelServing stored in the cluster still has a row and can still be paused."""

import pytest

from controller.core.controls import ControlError, pause, resume
from controller.core.spec import GROUP_ROLLING, ROLE_ROLLING, Headline, headline, runtime_fields

CASES = [
    (
        "a valid manifest reads its fields",
        {"spec": {"replicas": 3, "paused": True, "rolloutStrategy": {"type": ROLE_ROLLING}}},
        Headline(3, True, ROLE_ROLLING, False),
    ),
    ("a missing spec reads as one unpaused replica", {}, Headline(1, False, GROUP_ROLLING, False)),
    ("a spec that is not an object reads as defaults", {"spec": "x"}, Headline(1, False, GROUP_ROLLING, False)),
    ("replicas that are not a count read as 0", {"spec": {"replicas": "x"}}, Headline(0, False, GROUP_ROLLING, False)),
    ("a negative replica count reads as 0", {"spec": {"replicas": -2}}, Headline(0, False, GROUP_ROLLING, False)),
    ("only a literal true pauses", {"spec": {"paused": "yes"}}, Headline(1, False, GROUP_ROLLING, False)),
    (
        "canary steps are noticed",
        {"spec": {"rolloutStrategy": {"canary": {"steps": [{"pause": {}}]}}}},
        Headline(1, False, GROUP_ROLLING, True),
    ),
    (
        "a strategy that is not an object reads as the default",
        {"spec": {"rolloutStrategy": [1]}},
        Headline(1, False, GROUP_ROLLING, False),
    ),
]


@pytest.mark.parametrize("manifest,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_headline(manifest, expected):
    assert headline(manifest) == expected


def test_an_invalid_manifest_can_still_be_paused_and_resumed():
    broken = {"spec": {"replicas": "many"}}
    assert pause(broken) == {"spec": {"paused": True}}
    with pytest.raises(ControlError, match="not paused"):
        resume(broken)


def test_runtime_fields_list_each_roles_scaling_and_budgets_only():
    manifest = {
        "spec": {
            "replicas": 2,
            "rolloutStrategy": {"type": ROLE_ROLLING},
            "template": {"roles": [{"name": "prefill", "replicas": 2, "partition": 1, "entryTemplate": {}}, "junk"]},
        }
    }
    assert runtime_fields(manifest) == {
        "replicas": 2,
        "paused": False,
        "rolloutStrategy": {"type": ROLE_ROLLING},
        "roles": {"prefill": {"replicas": 2, "partition": 1}},
    }

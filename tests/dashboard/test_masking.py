"""The masking of secret-looking values for users who may only view (``services.masking``), as one
table: what a container's env and command line hold, and what a viewer sees of them."""

from __future__ import annotations

import pytest

from rolloutui.services.masking import MASK, mask_changes, mask_tree

M = MASK


def container(**fields):
    return {"spec": {"containers": [{"name": "engine", **fields}]}}


CASES = [
    # (what the container holds, what a viewer sees)
    pytest.param(
        {"env": [{"name": "HF_TOKEN", "value": "hf_abc"}]},
        {"env": [{"name": "HF_TOKEN", "value": M}]},
        id="a variable named like a token is masked",
    ),
    pytest.param(
        {"env": [{"name": "LOG_LEVEL", "value": "info"}]},
        {"env": [{"name": "LOG_LEVEL", "value": "info"}]},
        id="a variable with an ordinary name and value stays",
    ),
    pytest.param(
        {"env": [{"name": "CACHE", "value": "redis://:hunter2@redis:6379/0"}]},
        {"env": [{"name": "CACHE", "value": f"redis://:{M}@redis:6379/0"}]},
        id="a url password is masked whatever the variable is called",
    ),
    pytest.param(
        {"env": [{"name": "UPSTREAM", "value": "see postgres://app:pw@db/x and http://u:p@h"}]},
        {"env": [{"name": "UPSTREAM", "value": f"see postgres://app:{M}@db/x and http://u:{M}@h"}]},
        id="every url password in a value is masked and the user names stay",
    ),
    pytest.param(
        {"env": [{"name": "DATABASE_URL", "value": "postgres://app:pw@db:5432/x"}]},
        {"env": [{"name": "DATABASE_URL", "value": f"postgres://app:{M}@db:5432/x"}]},
        id="a url variable keeps its user name and loses its password",
    ),
    pytest.param(
        {"env": [{"name": "REPO_URI", "value": "https://ghp_abc@github.com/x.git"}]},
        {"env": [{"name": "REPO_URI", "value": f"https://{M}@github.com/x.git"}]},
        id="a url variable whose user part has no password loses the user part",
    ),
    pytest.param(
        {"env": [{"name": "SENTRY_DSN", "value": "https://pubkey@o1.ingest.sentry.io/2"}]},
        {"env": [{"name": "SENTRY_DSN", "value": f"https://{M}@o1.ingest.sentry.io/2"}]},
        id="a dsn variable with a key as its user part loses it",
    ),
    pytest.param(
        {"env": [{"name": "HOMEPAGE", "value": "https://ghp_abc@github.com/x"}]},
        {"env": [{"name": "HOMEPAGE", "value": "https://ghp_abc@github.com/x"}]},
        id="a user part without a password stays in a variable not named like a url",
    ),
    pytest.param(
        {"env": [{"name": "MODEL_URL", "value": "https://huggingface.co/org/model"}]},
        {"env": [{"name": "MODEL_URL", "value": "https://huggingface.co/org/model"}]},
        id="a url without a user part stays",
    ),
    pytest.param(
        {"env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}], "envFrom": [{"a": 1}]},
        {"env": [{"name": "X", "valueFrom": M}], "envFrom": [M]},
        id="value from and env from are masked whole",
    ),
    pytest.param(
        {"args": ["--api-key=sk-1", "--token=t", "--password=p", "--hf-token=h", "--port=8000"]},
        {"args": [f"--api-key={M}", f"--token={M}", f"--password={M}", f"--hf-token={M}", "--port=8000"]},
        id="a secret flag with its value after an equals sign is masked",
    ),
    pytest.param(
        {"args": ["--api-key", "sk-1", "--model", "m"], "command": ["vllm", "serve", "--password", "p"]},
        {"args": ["--api-key", M, "--model", "m"], "command": ["vllm", "serve", "--password", M]},
        id="the item after a bare secret flag is masked in args and command",
    ),
    pytest.param(
        {"args": ["--api-key", "--port", "8000"]},
        {"args": ["--api-key", "--port", "8000"]},
        id="a bare secret flag followed by another flag masks nothing",
    ),
    pytest.param(
        {"args": ["--max-tokens", "4096", "--max-num-batched-tokens=8192", "--tokenizer", "t", "--ssl-keyfile", "f"]},
        {"args": ["--max-tokens", "4096", "--max-num-batched-tokens=8192", "--tokenizer", "t", "--ssl-keyfile", "f"]},
        id="flags that only mention tokens or keys stay",
    ),
    pytest.param(
        {"args": ["--upstream=http://user:pw@h:1/", "sh -c 'curl https://a:b@c'"]},
        {"args": [f"--upstream=http://user:{M}@h:1/", f"sh -c 'curl https://a:{M}@c'"]},
        id="url passwords in command line items are masked",
    ),
]


@pytest.mark.parametrize("holds, seen", CASES)
def test_what_a_viewer_sees_of_a_container(holds, seen):
    tree = container(**holds)
    assert mask_tree(tree) == container(**seen)
    assert tree == container(**holds)  # the input is not changed


def test_a_url_password_anywhere_else_in_the_tree_is_masked_and_other_strings_stay():
    spec = {"predictor": {"model": {"storageUri": "https://u:pw@models.example/m", "runtime": "vllm"}}}
    assert mask_tree(spec) == {
        "predictor": {"model": {"storageUri": f"https://u:{M}@models.example/m", "runtime": "vllm"}}
    }


def test_masking_a_tree_nested_very_deep_does_not_recurse():
    deep: dict = {}
    node = deep
    for _ in range(10_000):
        node["a"] = {}
        node = node["a"]
    node["env"] = [{"name": "HF_TOKEN", "value": "hf_abc"}]
    masked = mask_tree(deep)
    for _ in range(10_000):
        masked = masked["a"]
    assert masked["env"] == [{"name": "HF_TOKEN", "value": M}]


@pytest.mark.parametrize(
    "change, seen",
    [
        pytest.param(
            {"path": "spec.containers[engine].env[DB_URL].value", "from": "pg://a:x@h", "to": "pg://a:y@h"},
            {"from": f"pg://a:{M}@h", "to": f"pg://a:{M}@h"},
            id="a changed url variable is diffed with its password masked on both sides",
        ),
        pytest.param(
            {"path": "spec.containers[engine].args[1]", "from": "--token=a", "to": "--token=b"},
            {"from": f"--token={M}", "to": f"--token={M}"},
            id="a changed secret flag is diffed masked",
        ),
        pytest.param(
            {"path": "spec.containers[engine].args", "from": ["--api-key", "a"], "to": ["--api-key", "b", "-v"]},
            {"from": ["--api-key", M], "to": ["--api-key", M, "-v"]},
            id="a replaced command line is diffed masked",
        ),
        pytest.param(
            {"path": "spec.containers[engine].image", "from": "e:1", "to": "e:2"},
            {"from": "e:1", "to": "e:2"},
            id="an image change stays",
        ),
    ],
)
def test_what_a_viewer_sees_of_a_revision_diff(change, seen):
    (masked,) = mask_changes([{**change, "change": "changed"}])
    assert {"from": masked["from"], "to": masked["to"]} == seen

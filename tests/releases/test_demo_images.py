"""`manage.py demo_images`: the digest-pinned twins of the demo's images, which the releases
walkthrough (docs/releases.md) registers as a model version's runtime image."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from rolloutui.releases.contract import DIGEST_IMAGE
from rolloutui.services import cluster

pytestmark = pytest.mark.django_db

DEMO_TAGS = [
    "vllm/vllm-openai:v0.9.1",
    "vllm/vllm-openai:v0.9.2",
    "vllm/vllm-openai:v0.9.2-crash",
    "vllm/vllm-openai:v0.9.2-slow",
    "vllm/vllm-openai:v0.9.2-flaky",
    "vllm/vllm-openai:v0.9.2-slow-ttft",
    "vllm/vllm-openai:v0.10.0",
]


def demo_images(*args: str) -> str:
    out = io.StringIO()
    call_command("demo_images", *args, stdout=out)
    return out.getvalue()


@pytest.mark.parametrize("tag", DEMO_TAGS)
def test_the_printed_reference_is_pinned_by_digest_and_runs_on_the_embedded_cluster_like_its_tag(tag):
    call_command("load_demo", stdout=io.StringIO())
    printed = demo_images(tag).strip()

    # A model version's runtimeImage must be pinned by digest (a tag can be moved to other bytes).
    assert DIGEST_IMAGE.fullmatch(printed), printed
    assert printed.split("@", 1)[0] == tag.rsplit(":", 1)[0]
    config = cluster.get_cluster().config
    assert config.image(printed) == config.image(tag)


def test_without_an_image_every_demo_image_is_listed_with_its_twin_and_what_it_does():
    listing = demo_images()
    rows = {line.split()[0]: line for line in listing.splitlines()[1:]}
    assert sorted(rows) == sorted(DEMO_TAGS)
    for tag in DEMO_TAGS:
        assert demo_images(tag).strip() in rows[tag]
    assert "never Ready" in rows["vllm/vllm-openai:v0.9.2-crash"]
    assert "healthy" in rows["vllm/vllm-openai:v0.9.1"]


def test_an_image_the_demo_does_not_know_is_refused_naming_the_argument_and_the_known_ones():
    with pytest.raises(CommandError) as refused:
        demo_images("vllm/vllm-openai:v9")
    message = str(refused.value)
    assert message.startswith("image: 'vllm/vllm-openai:v9' is not a demo image")
    assert "vllm/vllm-openai:v0.9.2-crash" in message


def test_the_listing_says_which_images_write_another_kv_cache_format():
    rows = {line.split()[0]: line for line in demo_images().splitlines() if line.startswith("vllm/")}
    assert "KV cache format v1" in rows["vllm/vllm-openai:v0.9.2"]
    assert "KV cache format v2" in rows["vllm/vllm-openai:v0.10.0"]

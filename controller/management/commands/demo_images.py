"""`manage.py demo_images [IMAGE]`: the demo's images and their digest-pinned twins.

A model version's runtime image must be pinned by digest, and the embedded cluster knows an image
by its exact reference, so each demo image has a twin ``repository@sha256:...`` that behaves the
same (``controller.simcluster.database.demo.DIGESTS``). A user trying the releases walkthrough needs
that reference; this prints it (a command rather than a Python one-liner, which would import the
demo's models without Django's settings).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from controller.simcluster.database.demo import CONFIG, DIGESTS


def behaviour(profile: dict[str, Any]) -> str:
    """What the embedded cluster does with an image, in words."""
    if profile.get("crash"):
        return "never Ready (crashes after each load)"
    said = []
    if "load" in profile:
        low, high = profile["load"]
        said.append(f"loads in {low}-{high} s")
    if "errorRate" in profile:
        said.append(f"answers {profile['errorRate']:.0%} of requests with an error")
    if "ttftMs" in profile and profile["ttftMs"][0] >= 1000:
        low, high = profile["ttftMs"]
        said.append(f"first token after {low / 1000:g}-{high / 1000:g} s")
    kv = f"KV cache format {profile['kvFormat']}" if "kvFormat" in profile else ""
    return ", ".join(said or ["healthy"]) + (f" ({kv})" if kv else "")


class Command(BaseCommand):
    help = (
        "The embedded cluster's demo images with their digest-pinned twins (what a model version's "
        "runtimeImage needs). With IMAGE, print only that image's pinned reference."
    )
    # Reads constants only: no database, so no checks to run first.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        parser.add_argument("image", nargs="?", help="A demo image by tag, e.g. vllm/vllm-openai:v0.9.2-crash.")

    def handle(self, *args, image: str | None = None, **options):
        if image is not None:
            if image not in DIGESTS:
                raise CommandError(f"image: {image!r} is not a demo image (demo images: {', '.join(DIGESTS)})")
            self.stdout.write(DIGESTS[image])
            return
        tags, pins = max(len(tag) for tag in DIGESTS), max(len(pinned) for pinned in DIGESTS.values())
        self.stdout.write(f"{'IMAGE':<{tags}}  {'PINNED BY DIGEST':<{pins}}  BEHAVIOUR")
        for tag, pinned in DIGESTS.items():
            self.stdout.write(f"{tag:<{tags}}  {pinned:<{pins}}  {behaviour(CONFIG['images'].get(tag, {}))}")

"""The ModelServing page shows each revision's images by tag with the digest they first ran from,
flags a revision whose tag moved to other bytes, and shows the digest an instance runs; every one
of those values is text (served offline, ``offline.OfflineSite``)."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from .offline import OfflineSite
from .test_pages_offline import current_state, forged, no_script_ran, shot


def test_the_revision_panel_shows_tag_and_digest_and_flags_a_moved_tag(ms, operator_client, page: Page, screenshot_dir):
    state = current_state(ms)
    digest = "sha256:" + "a" * 64
    moved = "sha256:" + "b" * 64
    revisions = [dict(r) for r in state["revisions"]]
    revisions[-1].update(
        images=[
            {"image": "vllm/vllm-openai:v0.9.1", "digest": digest, "moved": moved},
            {"image": forged("image"), "digest": forged("digest"), "moved": None},
        ],
        digestMoved=True,
    )
    instances = [dict(i) for i in state["instances"]]
    instances[0]["digest"] = forged("instance.digest")
    state = {**state, "revisions": revisions, "instances": instances}
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    site = OfflineSite(page, operator_client, full_state=lambda: state)
    page.set_viewport_size({"width": 1440, "height": 1000})
    page.goto(site.url(f"/modelservings/{ms['namespace']}/{ms['name']}/"))
    expect(page.get_by_test_id("conn")).to_have_text("live")

    images = page.get_by_test_id("rev-images")
    expect(images).to_contain_text("vllm/vllm-openai:v0.9.1")
    expect(images).to_contain_text("sha256:aaaaaaaaaaaa…")
    expect(images.get_by_test_id("rev-digest").first).to_have_attribute("title", digest)
    flag = page.get_by_test_id("rev-digest-moved")
    expect(flag).to_have_count(1)
    expect(flag).to_have_text("tag moved")
    expect(flag).to_have_attribute(
        "title",
        f"vllm/vllm-openai:v0.9.1 now resolves to {moved} (first ran {digest}): "
        "pods of this revision run different bytes",
    )
    expect(images).to_contain_text(forged("image"))

    # The instance's digest is in its detail (click the first cell of the topology).
    box = page.get_by_test_id("topology").bounding_box()
    layout = page.evaluate(
        """() => {
            const L = window.__rollout.topo.layout;
            return { labelW: L.labelW, cell: L.cell, gap: L.gap, slots: L.slots.map((s) => s.role) };
        }"""
    )
    row = layout["slots"].index(instances[0]["role"])
    x = box["x"] + layout["labelW"] + layout["cell"] / 2
    y = box["y"] + 14 + row * (layout["cell"] + layout["gap"]) + layout["cell"] / 2
    page.mouse.click(x, y)
    expect(page.get_by_test_id("cell-digest")).to_have_attribute(
        "title", f"Image digest the entry pod runs (status imageID): {forged('instance.digest')}"
    )
    shot(page, screenshot_dir / "detail-digests.png")
    no_script_ran(page)
    assert not errors, errors

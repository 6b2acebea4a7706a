"""Operator tooling on the real product (`runall`: Daphne, Celery worker and beat, Redis):

- from the terminal: `rollout apply -f` a Kthena example, `rollout status` waits for it (exit 0),
  an edited manifest rolls out (exit 0 again), a crashing image makes `status` exit 1, `delete`;
- from the browser: the same example applied in the YAML editor, seen coming up, its image edited
  in the editor, the rollout seen, and deleted from its page.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from playwright.sync_api import Page, expect

from tests.paths import KTHENA_EXAMPLES

from .conftest import ROOT
from .test_browser import shot, sign_in, wait_state

pytestmark = [pytest.mark.integration, pytest.mark.slow]

EXAMPLE = KTHENA_EXAMPLES / "model-serving__rollingupdate.yaml"  # 4 groups of nginx, maxUnavailable 2
CRASH = "nginx:crash"

CONFIGURE_CRASH = f"""
from controller.models import SimClock
from controller.runtime.backend import get_clock
from controller.simcluster.database.demo import CONFIG
get_clock().now()  # the clock row exists from now on
SimClock.objects.filter(pk=1).update(config={{**CONFIG, "images": {{{CRASH!r}: {{"crash": True}}}}}})
print("configured")
"""


def rollout(stack, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "rollout", *args, "--user", "operator"],
        cwd=ROOT,
        env=stack.env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def example_named(name: str, image: str = "nginx") -> str:
    text = EXAMPLE.read_text().replace("name: sample", f"name: {name}", 1)
    return text.replace("image: nginx", f"image: {image}")


def test_the_cli_applies_a_kthena_example_waits_for_it_edits_it_breaks_it_and_deletes_it(
    live_stack, own_room, tmp_path
):
    own_room(0, ("ModelServing", "cli-sample"))  # no GPUs; deleted at the end even if a step fails
    assert "configured" in live_stack.manage("shell", "-c", CONFIGURE_CRASH)
    manifest = tmp_path / "cli-sample.yaml"
    manifest.write_text(example_named("cli-sample"))

    applied = rollout(live_stack, "apply", "-f", str(manifest), "--reason", "try the example")
    assert applied.returncode == 0, applied.stderr
    assert "apply default/cli-sample: created" in applied.stdout

    done = rollout(live_stack, "status", "default/cli-sample", "--timeout", "180")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "rolled out revision" in done.stdout

    # An edited manifest (a new image): the same command applies it as an update, and it rolls out.
    manifest.write_text(example_named("cli-sample", image="nginx:1.27"))
    edited = rollout(live_stack, "apply", "-f", str(manifest), "--reason", "new nginx", "-o", "json")
    assert edited.returncode == 0, edited.stderr
    (record,) = json.loads(edited.stdout[edited.stdout.index("[") :])
    assert record["details"]["outcome"] == "configured" and record["source"] == "cli"
    done = rollout(live_stack, "status", "default/cli-sample", "--timeout", "180", "-o", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    got = rollout(live_stack, "get", "default/cli-sample", "-o", "json")
    view = json.loads(got.stdout[got.stdout.index("{") :])
    assert view["converged"] and len(view["revisions"]) == 2

    # A crashing image: status exits 1 as soon as an instance of the new revision fails.
    broken = rollout(
        live_stack, "set-image", "default/cli-sample", "--role", "prefill", "--image", CRASH, "--reason", "bad build"
    )
    assert broken.returncode == 0, broken.stderr
    started = time.monotonic()
    failed = rollout(live_stack, "status", "default/cli-sample", "--timeout", "180")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "failed" in failed.stdout and time.monotonic() - started < 170

    # Short of a timeout the other outcome is 2: a rollout that cannot finish within 1 s.
    assert rollout(live_stack, "status", "default/cli-sample", "--timeout", "1").returncode in (1, 2)

    history = rollout(live_stack, "history", "default/cli-sample")
    assert history.returncode == 0 and "bad build" in history.stdout
    deleted = rollout(live_stack, "delete", "default/cli-sample", "--reason", "done with it")
    assert deleted.returncode == 0, deleted.stderr
    listed = rollout(live_stack, "list", "-o", "json")
    assert "cli-sample" not in listed.stdout
    trail = rollout(live_stack, "audit", "default/cli-sample")
    for action in ("apply", "set_image", "delete"):
        assert action in trail.stdout


def test_the_browser_applies_a_kthena_example_edits_its_image_in_the_yaml_editor_and_deletes_it(
    live_stack, own_room, page: Page, screenshot_dir
):
    own_room(0, ("ModelServing", "ui-sample"))
    page.set_viewport_size({"width": 1440, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    sign_in(page, live_stack.url, "operator")

    page.get_by_test_id("apply-manifest").click()
    page.wait_for_url(live_stack.url + "/manifests/apply/")
    page.get_by_test_id("editor-text").fill(example_named("ui-sample"))
    expect(page.get_by_test_id("editor-summary")).to_contain_text("valid: default/ui-sample (create)")
    page.get_by_test_id("editor-apply").click()
    page.fill("[data-testid=dialog-reason]", "try the Kthena example")
    page.click("[data-testid=dialog-confirm]")

    # Its page: it comes up.
    page.wait_for_url(live_stack.url + "/modelservings/default/ui-sample/")
    expect(page.get_by_test_id("conn")).to_have_text("live", timeout=15000)
    first = wait_state(page, lambda s: s["phase"] == "Healthy" and s["readyOnUpdate"] == 8, what="it to come up")

    # Edit YAML: a new image for every role; the rollout shows on the page.
    page.get_by_test_id("edit-yaml").click()
    page.wait_for_url(live_stack.url + "/modelservings/default/ui-sample/edit/")
    text = page.get_by_test_id("editor-text")
    expect(page.get_by_test_id("editor-summary")).to_contain_text("(update)")
    text.fill(text.input_value().replace("image: nginx", "image: nginx:1.27"))
    expect(page.get_by_test_id("editor-summary")).to_contain_text("valid: default/ui-sample (update)")
    shot(page, screenshot_dir / "editor-edit.png", full_page=False)
    page.get_by_test_id("editor-apply").click()
    page.fill("[data-testid=dialog-reason]", "nginx 1.27")
    page.click("[data-testid=dialog-confirm]")
    page.wait_for_url(live_stack.url + "/modelservings/default/ui-sample/")
    rolling = wait_state(page, lambda s: s["updateRevision"] != first["updateRevision"], what="the new revision")
    wait_state(
        page,
        lambda s: (
            s["updateRevision"] == rolling["updateRevision"] and s["phase"] == "Healthy" and s["readyOnUpdate"] == 8
        ),
        what="the rollout of the edited image to finish",
    )
    shot(page, screenshot_dir / "detail-after-yaml-edit.png")

    # Delete from its page: back on the list, without it.
    page.get_by_test_id("btn-delete").click()
    page.fill("[data-testid=dialog-reason]", "done")
    page.fill("[data-testid=dialog-type-name]", "ui-sample")  # delete asks for the name, as Argo CD's does
    page.click("[data-testid=dialog-confirm]")
    page.wait_for_url(live_stack.url + "/")
    expect(page.locator(".ms-row[data-key='default/ui-sample']")).to_have_count(0)
    assert not errors, errors

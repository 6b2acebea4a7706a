"""Image digests: what each pod really runs, and revisions whose tag was moved to other bytes.

A revision names its images by tag (``vllm/vllm-openai:v0.9.2``); the kubelet resolves the tag when
it pulls and reports the result in ``status.containerStatuses[].imageID``
(``docker.io/vllm/vllm-openai@sha256:9f2c...``). The digest is the part after ``@``.

The controller records, on each ControllerRevision, the digest each of its tags resolved to the
first time one of its pods ran it (annotation ``serving.rolloutui.io/image-digests``, JSON
``{"<image>": {"digest": "sha256:..."}}``). When a later pod of the same revision runs that tag
from another digest, the tag was moved: the entry gets ``"moved": "<the other digest>"`` and the
revision is flagged (two instances of "the same" revision run different bytes). The record lives
in the cluster, so a restarted controller keeps it.

Worked example: revision ``chat-6d5f8c`` runs ``engine:v2``; its first pod reports
``engine@sha256:aaa...`` -> ``{"engine:v2": {"digest": "sha256:aaa..."}}``. Someone pushes a new
``engine:v2``; a pod recreated after a node failure reports ``engine@sha256:bbb...`` ->
``{"engine:v2": {"digest": "sha256:aaa...", "moved": "sha256:bbb..."}}``.

Pure: reads pods and revision objects, returns the annotation values to write.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from . import naming
from .ports import Obj

ANNOTATION_DIGESTS = naming.PREFIX + "image-digests"


def digest_of(image_id: str | None) -> str | None:
    """``repo@sha256:abc`` -> ``sha256:abc``; ``docker-pullable://repo@sha256:abc`` too; a bare
    ``sha256:abc`` is itself; empty (not pulled yet) -> None."""
    if not image_id:
        return None
    return image_id.rsplit("@", 1)[-1] if "@" in image_id else image_id


def pinned(image: str) -> bool:
    """A reference with a digest (``repo@sha256:...``) names fixed bytes: it cannot move."""
    return "@" in image


def _same_image(spec_image: str, status_image: str) -> bool:
    # The kubelet may report the reference normalised: "nginx:1" -> "docker.io/library/nginx:1".
    return status_image == spec_image or status_image.endswith("/" + spec_image)


def pod_digests(pod: Obj) -> tuple[str | None, tuple[tuple[str, str], ...]]:
    """(the digest the pod's first container runs, ``(image, digest)`` of every container that runs
    the image its spec names). A container still running the old image of an in-place update is
    left out: its digest is not the spec image's. ``observe`` keeps both on each ``PodObs``
    (parsed once per pod version)."""
    containers = (pod.get("spec") or {}).get("containers") or []
    spec_images = {c.get("name"): c.get("image") or "" for c in containers}
    first_name = containers[0].get("name") if containers else None
    first, pairs = None, []
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        image = spec_images.get(cs.get("name"))
        digest = digest_of(cs.get("imageID"))
        if image and digest and _same_image(image, cs.get("image") or ""):
            pairs.append((image, digest))
            if cs.get("name") == first_name:
                first = digest
    return first, tuple(pairs)


Running = frozenset[tuple[str, str, str]]  # (revision hash, image, digest) triples


def running(pods: Iterable[Any]) -> Running:
    """What the observed pods (``PodObs``) that are not being deleted run: ``(revision hash,
    image, digest)`` for each container that runs its spec's image. A set, so that the observed
    groups' sets (each kept with its group while its pods are unchanged) are joined in one union:
    1,000 groups of one revision and one image make one triple."""
    return frozenset(
        (pod.revision, image, digest)
        for pod in pods
        if pod.revision and not pod.deleting
        for image, digest in pod.image_digests
    )


def _by_revision(seen: Iterable[tuple[str, str, str]]) -> dict[str, dict[str, set[str]]]:
    """``{revision hash: {image: {digests its pods run}}}``."""
    out: dict[str, dict[str, set[str]]] = {}
    for revision, image, digest in seen:
        out.setdefault(revision, {}).setdefault(image, set()).add(digest)
    return out


def recorded(revision: Obj) -> dict[str, dict[str, str]]:
    """The revision's annotation, parsed (``{}`` when absent or unreadable)."""
    raw = ((revision.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_DIGESTS)
    try:
        value = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def updates(revisions: Iterable[Obj], seen: Iterable[tuple[str, str, str]]) -> dict[str, str]:
    """``{revision object name: new annotation value}`` for the revisions whose record changes:
    a tag seen for the first time, or a tag seen with another digest than the one recorded.
    ``seen``: what the pods run (``running``)."""
    seen = _by_revision(seen)
    out = {}
    for rev in revisions:
        meta = rev.get("metadata") or {}
        rev_hash = (meta.get("labels") or {}).get(naming.LABEL_REVISION) or (meta.get("name") or "").rsplit("-", 1)[-1]
        digests = seen.get(rev_hash)
        if not digests:
            continue
        record = recorded(rev)
        new = {k: dict(v) for k, v in record.items() if isinstance(v, dict)}
        for image in sorted(digests):
            found = sorted(digests[image])
            entry = new.get(image)
            if entry is None or not entry.get("digest"):
                # First sight. Two digests at once: the tag moved between two pulls already;
                # the lower one is recorded (a stable choice) and the other flagged.
                entry = {"digest": found[0]}
            others = [d for d in found if d != entry["digest"]]
            if others and not pinned(image):
                entry["moved"] = others[-1]
            new[image] = entry
        if new != record:
            out[meta.get("name") or ""] = json.dumps(new, sort_keys=True, separators=(",", ":"))
    return out


def summary(annotations: dict[str, Any]) -> tuple[dict[str, dict[str, str]], bool]:
    """(the record, whether any tag of the revision moved) for the revision panel."""
    raw = annotations.get(ANNOTATION_DIGESTS)
    try:
        record = json.loads(raw) if raw else {}
    except ValueError:
        record = {}
    if not isinstance(record, dict):
        record = {}
    record = {k: v for k, v in record.items() if isinstance(v, dict)}
    return record, any(v.get("moved") for v in record.values())

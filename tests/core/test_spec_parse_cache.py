"""``spec.parse_modelserving_cached`` gives what ``parse_modelserving`` gives, whatever version of
the manifest it is handed next: a status write (a new resourceVersion, the same spec object) takes
the last parse with the new manifest on it; any other change of what the parse reads (an
annotation, the generation, a label, the apiVersion, a spec that is another object) parses anew."""

from __future__ import annotations

import copy
import itertools
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.core import naming
from controller.core.spec import parse_modelserving, parse_modelserving_cached
from tests.factories import modelserving, role

BASE = modelserving(uid="u-1", roles=[role("prefill", replicas=2), role("decode")])
BASE["metadata"]["resourceVersion"] = "1"
BASE["metadata"]["generation"] = 1


_VERSIONS = itertools.count(2)


def _next_version() -> str:
    """A resourceVersion never handed out before (an API server never repeats one)."""
    return str(next(_VERSIONS))


def _status_write(m: dict, n: int) -> dict:
    return {**m, "status": {"observedGeneration": n}, "metadata": {**m["metadata"], "resourceVersion": _next_version()}}


def _annotate(m: dict, n: int) -> dict:
    note = json.dumps({"revision": f"r{n}", "stable": f"s{n}"}) if n % 2 else None
    annotations = {k: v for k, v in (m["metadata"].get("annotations") or {}).items() if k != naming.ANNOTATION_ABORT}
    if note:
        annotations[naming.ANNOTATION_ABORT] = note
    return {**m, "metadata": {**m["metadata"], "annotations": annotations, "resourceVersion": _next_version()}}


def _new_generation(m: dict, n: int) -> dict:
    meta = {**m["metadata"], "generation": m["metadata"]["generation"] + 1, "resourceVersion": _next_version()}
    return {**m, "metadata": meta}


def _label(m: dict, n: int) -> dict:
    meta = {**m["metadata"], "labels": {"team": f"t{n}"}, "resourceVersion": _next_version()}
    return {**m, "metadata": meta}


def _equal_spec_copy(m: dict, n: int) -> dict:
    return {**m, "spec": copy.deepcopy(m["spec"]), "metadata": {**m["metadata"], "resourceVersion": _next_version()}}


def _scaled(m: dict, n: int) -> dict:
    spec = {**m["spec"], "replicas": 1 + n % 5}
    meta = {**m["metadata"], "generation": m["metadata"]["generation"] + 1, "resourceVersion": _next_version()}
    return {**m, "spec": spec, "metadata": meta}


def _kthena(m: dict, n: int) -> dict:
    version = naming.KTHENA_API_VERSION if n % 2 else naming.API_VERSION
    return {**m, "apiVersion": version, "metadata": {**m["metadata"], "resourceVersion": _next_version()}}


CHANGES = [_status_write, _annotate, _new_generation, _label, _equal_spec_copy, _scaled, _kthena]


@settings(max_examples=200, deadline=None, database=None)
@given(steps=st.lists(st.tuples(st.integers(0, len(CHANGES) - 1), st.integers(0, 50)), max_size=12))
def test_the_cached_parse_of_each_version_equals_its_parse(steps):
    cache: dict = {}
    manifest = BASE
    assert parse_modelserving_cached(manifest, cache) == parse_modelserving(manifest)
    for change, n in steps:
        manifest = CHANGES[change](manifest, n)
        cached = parse_modelserving_cached(manifest, cache)
        assert cached == parse_modelserving(manifest)
        assert cached.manifest is manifest


def test_a_status_write_takes_the_last_parse_without_parsing_the_spec_again():
    cache: dict = {}
    first = parse_modelserving_cached(BASE, cache)
    written = _status_write(BASE, 1)
    second = parse_modelserving_cached(written, cache)
    assert second.manifest is written
    assert second.roles is first.roles and second.strategy is first.strategy


def test_an_abort_written_beside_an_unchanged_spec_is_read():
    cache: dict = {}
    parse_modelserving_cached(BASE, cache)
    aborted = _annotate(BASE, 1)
    assert parse_modelserving_cached(aborted, cache).abort == {"revision": "r1", "stable": "s1"}

"""The manifest parsers under hostile input, drawn by Hypothesis: alias bombs of any depth and
width, deep nesting (flow and block), huge values, random tags, duplicate keys, many documents and
random text. Whatever is drawn, the service's parser raises nothing but ``ManifestError``, and
through the API (Django's test client, as a viewer validating and an operator applying) no answer is
a 5xx: validate answers 400 naming ``manifest`` or 200 listing the errors, apply answers 4xx. Each
call takes less than a second of CPU and allocates less than 50 MB at its peak (tracemalloc), whatever the
text would expand to.
"""

from __future__ import annotations

import functools
import json
import time
import tracemalloc

import pytest
from django.core.cache import cache
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rolloutui.services import manifests

pytestmark = pytest.mark.django_db

SECONDS = 1.0
PEAK_BYTES = 50 * 1024 * 1024


@st.composite
def alias_bombs(draw) -> str:
    """Level i is a list (or a mapping, or a merge) of ``width`` aliases of level i - 1."""
    depth, width = draw(st.integers(1, 14)), draw(st.integers(1, 14))
    style = draw(st.sampled_from(["list", "map", "merge"]))
    if style == "list":
        lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    else:
        lines = ["l0: &l0 {" + ", ".join(f"a{j}: lol" for j in range(width)) + "}"]
    for i in range(1, depth):
        if style == "list":
            body = f"[{', '.join([f'*l{i - 1}'] * width)}]"
        elif style == "map":
            body = "{" + ", ".join(f"k{j}: *l{i - 1}" for j in range(width)) + "}"
        else:  # each key a new mapping merged from the level before
            body = "{" + ", ".join(f"k{j}: {{<<: *l{i - 1}}}" for j in range(width)) + "}"
        lines.append(f"l{i}: &l{i} {body}")
    return "\n".join(lines) + "\n"


@st.composite
def deep_nesting(draw) -> str:
    levels = draw(st.integers(1, 5000))
    style = draw(st.sampled_from(["flow-list", "flow-map", "block-list", "block-map"]))
    if style == "flow-list":
        return "a: " + "[" * levels + "]" * levels
    if style == "flow-map":
        return "a: " + "{b: " * levels + "1" + "}" * levels
    levels = min(levels, 800)  # block nesting costs indentation: keep it under the body limit
    if style == "block-list":
        return "".join(" " * i + "-\n" for i in range(levels))
    return "".join(" " * i + f"k{i}:\n" for i in range(levels))


@st.composite
def huge_values(draw) -> str:
    size = draw(st.integers(100_000, 400_000))
    kind = draw(st.sampled_from(["plain", "quoted", "block", "digits"]))
    if kind == "plain":
        return "a: " + "x" * size + "\n"
    if kind == "quoted":
        return 'a: "' + "y" * size + '"\n'
    if kind == "block":
        return "a: |\n" + ("  " + "z" * 200 + "\n") * (size // 200)
    return "a: " + "9" * draw(st.integers(4000, 50_000)) + "\n"


TAG_NAMES = st.text(
    st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters="!,[]{}#&*|>'\"%@`"),
    min_size=1,
    max_size=30,
)


@st.composite
def random_tags(draw) -> str:
    name = draw(TAG_NAMES)
    tag = draw(
        st.sampled_from(
            [
                f"!{name}",
                f"!!{name}",
                f"!<tag:yaml.org,2002:{name}>",
                "!!python/object/apply:os.system",
                "!!python/name:os.system",
                "!!binary",
                "!!timestamp",
                "!!set",
                "!!omap",
                "!!int",
                "!!bool",
                "!!float",
                "!!null",
                "!!map",
                "!!seq",
            ]
        )
    )
    value = draw(st.sampled_from(["x", "'1'", "[1, 2]", "{a: 1}", "maybe", "2024-01-01", "aGk=", ""]))
    where = draw(st.sampled_from(["value", "key", "document"]))
    if where == "value":
        return f"apiVersion: v1\nkind: ModelServing\nspec: {tag} {value}\n"
    if where == "key":
        return f"metadata:\n  {tag} {value}: 1\n"
    return f"--- {tag} {value}\n"


@st.composite
def duplicate_keys(draw) -> str:
    keys = draw(
        st.lists(st.sampled_from(["name", "namespace", "spec", "a", "'a'", '"a"', "1", "<<"]), min_size=2, max_size=6)
    )
    depth = draw(st.integers(0, 5))
    indent = "  " * depth
    head = "".join("  " * i + f"n{i}:\n" for i in range(depth))
    return head + "".join(f"{indent}{k}: {i}\n" for i, k in enumerate(keys))


@st.composite
def many_documents(draw) -> str:
    return "---\na: 1\n" * draw(st.integers(90, 3000))


HOSTILE = st.one_of(
    alias_bombs(),
    deep_nesting(),
    huge_values(),
    random_tags(),
    duplicate_keys(),
    many_documents(),
    st.text(max_size=2000),
    st.binary(max_size=2000).map(lambda b: b.decode("latin-1")),
    st.binary(max_size=2000).map(lambda b: b.decode("utf-8", errors="surrogateescape")),
)


def measured(call):
    """``call()``'s result, the CPU seconds it took (this process only: the machine may be busy with
    other work) and the peak bytes it allocated."""
    tracemalloc.start()
    try:
        started = time.process_time()
        result = call()
        took = time.process_time() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, took, peak


@pytest.fixture
def clients(viewer, operator):
    out = {}
    for who, user in (("viewer", viewer), ("operator", operator)):
        client = Client(raise_request_exception=False)
        client.force_login(user)
        client.post("/api/manifests/validate", "{}", content_type="application/json")  # warm the URL map
        out[who] = client
    return out


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(text=HOSTILE)
def test_every_hostile_text_is_refused_by_the_parser_within_a_second_and_50_mb(text):
    def parse():
        try:
            manifests.parse_documents(text)
        except manifests.ManifestError as err:
            return err
        return None

    error, took, peak = measured(parse)
    assert error is None or (error.errors and error.errors[0]["message"])
    assert took < SECONDS, f"{took:.2f} s"
    assert peak < PEAK_BYTES, f"{peak / 2**20:.0f} MB"


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(text=HOSTILE)
def test_validate_and_apply_answer_every_hostile_text_with_a_4xx_never_a_500(clients, text):
    cache.clear()  # the validate rate counts per user: a hundred examples would pass it
    for who, path, body in (
        ("viewer", "/api/manifests/validate", {"manifest": text}),
        ("operator", "/api/modelservings/apply", {"manifest": text, "reason": "fuzz"}),
    ):
        send = functools.partial(clients[who].post, path, json.dumps(body), content_type="application/json")
        resp, took, peak = measured(send)
        assert resp.status_code < 500, (path, resp.status_code, resp.content[:300])
        answer = resp.json()
        if resp.status_code == 200:
            # validate only: the text was read, and it is no ModelServing (or not a valid one)
            assert path.endswith("validate") and answer["errors"], answer
        elif resp.status_code == 400:
            # the reader's refusal lists its errors; an empty text is the serializer's "blank"
            assert answer["manifest"][0] and all(e["message"] for e in answer.get("errors", [])), answer
        else:
            assert resp.status_code in (413, 403), (path, resp.status_code, answer)
        assert took < SECONDS, f"{path}: {took:.2f} s"
        assert peak < PEAK_BYTES, f"{path}: {peak / 2**20:.0f} MB"

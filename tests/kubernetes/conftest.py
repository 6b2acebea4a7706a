"""Fixtures for the Kubernetes adapter tests: an API server double over real HTTP, and Redis.

No Django needed here: the adapter and the core are plain Python.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

# The tests import the helper module next to them and the project packages from the repo root,
# whatever directory pytest was started from.
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for path in (str(HERE), str(ROOT)):
    if path not in sys.path:
        sys.path.insert(0, path)

from apiserver_double import MODELSERVINGS, RESOURCES, RunningApiServer  # noqa: E402
from crd_jsonschema import crd_schema, modelserving_causes  # noqa: E402


@pytest.fixture
def apiserver() -> Iterator[RunningApiServer]:
    # ModelServing writes are pruned and checked against deploy/crd's schema and CEL rules, as a
    # real API server would.
    with RunningApiServer(
        RESOURCES, {MODELSERVINGS}, {MODELSERVINGS: modelserving_causes}, {MODELSERVINGS: crd_schema()}
    ) as server:
        yield server


@pytest.fixture
def api_client(apiserver: RunningApiServer):
    client = apiserver.api_client()
    yield client
    client.close()


@pytest.fixture
def redis_client(redis_url):
    """A client of the test Redis (tests/conftest.py ``redis_url``: a private server unless
    REDIS_URL names one), database 15, with a key prefix of its own removed at the end."""
    import redis

    client = redis.Redis.from_url(redis_url.rstrip("/") + "/15", socket_timeout=2)
    prefix = f"test-rolloutui-{uuid.uuid4().hex[:10]}"
    client.test_prefix = prefix
    yield client
    for key in client.scan_iter(match=f"{prefix}*"):
        client.delete(key)
    client.close()

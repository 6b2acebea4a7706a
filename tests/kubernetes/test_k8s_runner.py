"""run_controller: the leader-elected watch process, end to end against the API server double."""

from __future__ import annotations

import threading
import time

from controller.core import naming
from controller.k8s import KubernetesCluster, LeaseElector
from controller.k8s.runner import run_controller
from tests import waiting


def fast_elector(identity: str):
    def factory(api_client, namespace, name, **callbacks):
        return LeaseElector(
            api_client,
            namespace,
            name,
            identity=identity,
            lease_duration=2,
            renew_deadline=1.5,
            retry_period=0.1,
            **callbacks,
        )

    return factory


def wait_until(predicate, timeout: float = 5.0, what: str = "condition") -> None:
    """``tests.waiting.wait_until`` with this suite's short default timeout."""
    waiting.wait_until(predicate, what=what, timeout=timeout, interval=0.02)


def test_only_the_leader_watches_and_a_follower_takes_over_when_it_stops(api_client, apiserver):
    cluster = KubernetesCluster(api_client)
    cluster.create_modelserving(
        {
            "apiVersion": naming.API_VERSION,
            "kind": "ModelServing",
            "metadata": {"name": "chat", "namespace": "default"},
            "spec": {"template": {"roles": [{"name": "a", "entryTemplate": {}}]}},
        }
    )
    got: dict[str, list] = {"one": [], "two": []}
    stops = {"one": threading.Event(), "two": threading.Event()}
    threads = {}
    for who in ("one", "two"):
        threads[who] = threading.Thread(
            target=run_controller,
            args=(api_client, lambda ns, n, who=who: got[who].append((ns, n))),
            kwargs={
                "lease_namespace": "rolloutui",
                "resync_period": 0.5,
                "stop": stops[who],
                "elector_factory": fast_elector(who),
            },
            daemon=True,
        )
        threads[who].start()
        if who == "one":
            wait_until(lambda: ("default", "chat") in got["one"])  # one leads and watches

    time.sleep(0.8)  # elapsed time on purpose (a "never" is seen over time): two campaigns in vain
    assert got["two"] == []
    assert len(apiserver.emu.watch_calls("/modelservings")) == 1  # one shared watch, not two

    stops["one"].set()
    threads["one"].join(10)
    wait_until(lambda: ("default", "chat") in got["two"])  # two took over (the lease was released)
    stops["two"].set()
    threads["two"].join(10)
    assert not threads["two"].is_alive()


def test_the_watch_entry_point_describes_itself():
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-m", "controller.k8s", "--help"], cwd=root, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert "watch" in out.stdout and "--lease-namespace" in out.stdout

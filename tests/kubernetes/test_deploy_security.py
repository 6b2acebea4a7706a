"""The deployment hardening findings, checked on deploy/ as written (and so on every render of it):

- Redis was open to every pod: NetworkPolicies now deny by default (evaluated here with the
  NetworkPolicy semantics for the pods that run, plus a stranger pod in and out of the namespace),
  and Redis requires the password from the Secret, which the app's URLs carry.
- Pods must meet Pod Security `restricted` (the namespace enforces it; every pod is checked
  against the profile's rules here).
- Every container has a liveness probe; the beat and watch probes read heartbeat files, and the
  probe commands in the manifests are run against fresh, stale and missing files.
- The hosts the dashboard answers to are named (never "*") and the probes send one of them.
"""

from __future__ import annotations

import copy
import ipaddress
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis
from manifests import ROOT, by_kind, config_maps, container_env, containers_of, deployment

from rolloutui import runtime_config
from tests.waiting import wait_until

APP_DEPLOYMENTS = ("rolloutui-web", "rolloutui-worker")
SECRETS = {
    "rolloutui-secrets": {
        "DATABASE_URL": "postgres://rolloutui:db-pass@postgres.example:5432/rolloutui",
        "ROLLOUTUI_SECRET_KEY": "k" * 64,
        "REDIS_PASSWORD": "0f3c9a7be1d24c5b8e6f",
    }
}

# ------------------------------------------------------------------------------------ network policy


@dataclass(frozen=True)
class Pod:
    namespace: str
    labels: dict[str, str]
    ports: dict[str, int] = field(default_factory=dict)

    def __hash__(self) -> int:
        return hash((self.namespace, tuple(sorted(self.labels.items()))))


@dataclass(frozen=True)
class External:
    """An address outside the pod network: the API server, a managed database, the internet."""

    ip: str


def _selects(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    selector = selector or {}
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and labels.get(key) in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def _namespace_labels(name: str) -> dict[str, str]:
    return {"kubernetes.io/metadata.name": name}


def _peer_matches(peer: dict[str, Any], policy_ns: str, other: Pod | External) -> bool:
    if "ipBlock" in peer:
        if not isinstance(other, External):
            return False
        block = peer["ipBlock"]
        ip = ipaddress.ip_address(other.ip)
        return ip in ipaddress.ip_network(block["cidr"]) and not any(
            ip in ipaddress.ip_network(c) for c in block.get("except") or []
        )
    if isinstance(other, External):
        return False
    if "namespaceSelector" in peer:
        if not _selects(peer["namespaceSelector"], _namespace_labels(other.namespace)):
            return False
    elif other.namespace != policy_ns:
        return False
    return _selects(peer.get("podSelector"), other.labels)


def _port_matches(ports: list[dict[str, Any]] | None, port: int, protocol: str, target: Pod | External) -> bool:
    if not ports:
        return True
    for p in ports:
        if p.get("protocol", "TCP") != protocol:
            continue
        wanted = p.get("port")
        if wanted is None:
            return True
        if isinstance(wanted, str):
            wanted = target.ports.get(wanted) if isinstance(target, Pod) else None
        if wanted == port:
            return True
    return False


def _allowed(policies, pod: Pod, direction: str, other: Pod | External, port: int, protocol: str, target) -> bool:
    kind = "Ingress" if direction == "ingress" else "Egress"
    selecting = [
        p
        for p in policies
        if p["metadata"]["namespace"] == pod.namespace
        and kind in (p["spec"].get("policyTypes") or ["Ingress"])
        and _selects(p["spec"]["podSelector"], pod.labels)
    ]
    if not selecting:
        return True  # not isolated in this direction
    peers_key = "from" if direction == "ingress" else "to"
    for policy in selecting:
        for rule in policy["spec"].get(direction) or []:
            peers = rule.get(peers_key)
            if peers is not None and not any(_peer_matches(peer, pod.namespace, other) for peer in peers):
                continue
            if _port_matches(rule.get("ports"), port, protocol, target):
                return True
    return False


def can_connect(src: Pod | External, dst: Pod | External, port: int, protocol: str = "TCP", policies=None) -> bool:
    policies = by_kind("NetworkPolicy") if policies is None else policies
    if isinstance(src, Pod) and not _allowed(policies, src, "egress", dst, port, protocol, dst):
        return False
    if isinstance(dst, Pod) and not _allowed(policies, dst, "ingress", src, port, protocol, dst):
        return False
    return True


def pod_of(name: str) -> Pod:
    d = deployment(name)
    ports = {p["name"]: p["containerPort"] for c in containers_of(d) for p in c.get("ports") or [] if "name" in p}
    return Pod(d["metadata"]["namespace"], d["spec"]["template"]["metadata"]["labels"], ports)


WEB, WORKER, REDIS = (pod_of(n) for n in ("rolloutui-web", "rolloutui-worker", "rolloutui-redis"))
DNS = Pod("kube-system", {"k8s-app": "kube-dns"}, {"dns": 53})
INGRESS_CONTROLLER = Pod("ingress-nginx", {"app.kubernetes.io/name": "ingress-nginx"})
STRANGER_HERE = Pod("rolloutui", {"run": "debug"})
STRANGER_ELSEWHERE = Pod("default", {"app": "vllm"}, {"http": 8000})
DATABASE = External("10.20.0.5")
API_SERVER = External("10.96.0.1")
INTERNET = External("93.184.216.34")
PROMETHEUS = Pod("monitoring", {"app.kubernetes.io/name": "prometheus"}, {"web": 9090})
ANOTHER_MONITORING_POD = Pod("monitoring", {"app.kubernetes.io/name": "grafana"}, {"http": 9090})

CONNECTIONS = {
    "the ingress controller reaches the web port": (INGRESS_CONTROLLER, WEB, 8000, "TCP", True),
    "the web pods reach redis": (WEB, REDIS, 6379, "TCP", True),
    "the worker reaches redis": (WORKER, REDIS, 6379, "TCP", True),
    "a stranger pod in the namespace cannot reach redis": (STRANGER_HERE, REDIS, 6379, "TCP", False),
    "a pod in another namespace cannot reach redis": (STRANGER_ELSEWHERE, REDIS, 6379, "TCP", False),
    "the web resolves names": (WEB, DNS, 53, "UDP", True),
    "the worker resolves names over tcp": (WORKER, DNS, 53, "TCP", True),
    "the web reaches the database": (WEB, DATABASE, 5432, "TCP", True),
    "the worker reaches the database": (WORKER, DATABASE, 5432, "TCP", True),
    "the worker reaches the api server on 443": (WORKER, API_SERVER, 443, "TCP", True),
    "the web reaches the api server on 6443": (WEB, API_SERVER, 6443, "TCP", True),
    "the web cannot reach the internet over http": (WEB, INTERNET, 80, "TCP", False),
    "the worker cannot reach model pods directly": (WORKER, STRANGER_ELSEWHERE, 8000, "TCP", False),
    "redis reaches nothing outside": (REDIS, INTERNET, 443, "TCP", False),
    "redis cannot reach the api server": (REDIS, API_SERVER, 443, "TCP", False),
    "a stranger pod cannot reach the worker": (STRANGER_HERE, WORKER, 8000, "TCP", False),
    # Hardening finding: egress on 443, 6443 and 5432 was open to any address.
    "the web cannot reach the internet over https": (WEB, INTERNET, 443, "TCP", False),
    "the worker cannot reach the internet on the api server's other port": (WORKER, INTERNET, 6443, "TCP", False),
    "the worker cannot reach a database on the internet": (WORKER, INTERNET, 5432, "TCP", False),
    "the worker reaches prometheus for the canary analysis": (WORKER, PROMETHEUS, 9090, "TCP", True),
    "the web reaches prometheus for the capacity page": (WEB, PROMETHEUS, 9090, "TCP", True),
    "the worker cannot reach another monitoring pod": (WORKER, ANOTHER_MONITORING_POD, 9090, "TCP", False),
    "the worker cannot reach model pods on prometheus' port": (WORKER, STRANGER_ELSEWHERE, 9090, "TCP", False),
}


@pytest.mark.parametrize("case", list(CONNECTIONS), ids=str)
def test_network_policies_allow_only_what_rolloutui_needs(case):
    src, dst, port, protocol, expected = CONNECTIONS[case]
    assert can_connect(src, dst, port, protocol) is expected


def test_every_egress_rule_names_its_peers_and_none_is_every_address():
    for policy in by_kind("NetworkPolicy"):
        for rule in policy["spec"].get("egress") or []:
            assert rule.get("to"), f"{policy['metadata']['name']}: an egress rule open to every address"
            for peer in rule["to"]:
                cidr = (peer.get("ipBlock") or {}).get("cidr")
                assert cidr is None or ipaddress.ip_network(cidr).prefixlen > 0, policy["metadata"]["name"]


def test_every_pod_of_the_namespace_is_isolated_both_ways_by_default():
    policies = by_kind("NetworkPolicy")
    deny = [p for p in policies if p["spec"]["podSelector"] == {} and not p["spec"].get("ingress")]
    assert deny and set(deny[0]["spec"]["policyTypes"]) == {"Ingress", "Egress"}
    assert not deny[0]["spec"].get("egress")


# ------------------------------------------------------------------------------------ redis password


def test_redis_requires_the_password_from_the_secret_and_its_probes_authenticate():
    redis_deploy = deployment("rolloutui-redis")
    (container,) = containers_of(redis_deploy)
    args = container["args"]
    assert args[args.index("--requirepass") + 1] == "$(REDIS_PASSWORD)"
    env = container_env(container, config_maps(), SECRETS)
    assert env["REDIS_PASSWORD"] == env["REDISCLI_AUTH"] == SECRETS["rolloutui-secrets"]["REDIS_PASSWORD"]
    for probe in ("readinessProbe", "livenessProbe"):
        assert "redis-cli ping" in " ".join(container[probe]["exec"]["command"])


@pytest.mark.parametrize("name", APP_DEPLOYMENTS)
def test_the_app_containers_build_redis_urls_that_carry_the_password(name):
    password = SECRETS["rolloutui-secrets"]["REDIS_PASSWORD"]
    for container in containers_of(deployment(name), init=False):
        env = container_env(container, config_maps(), SECRETS)
        for variable in ("REDIS_URL", "ROLLOUTUI_ROUTER_REDIS_URL"):
            url = runtime_config.check_redis_url(env[variable], variable)
            assert redis.connection.parse_url(url)["password"] == password, (container["name"], variable)
        # The broker and channel layer derived by the settings keep it.
        for derived in (
            runtime_config.broker_url(env["REDIS_URL"]),
            runtime_config.channel_layers(env["REDIS_URL"], [])["default"]["CONFIG"]["hosts"][0]["address"],
        ):
            assert redis.connection.parse_url(derived)["password"] == password


def test_a_missing_redis_password_in_the_secret_is_a_clear_error_not_an_open_redis():
    secrets = copy.deepcopy(SECRETS)
    del secrets["rolloutui-secrets"]["REDIS_PASSWORD"]
    (container,) = containers_of(deployment("rolloutui-redis"))
    with pytest.raises(KeyError, match="REDIS_PASSWORD"):
        container_env(container, config_maps(), secrets)


def test_channel_messages_are_encrypted_when_the_secret_holds_a_key():
    secrets = copy.deepcopy(SECRETS)
    secrets["rolloutui-secrets"]["ROLLOUTUI_CHANNELS_ENCRYPTION_KEYS"] = "c0ffee" * 8
    for name in APP_DEPLOYMENTS:
        for container in containers_of(deployment(name), init=False):
            with_key = container_env(container, config_maps(), secrets)
            without = container_env(container, config_maps(), SECRETS)
            assert with_key["ROLLOUTUI_CHANNELS_ENCRYPTION_KEYS"] == "c0ffee" * 8
            assert "ROLLOUTUI_CHANNELS_ENCRYPTION_KEYS" not in without  # optional: off when unset


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.integration
def test_a_redis_started_with_the_manifests_arguments_refuses_clients_without_the_password(tmp_path):
    from rolloutui.embedded_redis import find_redis_server

    (container,) = containers_of(deployment("rolloutui-redis"))
    env = container_env(container, config_maps(), SECRETS)
    args = [a.replace("$(REDIS_PASSWORD)", env["REDIS_PASSWORD"]) for a in container["args"]]
    port = free_port()
    server = subprocess.Popen(
        [find_redis_server(), *args, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        app_env = container_env(containers_of(deployment("rolloutui-web"), init=False)[0], config_maps(), SECRETS)
        url = app_env["REDIS_URL"].replace("rolloutui-redis:6379", f"127.0.0.1:{port}")
        with_password = redis.Redis.from_url(runtime_config.broker_url(url), socket_timeout=2)
        wait_until(with_password.ping, what="redis to start", timeout=10, retry_on=(redis.ConnectionError,))
        anonymous = redis.Redis(host="127.0.0.1", port=port, socket_timeout=2)
        with pytest.raises(redis.AuthenticationError):
            anonymous.ping()
        with pytest.raises((redis.AuthenticationError, redis.ResponseError)):  # not even a FLUSHALL gets through
            anonymous.flushall()
    finally:
        server.terminate()
        server.wait(10)


# ------------------------------------------------------------------------------- pod security


NAMESPACE_LABELS = {
    "pod-security.kubernetes.io/enforce": "restricted",
    "pod-security.kubernetes.io/audit": "restricted",
    "pod-security.kubernetes.io/warn": "restricted",
}
RESTRICTED_VOLUME_TYPES = {
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
}


def restricted_violations(pod_spec: dict[str, Any]) -> list[str]:
    """The Pod Security Standard `restricted` (which includes `baseline`), rule by rule."""
    out: list[str] = []
    pod_sc = pod_spec.get("securityContext") or {}
    for flag in ("hostNetwork", "hostPID", "hostIPC"):
        if pod_spec.get(flag):
            out.append(f"{flag} must be unset or false")
    for volume in pod_spec.get("volumes") or []:
        kinds = set(volume) - {"name"}
        if not kinds <= RESTRICTED_VOLUME_TYPES:
            out.append(f"volume {volume['name']}: type {sorted(kinds)} not allowed")
    containers = (pod_spec.get("initContainers") or []) + pod_spec["containers"]
    for c in containers:
        sc = c.get("securityContext") or {}
        where = f"container {c['name']}"
        if sc.get("privileged"):
            out.append(f"{where}: privileged")
        if sc.get("allowPrivilegeEscalation") is not False:
            out.append(f"{where}: allowPrivilegeEscalation must be false")
        caps = sc.get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []):
            out.append(f"{where}: capabilities must drop ALL")
        if set(caps.get("add") or []) - {"NET_BIND_SERVICE"}:
            out.append(f"{where}: may add only NET_BIND_SERVICE")
        run_as_non_root = sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot"))
        if run_as_non_root is not True:
            out.append(f"{where}: runAsNonRoot must be true (pod or container)")
        if sc.get("runAsUser", pod_sc.get("runAsUser")) == 0:
            out.append(f"{where}: runAsUser must not be 0")
        seccomp = (sc.get("seccompProfile") or pod_sc.get("seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            out.append(f"{where}: seccompProfile must be RuntimeDefault or Localhost")
        for port in c.get("ports") or []:
            if port.get("hostPort"):
                out.append(f"{where}: hostPort")
        if sc.get("procMount") not in (None, "Default"):
            out.append(f"{where}: procMount must be Default")
    for sysctl in pod_sc.get("sysctls") or []:
        out.append(f"sysctl {sysctl['name']}: not in the safe set")
    return out


def test_the_namespace_enforces_the_restricted_pod_security_standard():
    (namespace,) = by_kind("Namespace")
    assert NAMESPACE_LABELS.items() <= namespace["metadata"]["labels"].items()


@pytest.mark.parametrize("name", [*APP_DEPLOYMENTS, "rolloutui-redis"])
def test_every_pod_meets_the_restricted_pod_security_standard(name):
    assert restricted_violations(deployment(name)["spec"]["template"]["spec"]) == []


def test_the_restricted_check_catches_a_pod_without_seccomp_or_with_root():
    spec = copy.deepcopy(deployment("rolloutui-web")["spec"]["template"]["spec"])
    del spec["securityContext"]["seccompProfile"]
    spec["containers"][0]["securityContext"]["runAsUser"] = 0
    violations = restricted_violations(spec)
    assert "container web: seccompProfile must be RuntimeDefault or Localhost" in violations
    assert "container web: runAsUser must not be 0" in violations


@pytest.mark.parametrize("name", [*APP_DEPLOYMENTS, "rolloutui-redis"])
def test_every_container_has_a_read_only_root_and_writes_only_to_empty_dirs(name):
    d = deployment(name)
    volumes = {v["name"]: v for v in d["spec"]["template"]["spec"].get("volumes") or []}
    for c in containers_of(d):
        assert c["securityContext"]["readOnlyRootFilesystem"] is True, c["name"]
        for mount in c.get("volumeMounts") or []:
            # A ConfigMap mounted read-only is read, never written (Kubernetes mounts ConfigMap volumes
            # read-only anyway); everything writable is an emptyDir.
            if mount.get("readOnly") and "configMap" in volumes[mount["name"]]:
                continue
            assert "emptyDir" in volumes[mount["name"]], (c["name"], mount)


# ---------------------------------------------------------------------------------- liveness


def test_every_container_has_a_liveness_probe():
    # Init containers run to completion and may not have probes; every other container must.
    for d in by_kind("Deployment"):
        for c in containers_of(d, init=False):
            assert c.get("livenessProbe"), f"{d['metadata']['name']}/{c['name']} has no liveness probe"


def heartbeat_file(container: dict[str, Any]) -> str:
    command = container["command"]
    if "--heartbeat-file" in command:
        return command[command.index("--heartbeat-file") + 1]
    env = {e["name"]: e.get("value") for e in container.get("env") or []}
    return env["ROLLOUTUI_BEAT_HEARTBEAT_FILE"]


@pytest.mark.parametrize("name", ["watch", "beat"])
def test_the_heartbeat_probes_pass_on_a_fresh_file_and_fail_on_a_stale_or_missing_one(name, tmp_path):
    container = next(c for c in containers_of(deployment("rolloutui-worker")) if c["name"] == name)
    written = heartbeat_file(container)
    probe = container["livenessProbe"]["exec"]["command"]
    assert written in probe, "the probe must read the file the process writes"
    local = tmp_path / "alive"
    argv = [sys.executable if a == "python" else a for a in probe]
    argv[argv.index(written)] = str(local)
    max_age = float(argv[argv.index("--max-age") + 1])

    def run() -> int:
        return subprocess.run(argv, cwd=ROOT, capture_output=True, timeout=30).returncode

    assert run() == 1  # not written yet
    local.write_text("x")
    assert run() == 0
    old = time.time() - max_age - 5
    os.utime(local, (old, old))
    assert run() == 1


def test_the_watch_and_beat_are_told_to_write_their_heartbeats():
    worker = {c["name"]: c for c in containers_of(deployment("rolloutui-worker"))}
    assert "--heartbeat-file" in worker["watch"]["command"]
    beat = worker["beat"]["command"]
    assert beat[beat.index("--scheduler") + 1] == "controller.k8s.beat:HeartbeatScheduler"
    assert float(beat[beat.index("--max-interval") + 1]) < float(worker["beat"]["livenessProbe"]["exec"]["command"][-1])


# ------------------------------------------------------------------------------------- hosts


def test_the_config_names_its_hosts_instead_of_allowing_every_host():
    # Hardening finding: deploy/config.yaml set ALLOWED_HOSTS "*", which also disabled the websocket Origin check.
    hosts = config_maps()["rolloutui-config"]["ROLLOUTUI_ALLOWED_HOSTS"].split(",")
    assert "*" not in hosts and hosts


def test_the_web_probes_send_a_host_the_dashboard_accepts():
    hosts = config_maps()["rolloutui-config"]["ROLLOUTUI_ALLOWED_HOSTS"].split(",")
    (web,) = containers_of(deployment("rolloutui-web"), init=False)
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        headers = {h["name"]: h["value"] for h in web[probe]["httpGet"].get("httpHeaders") or []}
        assert headers.get("Host") in hosts, probe

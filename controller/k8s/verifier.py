"""``HttpVerifier``: sends ``spec.verification`` to an instance's entry pod over HTTP.

The request goes straight to the pod (``status.podIP``) on the verification's port, or the entry
container's first ``containerPort``, or 8000 (vLLM's default), bounded by ``timeoutSeconds``. It
checks the model server itself, not the route to it: the router's part is the Routed gate.
Example: {path: /v1/models, expectStatus: 200} on a pod at 10.1.2.3 with containerPort 8000 ->
GET http://10.1.2.3:8000/v1/models.
"""

from __future__ import annotations

import json
import time
from typing import Any

import requests

DEFAULT_PORT = 8000
MAX_BODY_CHARS = 300


def _port(pod: dict[str, Any], verification: dict[str, Any]) -> int:
    if verification.get("port"):
        return int(verification["port"])
    for container in (pod.get("spec") or {}).get("containers") or []:
        for port in container.get("ports") or []:
            if port.get("containerPort"):
                return int(port["containerPort"])
    return DEFAULT_PORT


class HttpVerifier:
    def __init__(self, session: requests.Session | None = None) -> None:
        self.session = session or requests.Session()

    def verify(self, namespace: str, pod: dict[str, Any], verification: dict[str, Any]) -> dict[str, Any]:
        ip = (pod.get("status") or {}).get("podIP")
        if not ip:
            return {"passed": False, "status": None, "error": "the pod has no IP yet", "latencyMs": None}
        host = f"[{ip}]" if ":" in ip else ip
        url = f"http://{host}:{_port(pod, verification)}{verification['path']}"
        body = verification.get("body")
        data = body if isinstance(body, str) or body is None else json.dumps(body)
        headers = {"Content-Type": "application/json"} if body is not None and not isinstance(body, str) else {}
        started = time.perf_counter()
        try:
            response = self.session.request(
                verification.get("method", "GET"),
                url,
                data=data,
                headers=headers,
                timeout=float(verification.get("timeoutSeconds", 5)),
                allow_redirects=False,
            )
        except requests.RequestException as exc:
            return {"passed": False, "status": None, "error": f"{type(exc).__name__}: {exc}"[:200], "latencyMs": None}
        latency = round((time.perf_counter() - started) * 1000, 1)
        expect = int(verification.get("expectStatus", 200))
        return {
            "passed": response.status_code == expect,
            "status": response.status_code,
            "body": response.text[:MAX_BODY_CHARS],
            "error": None if response.status_code == expect else f"status {response.status_code}, expected {expect}",
            "latencyMs": latency,
        }

"""HTTP to the server's REST API with the standard library's ``urllib`` (no client library to
install or import). ``urllib.request`` (with http.client and email) is imported on the first
request, not at start-up: ``--help`` and a bad command line never pay for it."""

from __future__ import annotations

import json
import urllib.parse
from typing import Any


class ApiError(Exception):
    """An error answer of the API, or no answer. ``fields`` is the API's JSON error body (it names
    the field: ``{"toRevision": ["..."]}``), shown one line per field."""

    def __init__(self, status: int, message: str, fields: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status, self.fields = status, fields or {}

    def lines(self) -> list[str]:
        if not self.fields:
            return [str(self)]
        out = []
        for field, problems in self.fields.items():
            problems = problems if isinstance(problems, list) else [problems]
            text = "; ".join(p if isinstance(p, str) else json.dumps(p) for p in problems)
            out.append(text if field == "detail" else f"{field}: {text}")
        return out


class Client:
    def __init__(self, server: str, token: str | None = None, *, timeout: float = 30.0) -> None:
        self.server = server.rstrip("/")
        self.token = token
        self.timeout = timeout

    def url(self, path: str, query: dict[str, Any] | None = None) -> str:
        given = {k: v for k, v in (query or {}).items() if v is not None and v is not False}
        return self.server + path + ("?" + urllib.parse.urlencode(given) if given else "")

    def request(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        body: Any = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any, dict[str, str]]:
        """``(status, decoded JSON or None, headers)``; ``ApiError`` for 4xx/5xx or no connection.
        A 304 is an answer, not an error."""
        import urllib.error
        import urllib.request

        sent = {"Accept": "application/json", **(headers or {})}
        if self.token:
            sent["Authorization"] = f"Token {self.token}"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            sent["Content-Type"] = "application/json"
        req = urllib.request.Request(self.url(path, query), data=data, method=method, headers=sent)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return resp.status, _decode(resp.read()), dict(resp.headers)
        except urllib.error.HTTPError as err:
            if err.code == 304:
                return 304, None, dict(err.headers)
            payload = _decode(err.read())
            if err.code == 401:
                raise ApiError(401, "not signed in, or the token expired: run `rolloutui login`") from None
            if isinstance(payload, dict):
                raise ApiError(err.code, f"HTTP {err.code}", payload) from None
            raise ApiError(err.code, f"HTTP {err.code} {err.reason}") from None
        except urllib.error.URLError as err:
            raise ApiError(0, f"cannot reach {self.server}: {err.reason}") from None

    def get(self, path: str, **query: Any) -> Any:
        return self.request("GET", path, query=query)[1]

    def post(self, path: str, body: Any) -> Any:
        return self.request("POST", path, body=body)[1]


def _decode(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None

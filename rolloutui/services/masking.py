"""Masking of secret-looking values (environment, command lines) for users who may only view.

Place in the flow: ``services.state.get_manifest`` and ``revision_diff``, the InferenceService
state and history (``services.kserve.controls``) and the audit trail's ``details`` (the API's
``AuditRecordSerializer``) pass what they return through ``mask_tree`` / ``mask_changes`` unless
the user may operate in the namespace (``reveals``: an operator edits the manifest and must see it
whole).

What is masked, in any ``env`` list of a container (at any depth):

- the ``value`` of a variable whose name contains KEY, TOKEN, SECRET or PASSWORD (any case, e.g.
  ``HF_TOKEN``, ``api_key``, ``DB_PASSWORD``): ``{"name": "HF_TOKEN", "value": "hf_abc"}`` ->
  ``{"name": "HF_TOKEN", "value": "<masked>"}``;
- whatever the name, the password of a URL in the value (``postgres://app:pw@db/x`` ->
  ``postgres://app:<masked>@db/x``); for a name ending in ``_URL``, ``_DSN`` or ``_URI`` also a user
  part without a password (``https://ghp_abc@host`` -> ``https://<masked>@host``: a token often
  stands there);
- every ``valueFrom`` (it names the Secret or ConfigMap and key the value comes from);
- every ``envFrom`` source (a whole Secret or ConfigMap).

Anywhere else in the tree, a URL's password (an InferenceService's ``storageUri``, an annotation),
and under a key naming a URL (ending in ``uri``, ``url`` or ``dsn``, any case: ``artifactUri``,
``storageUri``) also a user part without a password, as for env names above. A model version's
``artifactUri`` goes through ``mask_uri`` wherever it is shown (``services.releases.records``).

And in any ``command`` or ``args`` list: the value of a flag naming a secret (its last word is
key, apikey, token, secret, password, passwd or credentials: ``--api-key=sk-1`` ->
``--api-key=<masked>``, ``--hf-token sk-1`` -> ``--hf-token <masked>``; ``--max-tokens`` is not
one), and URL passwords as above.

The variable's name and the flag stay visible, so a viewer still sees that they exist and that
they changed.
"""

from __future__ import annotations

import re
from typing import Any

MASK = "<masked>"
OPERATE = "rolloutui.operate_modelserving"
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)
# scheme://user:password@host: group "user" (may be empty), group "password".
URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^/@:\s]*):(?P<password>[^/@\s]*)@")
# scheme://userinfo@host (a user name alone, often a token).
URL_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/@\s]+)@")
URL_NAME = re.compile(r"_(URL|DSN|URI)$", re.IGNORECASE)
# A JSON key naming a URL: ``artifactUri``, ``storageUri``, ``webhook_url``, ``dsn``.
URL_KEY = re.compile(r"(URL|DSN|URI)$", re.IGNORECASE)
# A command-line flag, ``--name`` or ``--name=value`` (also ``-name``).
FLAG = re.compile(r"^(?P<flag>--?(?P<name>[A-Za-z][A-Za-z0-9_.-]*))(?:=(?P<value>.*))?$", re.DOTALL)
SECRET_FLAG_WORDS = {"key", "apikey", "token", "secret", "password", "passwd", "credentials"}
# A diff path segment naming an env variable: ``...containers[engine].env[HF_TOKEN].value``.
_ENV_SEGMENT = re.compile(r"\.env\[(?P<name>[^\]]*)\](?P<rest>.*)$")
_ARGS_ITEM = re.compile(r"\.(command|args)\[\d+\]$")
_ARGS_LIST = re.compile(r"\.(command|args)$")


def secret_name(name: Any) -> bool:
    return isinstance(name, str) and bool(SECRET_NAME.search(name))


def reveals(user, namespace: str | None) -> bool:
    """Secret-looking values are shown whole only to whoever may operate in ``namespace`` (None: a
    trusted internal caller)."""
    from . import access

    return user is None or access.allowed(user, OPERATE, namespace)


def mask_for(user, namespace: str | None, value: Any) -> Any:
    """``value`` as ``user`` may see it: whole (``reveals``) or through ``mask_tree``."""
    return value if reveals(user, namespace) else mask_tree(value)


def mask_urls(text: Any, *, userinfo: bool = False) -> Any:
    """``text`` with the password of every URL in it masked (``userinfo``: also a user part that has
    no password)."""
    if not isinstance(text, str) or "@" not in text:
        return text
    text = URL_PASSWORD.sub(lambda m: f"{m['head']}:{MASK}@", text)
    if userinfo:  # a user part without a password: the user part itself may be the token
        text = URL_USERINFO.sub(lambda m: m[0] if ":" in m["userinfo"] else f"{m['head']}{MASK}@", text)
    return text


def mask_uri(text: Any) -> Any:
    """A URL that names credentials, masked: its password, or a user part standing alone (a token):
    ``s3://ak:sk@bucket/m`` -> ``s3://ak:<masked>@bucket/m``, ``https://hf_x@host/m`` -> ``https://<masked>@host/m``."""
    return mask_urls(text, userinfo=True)


def mask_env_value(name: Any, value: Any) -> Any:
    """One environment variable's value as a viewer sees it (the env rules above)."""
    return _mask_env_entry({"name": name, "value": value})["value"]


def secret_flag(item: Any) -> bool:
    """``--api-key``, ``--hf-token=...``, ``-password``: a flag whose last word names a secret."""
    match = FLAG.match(item) if isinstance(item, str) else None
    if not match:
        return False
    words = re.split(r"[-_.]", match["name"].lower())
    return words[-1] in SECRET_FLAG_WORDS or match["name"].lower().replace("-", "").replace("_", "") in (
        SECRET_FLAG_WORDS
    )


def mask_arg(item: Any) -> Any:
    """One command-line item on its own: ``--token=abc`` -> ``--token=<masked>``; URL passwords."""
    if not isinstance(item, str):
        return item
    match = FLAG.match(item)
    if match and match["value"] is not None and secret_flag(item):
        return f"{match['flag']}={MASK}"
    return mask_urls(item)


def mask_args(items: list[Any]) -> list[Any]:
    """A ``command`` or ``args`` list: each item through ``mask_arg``, and the item after a bare
    secret flag (``["--api-key", "sk-1"]``) masked."""
    out = []
    after_flag = False
    for item in items:
        if after_flag and isinstance(item, str) and not item.startswith("-"):
            out.append(MASK)
        else:
            out.append(mask_arg(item))
        after_flag = isinstance(item, str) and "=" not in item and secret_flag(item)
    return out


def _mask_env_entry(entry: Any) -> Any:
    if not isinstance(entry, dict):
        return entry
    out = dict(entry)
    if "valueFrom" in out:
        out["valueFrom"] = MASK
    if "value" in out:
        name = out.get("name")
        if secret_name(name):
            out["value"] = MASK
        else:
            out["value"] = mask_urls(out["value"], userinfo=isinstance(name, str) and bool(URL_NAME.search(name)))
    return out


def mask_tree(value: Any) -> Any:
    """A copy of ``value`` with every secret-looking env value and command-line secret masked (see
    the module docstring). Iterative: a hostile depth cannot exhaust the stack."""
    root: list[Any] = [None]
    # (value, the container its copy goes into, the key or index there)
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]
    while stack:
        item, parent, slot = stack.pop()
        if isinstance(item, list):
            copy: Any = [None] * len(item)
            stack.extend((child, copy, i) for i, child in enumerate(item))
        elif isinstance(item, dict):
            copy = {}
            for key, child in item.items():
                copy[key] = None
                if key == "env" and isinstance(child, list):
                    child = [_mask_env_entry(e) for e in child]
                elif key == "envFrom" and isinstance(child, list):
                    child = [MASK for _ in child]
                elif key in ("command", "args") and isinstance(child, list):
                    child = mask_args(child)
                elif isinstance(key, str) and isinstance(child, str) and URL_KEY.search(key):
                    child = mask_uri(child)
                stack.append((child, copy, key))
        else:
            copy = mask_urls(item)  # a URL password is a secret wherever it is (storageUri, ...)
        parent[slot] = copy
    return root[0]


def _mask_side(value: Any, name: str, rest: str) -> Any:
    """One side of a change under ``env[name]``: ``rest`` is the path below the variable."""
    if value is None:
        return None
    if rest == "":  # the whole variable was added or removed
        return _mask_env_entry(value)
    if rest.startswith(".valueFrom") or rest.startswith(".value") and secret_name(name):
        return MASK
    if rest.startswith(".value"):
        return mask_urls(value, userinfo=bool(URL_NAME.search(name)))
    return value


def mask_changes(changes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``core.revisions.diff`` output with secret-looking values masked on both sides."""
    out = []
    for change in changes:
        path = change.get("path") or ""
        match = _ENV_SEGMENT.search(path)
        item = dict(change)
        if match:
            name, rest = match["name"], match["rest"]
            item["from"] = _mask_side(change.get("from"), name, rest)
            item["to"] = _mask_side(change.get("to"), name, rest)
        elif path.endswith(".env"):  # the whole list added, removed or replaced
            item["from"] = mask_tree({"env": change.get("from")})["env"]
            item["to"] = mask_tree({"env": change.get("to")})["env"]
        elif path.endswith(".envFrom") or ".envFrom[" in path:
            item["from"] = None if change.get("from") is None else MASK
            item["to"] = None if change.get("to") is None else MASK
        elif _ARGS_ITEM.search(path):  # one item of a command line: no neighbour to look at
            item["from"] = mask_arg(change.get("from"))
            item["to"] = mask_arg(change.get("to"))
        elif _ARGS_LIST.search(path):
            item["from"] = mask_args(change["from"]) if isinstance(change.get("from"), list) else change.get("from")
            item["to"] = mask_args(change["to"]) if isinstance(change.get("to"), list) else change.get("to")
        else:
            item["from"] = mask_tree(change.get("from"))
            item["to"] = mask_tree(change.get("to"))
        out.append(item)
    return out


__all__ = [
    "MASK",
    "mask_args",
    "mask_changes",
    "mask_env_value",
    "mask_for",
    "mask_tree",
    "mask_uri",
    "mask_urls",
    "reveals",
    "secret_name",
]

"""Where the CLI keeps its server, token and cached action registry.

One JSON file, ``$XDG_CONFIG_HOME/rolloutui/config.json`` (``~/.config/...`` by default), written
by ``rolloutui login``. It holds a token, so it is created readable by its owner only (0600) and
rewritten in place rather than re-created with the process's umask. The registry cache is a second
file beside it, keyed by server URL and the registry's version.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

CONFIG_NAME = "config.json"
REGISTRY_NAME = "actions.json"


def config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "rolloutui"


def _read_json(path: Path) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (FileNotFoundError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_private(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` so that no moment exists where another user could read it: the file is
    created with mode 0600 (``os.open``), and an existing one is narrowed to 0600 before writing."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, json.dumps(data, indent=2).encode())
    finally:
        os.close(fd)


def load() -> dict[str, Any]:
    return _read_json(config_dir() / CONFIG_NAME)


def save(server: str, token: str, username: str) -> Path:
    path = config_dir() / CONFIG_NAME
    _write_private(path, {"server": server, "token": token, "username": username})
    return path


def cached_registry(server: str) -> dict[str, Any] | None:
    entry = _read_json(config_dir() / REGISTRY_NAME).get(server)
    return entry if isinstance(entry, dict) and isinstance(entry.get("actions"), list) else None


def store_registry(server: str, document: dict[str, Any]) -> None:
    path = config_dir() / REGISTRY_NAME
    data = _read_json(path)
    data[server] = document
    _write_private(path, data)

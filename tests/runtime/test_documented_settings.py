"""Every environment variable the settings read is documented for the people who set it.

A variable that exists only in ``rolloutui/settings.py`` is a setting nobody can find: the install
guide's table (docs/install.md, "Environment variables") names each one with its default and meaning.
The variables are found by reading the settings module's source (every call of the settings' ``_env*``
helpers, ``os.environ.get`` or ``os.getenv`` with a literal name), so a new variable fails this test
until its row is written.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = ROOT / "rolloutui" / "settings.py"
INSTALL_GUIDE = ROOT / "docs" / "install.md"


def _called_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def variables_read_by_the_settings() -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(SETTINGS.read_text())):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        called = _called_name(node)
        reads_env = (
            called.startswith("_env")
            or called in ("getenv",)
            or (called == "get" and isinstance(node.func, ast.Attribute) and "environ" in ast.unparse(node.func.value))
        )
        first = node.args[0]
        if reads_env and isinstance(first, ast.Constant) and isinstance(first.value, str):
            names.add(first.value)
    return names


def variables_in_the_install_guides_table() -> set[str]:
    text = INSTALL_GUIDE.read_text()
    section = text[text.index("## Environment variables") :]
    # A row may name several related variables in its first cell: `A` / `B` / `C`.
    first_cells = re.findall(r"^\|([^|]*)\|", section, flags=re.MULTILINE)
    return {name for cell in first_cells for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", cell)}


def test_the_settings_reader_finds_the_variables_it_is_meant_to_find():
    found = variables_read_by_the_settings()
    assert {"REDIS_URL", "ROLLOUTUI_SECRET_KEY", "ROLLOUTUI_TRUSTED_PROXIES", "ROLLOUTUI_OIDC_CLIENT_ID"} <= found


def test_every_environment_variable_the_settings_read_has_a_row_in_the_install_guide():
    missing = sorted(variables_read_by_the_settings() - variables_in_the_install_guides_table())
    assert not missing, f"add a row for each to docs/install.md's 'Environment variables' table: {missing}"

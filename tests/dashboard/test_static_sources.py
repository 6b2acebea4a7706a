"""The browser code builds no HTML from strings and the templates hold no inline script, so a
forged status value cannot run script and a ``script-src 'self'`` policy can be switched on."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "static" / "js").rglob("*.js"))
TEMPLATES = sorted((ROOT / "templates").rglob("*.html"))

# Every way a script can turn a string into markup or code.
HTML_SINKS = re.compile(
    r"\.innerHTML|\.outerHTML|insertAdjacentHTML|document\.write|createContextualFragment|DOMParser"
    r"|\beval\(|new Function\(|setTimeout\(\s*[\"'`]|setInterval\(\s*[\"'`]"
)


def test_there_are_scripts_and_templates_to_check():
    assert len(SCRIPTS) >= 10 and len(TEMPLATES) >= 4


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_script_turns_a_string_into_html_or_code(path):
    found = [(n, line.strip()) for n, line in enumerate(path.read_text().splitlines(), 1) if HTML_SINKS.search(line)]
    assert not found, f"{path.relative_to(ROOT)}: {found}"


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_template_has_an_inline_script_or_event_handler(path):
    text = path.read_text()
    inline = [m.group(0) for m in re.finditer(r"<script\b[^>]*>", text) if "src=" not in m.group(0)]
    handlers = re.findall(r"\son[a-z]+\s*=", text)
    assert not inline and not handlers and "javascript:" not in text, (inline, handlers)

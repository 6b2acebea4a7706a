"""``{{ value|page_json:"element-id" }}``: Django's ``json_script`` with the JSON made by orjson;
``{{ state|page_state_json:"element-id" }}``: the same of the state's compact form
(``rolloutui.compactstate``: a third of the bytes at 1,000 groups), for the detail page.

The detail page carries its first state (``initial-state``) in the HTML so that it draws before the
websocket opens. For a 1,000-group ModelServing that state is 1.6 MB of JSON, and Django's
``json_script`` (``json.dumps`` with its encoder class, then ``str.translate`` of every character)
took 25 ms of CPU of the page's ~80 ms on the server; orjson and three byte replacements take 3 ms
(``python -m bench fanout``, bench/README.md).

The output is the element Django's filter writes, and the same escapes make it safe: ``<``, ``>``
and ``&`` become ``\\u003C``, ``\\u003E`` and ``\\u0026``, so no text of the value can close the
script element or open a comment in it. Unlike ``json.dumps``, non-ASCII characters are written
as themselves (UTF-8), which ``JSON.parse`` reads the same. A value orjson refuses (a non-string
key, an integer over 64 bits, a type it does not know) goes to ``json_script`` itself.
"""

from __future__ import annotations

from typing import Any

import orjson
from django import template
from django.utils.html import escape, json_script
from django.utils.safestring import SafeString, mark_safe

from rolloutui.compactstate import compact_state

register = template.Library()

# The bytes that must not appear as themselves inside a <script> element's text, and their JSON
# escapes (the table of django.utils.html.json_script).
_ESCAPES = ((b"<", b"\\u003C"), (b">", b"\\u003E"), (b"&", b"\\u0026"))


def script_safe_json(value: Any) -> str:
    """The JSON text of ``value`` with ``<``, ``>`` and ``&`` escaped: safe as a script element's
    text. Raises TypeError for what orjson cannot encode.

    >>> script_safe_json({"phase": "</script><b>&"})
    '{"phase":"\\\\u003C/script\\\\u003E\\\\u003Cb\\\\u003E\\\\u0026"}'
    """
    data = orjson.dumps(value)
    for raw, escaped in _ESCAPES:
        if raw in data:
            data = data.replace(raw, escaped)
    return data.decode()


@register.filter(is_safe=True)
def page_json(value: Any, element_id: str) -> SafeString:
    try:
        text = script_safe_json(value)
    except TypeError:  # orjson.JSONEncodeError is one
        return json_script(value, element_id)
    return mark_safe(f'<script id="{escape(element_id)}" type="application/json">{text}</script>')


@register.filter(is_safe=True)
def page_state_json(state: Any, element_id: str) -> SafeString:
    """The detail page's first state, compact (``expandState`` in static/js/detail/compact.js
    reads it back): 1.6 MB of JSON at 1,000 groups became 0.54 MB, which the browser downloads,
    tokenises and parses before its first render; the same escapes as ``page_json``."""
    return page_json(compact_state(state), element_id)

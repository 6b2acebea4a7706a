"""The API's JSON parser: DRF's, refusing a body nested deeper than ``MAX_DEPTH`` before parsing it.

Place in the flow: every API view parses its body with ``DepthLimitedJSONParser`` (settings
``REST_FRAMEWORK["DEFAULT_PARSER_CLASSES"]``); ``RequestRecords``, which reads its own body, calls
``check_depth``. Why: Python's ``json`` recurses once per level, so ~200 kB of ``[`` (well under the
body limit) raised ``RecursionError`` (a 500) on any endpoint, anonymous ones included.

``check_depth`` is one linear scan: strings are skipped (a ``[`` inside ``"..."`` is text) and the
brackets counted, stopping at the first level past the limit. The limit is twice the merge
patch's (``controller.core.mergepatch.MAX_DEPTH``, 32), so a preview's patch one level too deep
still reaches the merge patch's own check, which names the field (``patch``); nothing a ModelServing
holds comes near either. A refusal is a 400 naming the ``body`` (``errors.exception_handler``).
"""

from __future__ import annotations

import re

from rest_framework import exceptions
from rest_framework.parsers import JSONParser

from controller.core import mergepatch

MAX_DEPTH = 2 * mergepatch.MAX_DEPTH
# A JSON string (escapes included; an unterminated one runs to the end, so no position is scanned
# twice): removed before counting, so a bracket inside a string is text.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


class TooDeep(ValueError):
    """A JSON text nesting deeper than the limit."""


def check_depth(text: str | bytes, *, max_depth: int = MAX_DEPTH) -> None:
    """``TooDeep`` when ``text`` (JSON) nests arrays and objects deeper than ``max_depth``. Linear in
    the length of ``text``; a text that is not JSON at all is left to the parser to refuse."""
    if isinstance(text, bytes | bytearray):
        text = bytes(text).decode("utf-8", errors="replace")
    if text.count("[") + text.count("{") <= max_depth:
        return  # too few brackets to nest deeper, whatever their order (most bodies)
    depth = 0
    for char in _NOT_BRACKET.sub("", _STRING.sub("", text)):
        if char in "[{":
            depth += 1
            if depth > max_depth:
                raise TooDeep(f"the JSON body nests deeper than {max_depth} levels")
        else:
            depth -= 1


class DepthLimitedJSONParser(JSONParser):
    """``JSONParser`` that reads the body once, checks its depth (``check_depth``), then parses it."""

    def parse(self, stream, media_type=None, parser_context=None):
        import io

        raw = stream.read() if stream is not None else b""
        try:
            check_depth(raw)
        except TooDeep as exc:
            raise exceptions.ParseError(str(exc)) from None
        return super().parse(io.BytesIO(raw), media_type, parser_context)


__all__ = ["MAX_DEPTH", "DepthLimitedJSONParser", "TooDeep", "check_depth"]

"""A JSON renderer for the API's large reads: the bytes Django REST framework's ``JSONRenderer``
writes, made by orjson.

``GET /api/workloads/`` with 10,000 ModelServings is 2.8 MB of JSON, which the list page reads
every 5 s; DRF's renderer (``json.dumps`` with its encoder class) took 24 ms of CPU of it, orjson
5 ms (``python -m bench list --count 10000``, bench/README.md).

The output is what ``JSONRenderer`` writes in the API's settings (compact, UTF-8, U+2028 and
U+2029 escaped): values orjson does not know (dates, decimals, lazy strings) go through DRF's own
encoder, and anything orjson refuses (a non-string key, an integer over 64 bits) or an indented
response (``Accept: application/json; indent=2``) keeps DRF's own path. One difference: a NaN
float, which DRF refuses, is written as null; use it for views whose data has no such floats.
"""

from __future__ import annotations

from typing import Any

import orjson
from rest_framework.renderers import JSONRenderer

# Values orjson would write its own way (a datetime with microseconds, a dataclass, a subclass of
# str or int) are handed to DRF's encoder instead, which writes them as the API always has.
_PASSTHROUGH = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS


class FastJSONRenderer(JSONRenderer):
    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None) -> bytes:
        if data is None:
            return b""
        if self.get_indent(accepted_media_type or "", renderer_context or {}) is not None:
            return super().render(data, accepted_media_type, renderer_context)
        try:
            text = orjson.dumps(data, default=self.encoder_class().default, option=_PASSTHROUGH)
        except (orjson.JSONEncodeError, TypeError):
            return super().render(data, accepted_media_type, renderer_context)
        # DRF escapes the two line separators JavaScript once refused in a string literal.
        return text.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")

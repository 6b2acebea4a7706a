"""``{% module_preloads "js/detail/main.js" %}``: a ``<link rel="modulepreload">`` for a page
script and every module it imports, directly or not, for the page's ``<head>``.

A page's module script is fetched when the parser reaches its ``<script>`` tag at the end of the
body, and each ``import`` is discovered only once the module that names it has been fetched and
parsed: the detail page's 30 modules came in three waves, after the whole HTML had arrived. On a
busy host each wave waited for the browser's network process (a trace at load ~11: 550 ms between
the HTML's end and the module's start). Listed in the head, all of them are fetched while the
HTML still streams, and compiled as they arrive.

The list is read from the scripts themselves (their static ``import ... from "..."`` and
``export ... from "..."`` lines, relative paths only), so it cannot drift from them; it is
remembered per entry script, except with DEBUG (where a script may change while the server
runs).
"""

from __future__ import annotations

import posixpath
import re
from functools import lru_cache

from django import template
from django.conf import settings
from django.contrib.staticfiles import finders
from django.templatetags.static import static
from django.utils.html import format_html_join
from django.utils.safestring import SafeString

register = template.Library()

# `import x from "./a.js"`, `import { a, b as c } from "../b.js"` (over several lines too),
# `import * as d from "./d.js"`, `export { e } from "./e.js"` and `import "./f.js"`: the clause
# before `from` is names, braces, commas and `*` only, so a string in code never matches.
_STATIC_IMPORT = re.compile(
    r"""^\s*(?:import|export)\s*[\w$\s{},*]*?\s*from\s*["']([^"']+)["']|^\s*import\s*["']([^"']+)["']""",
    re.MULTILINE,
)


def imported_paths(path: str, text: str) -> list[str]:
    """The static paths (relative to STATIC_URL) of the modules ``text`` (the module at ``path``)
    imports by a relative specifier, in the order written.

    >>> imported_paths("js/detail/main.js", 'import { api } from "../lib/api.js";\\nimport "./x.js";')
    ['js/lib/api.js', 'js/detail/x.js']
    """
    found = []
    for match in _STATIC_IMPORT.finditer(text):
        spec = match.group(1) or match.group(2)
        if spec.startswith(("./", "../")):
            found.append(posixpath.normpath(posixpath.join(posixpath.dirname(path), spec)))
    return found


def module_graph(entry: str) -> list[str]:
    """``entry`` and every module it imports, directly or not (each once, in the order met)."""
    seen = {entry: None}
    queue = [entry]
    while queue:
        path = queue.pop(0)
        found = finders.find(path)
        if not found:
            continue
        with open(found, encoding="utf-8") as fh:
            text = fh.read()
        for dependency in imported_paths(path, text):
            if dependency not in seen:
                seen[dependency] = None
                queue.append(dependency)
    return list(seen)


_remembered_graph = lru_cache(maxsize=32)(module_graph)


@register.simple_tag
def module_preloads(entry: str) -> SafeString:
    paths = module_graph(entry) if settings.DEBUG else _remembered_graph(entry)
    return format_html_join("", '<link rel="modulepreload" href="{}">', ((static(p),) for p in paths))

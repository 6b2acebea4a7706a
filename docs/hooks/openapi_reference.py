"""MkDocs hook: the REST API reference page, generated from the OpenAPI schema at every build.

The schema is the one the running product serves at ``/api/schema/`` (drf-spectacular reads the
views, serializers and the action registry), written by ``manage.py spectacular`` in a child
process, so the reference cannot drift from the code and the build needs no server and no network.
essentials-openapi turns it into Markdown; the page exists only in the built site (a virtual file),
so nothing generated is committed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from mkdocs.structure.files import File, Files
from openapidocs.mk.v3 import OpenAPIV3DocumentationHandler

# Where the page appears in the site (and in mkdocs.yml's nav).
REFERENCE_PAGE = "api-reference.md"

INTRODUCTION = """\
# REST API reference

Every operation of the REST API, generated from the OpenAPI schema each time this site is built
(the same schema the product serves at `/api/schema/`, and shows with Swagger UI at `/api/docs/`).
How to authenticate, what the controls answer and what each error means is on the
[REST API](api.md) page.

"""


def _schema(repository: Path) -> dict:
    """The OpenAPI schema as ``manage.py spectacular`` writes it, from a throwaway state folder."""
    with tempfile.TemporaryDirectory(prefix="rolloutui-docs-") as scratch:
        out = Path(scratch) / "openapi.json"
        env = {**os.environ, "ROLLOUTUI_VAR_DIR": str(Path(scratch) / "var")}
        # The schema does not depend on the database; SQLite keeps the build off any server.
        env.pop("DATABASE_URL", None)
        subprocess.run(
            [sys.executable, "manage.py", "spectacular", "--format", "openapi-json", "--file", str(out)],
            cwd=repository,
            env=env,
            check=True,
        )
        return json.loads(out.read_text())


# The example a uuid without one of its own gets: the generator would draw a new one at every build.
UUID_EXAMPLE = "3fa85f64-5717-4562-b3fc-2c963f66afa6"


def _with_fixed_examples(node):
    """The schema with an example on every uuid field that has none, so two builds of the same code
    give the same page."""
    if isinstance(node, dict):
        fixed = {key: _with_fixed_examples(value) for key, value in node.items()}
        if fixed.get("format") == "uuid" and "example" not in fixed:
            fixed["example"] = UUID_EXAMPLE
        return fixed
    if isinstance(node, list):
        return [_with_fixed_examples(item) for item in node]
    return node


def _markdown(schema: dict) -> str:
    rendered = OpenAPIV3DocumentationHandler(_with_fixed_examples(schema), style="MKDOCS").write()
    # The generator opens with its own title (the schema's); the page has ours instead.
    body = rendered.split("\n# ", 1)[1].split("\n", 1)[1] if "\n# " in rendered else rendered
    return INTRODUCTION + body


def on_files(files: Files, config) -> Files:
    repository = Path(config["config_file_path"]).parent
    files.append(File.generated(config, REFERENCE_PAGE, content=_markdown(_schema(repository))))
    return files

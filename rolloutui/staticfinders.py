"""A static files finder for third-party browser assets that ship inside Python wheels.

Only the listed files are exposed (the plotly wheel's package_data also holds ~10 MB of datasets
and a widget bundle that the dashboard never loads), under the `vendor/` prefix, so
`{% static 'vendor/plotly.min.js' %}` works with WhiteNoise and with collectstatic alike.

Plotly is 4.6 MB. The pages load it under a name that carries its version and a hash of its content
(``vendor/plotly-<version>.<sha256[:12]>.min.js``, the template variable ``plotly_src`` from the
``vendor_urls`` context processor), with a gzip copy beside it (1.4 MB): WhiteNoise sends the gzip
copy to browsers that accept it and marks the hashed name immutable (cached for a year: settings'
WHITENOISE_IMMUTABLE_FILE_TEST), so a browser fetches it once per Plotly version. The two files
are made once in ``<ROLLOUTUI_VAR_DIR>/vendor/`` (a second or two of gzip at the first start after
an install; ``manifest.json`` there says which source they were made from) and made again when the
wheel's file changes. The plain ``vendor/plotly.min.js`` is still served, uncompressed, for
anything that links it.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.metadata
import importlib.resources
import json
import os
import tempfile
from pathlib import Path

from django.conf import settings
from django.contrib.staticfiles.finders import BaseFinder
from django.core.checks import Error
from django.core.files.storage import FileSystemStorage

PREFIX = "vendor"


def plotly_source() -> Path:
    return Path(str(importlib.resources.files("plotly") / "package_data")) / "plotly.min.js"


def cache_dir() -> Path:
    return Path(settings.VAR_DIR) / "vendor"


def _write_atomically(target: Path, write) -> None:
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix="." + target.name)
    try:
        with os.fdopen(fd, "wb") as out:
            write(out)
        os.chmod(tmp, 0o644)  # as a copied file would be (mkstemp makes it 0600)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def hashed_plotly(directory: Path | None = None) -> Path | None:
    """The hashed copy of the wheel's plotly.min.js in ``directory`` (the var dir's vendor/ by
    default), with its ``.gz`` beside it; made (or made again) when missing or when the wheel's
    file changed since. None when the wheel has no plotly.min.js (manage.py check says so)."""
    source = plotly_source()
    if not source.is_file():
        return None
    directory = directory or cache_dir()
    stat = source.stat()
    made_from = {"source": str(source), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    manifest = directory / "manifest.json"
    try:
        recorded = json.loads(manifest.read_text())
        target = directory / recorded["name"]
        if recorded["from"] == made_from and target.is_file() and target.with_name(target.name + ".gz").is_file():
            return target
    except (OSError, ValueError, KeyError, TypeError):
        pass
    directory.mkdir(parents=True, exist_ok=True)
    content = source.read_bytes()
    version = importlib.metadata.version("plotly")
    target = directory / f"plotly-{version}.{hashlib.sha256(content).hexdigest()[:12]}.min.js"
    _write_atomically(target, lambda out: out.write(content))
    _write_atomically(
        target.with_name(target.name + ".gz"), lambda out: out.write(gzip.compress(content, compresslevel=9, mtime=0))
    )
    _write_atomically(manifest, lambda out: out.write(json.dumps({"name": target.name, "from": made_from}).encode()))
    # Copies made from an older wheel are removed.
    for old in directory.glob("plotly-*.min.js*"):
        if old.name not in (target.name, target.name + ".gz"):
            old.unlink(missing_ok=True)
    return target


def vendor_files() -> dict[str, Path]:
    """Map of static path (relative to PREFIX) -> file on disk."""
    files = {"plotly.min.js": plotly_source()}
    hashed = hashed_plotly()
    if hashed is not None:
        files[hashed.name] = hashed
        files[hashed.name + ".gz"] = hashed.with_name(hashed.name + ".gz")
    return files


def vendor_urls(request) -> dict:
    """Context processor: ``plotly_src``, the URL of the hashed, compressed Plotly."""
    from django.templatetags.static import static

    hashed = hashed_plotly()
    return {"plotly_src": static(f"{PREFIX}/{hashed.name if hashed else 'plotly.min.js'}")}


class VendorFinder(BaseFinder):
    def check(self, **kwargs):
        return [
            Error(
                f"Static asset {PREFIX}/plotly.min.js not found at {path}",
                hint="Reinstall the package that ships it (pip install -e '.[test]').",
                id="rolloutui.E001",
            )
            for path in (plotly_source(),)
            if not path.is_file()
        ]

    def find(self, path, find_all=False, **kwargs):
        prefix = PREFIX + "/"
        if path.startswith(prefix):
            found = vendor_files().get(path[len(prefix) :])
            if found is not None and found.is_file():
                return [str(found)] if find_all else str(found)
        return [] if find_all else None

    def list(self, ignore_patterns):
        for name, path in vendor_files().items():
            if path.is_file():
                storage = FileSystemStorage(location=str(path.parent))
                # collectstatic and WhiteNoise both prepend `storage.prefix` to the listed path.
                storage.prefix = PREFIX
                yield name, storage

"""A static files finder for third-party browser assets that ship inside Python wheels.

Only the listed files are exposed (the plotly wheel's package_data also holds ~10 MB of datasets
and a widget bundle that the dashboard never loads), under the `vendor/` prefix, so
`{% static 'vendor/plotly.min.js' %}` works with WhiteNoise and with collectstatic alike.
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path

from django.contrib.staticfiles.finders import BaseFinder
from django.core.checks import Error
from django.core.files.storage import FileSystemStorage

PREFIX = "vendor"


def vendor_files() -> dict[str, Path]:
    """Map of static path (relative to PREFIX) -> file on disk."""
    plotly_dir = Path(str(importlib.resources.files("plotly") / "package_data"))
    return {"plotly.min.js": plotly_dir / "plotly.min.js"}


class VendorFinder(BaseFinder):
    def check(self, **kwargs):
        return [
            Error(
                f"Static asset {PREFIX}/{name} not found at {path}",
                hint="Reinstall the package that ships it (pip install -e '.[test]').",
                id="rolloutui.E001",
            )
            for name, path in vendor_files().items()
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

"""The error KServe's validation raises here: the field path and the rule, like ``spec.ValidationError``."""

from __future__ import annotations

from ..spec import ValidationError


class KServeError(ValidationError):
    """An InferenceService or its ConfigMap breaks a rule KServe (or the API server) enforces."""

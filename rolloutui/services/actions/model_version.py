"""A model version's actions (target ``MODEL_VERSION``): its approval for release, and deprecation.

Their services are ``services.releases.records``; the permission is the approver's
(``release_records.APPROVE``), not the operator's.
"""

from __future__ import annotations

from ..releases import records as release_records
from .registry import Action, register
from .targets import MODEL_VERSION

APPROVE = register(
    Action(
        name="approve",
        label="Approve",
        help=(
            "Approve a Registered model version for release (who, when and why are kept). Environments that "
            "require approval, such as production, take only approved versions."
        ),
        service=release_records.approve,
        audit="approve",
        permission=release_records.APPROVE,
        target=MODEL_VERSION,
        tone="primary",
    )
)

DEPRECATE = register(
    Action(
        name="deprecate",
        label="Deprecate",
        help="Mark a model version Deprecated: no new release may use it (a rollback to a release of it still may).",
        service=release_records.deprecate,
        audit="deprecate",
        permission=release_records.APPROVE,
        target=MODEL_VERSION,
    )
)

"""The action registry: every operator control declared once, for the page, the REST API and the CLI.

Place in the flow: an operator asks for a control through one of three entry points, and each is
generated from (or reads) the declarations:

- the REST API (``rolloutui.api``): one route ``POST /api/modelservings/{ns}/{name}/<action.name>`` per
  action, its request serializer built from ``action.args`` (OpenAPI documents each body);
- the CLI (``manage.py rollout <action.name> NAMESPACE/NAME --reason ... --<arg> ...``): one subcommand
  per action, one flag per argument;
- the detail page: ``page_description`` is rendered into the page as JSON (``rollout-actions``), and the
  page's buttons and dialogs are built from it.

All three end in ``perform``: it validates the values against the declaration (``clean``: a
``ControlError`` naming the field) and calls the action's service function (for the rollout controls
``rolloutui.services.controls``), the single implementation (permission check, reason, merge patch with
conflict retry, ``AuditRecord``, reconcile). A declaration names that function, the permission it
needs and the ``AuditRecord.action`` it writes; ``tests/dashboard/test_actions.py`` checks that every
declared action is reachable from all three entry points and audits under its declared name.

The package, by flow:

- ``registry``: the declaration types (``Arg``, ``Preset``, ``Action``), the registry (``register``,
  ``get``, ``all_actions``), ``perform`` and the descriptions the entry points are built from;
- ``targets``: the kinds of object an action acts on (``Target``): a ModelServing (the default;
  service ``service(user, namespace, name, ...)``), a model version (``MODEL_VERSION``:
  ``service(user, model, version, ...)``), a release (``DEPLOYMENT_REVISION``: ``service(user,
  namespace, name, number, ...)``) or a KServe InferenceService (``INFERENCESERVICE``);
- one declaration module per target: ``modelserving``, ``model_version``, ``release``, ``kserve``.
  They are imported below in that order, which is the order of the page's buttons and the CLI's help.

Adding a control is one ``register(Action(...))`` in its target's module (after its service function
exists): the route, the subcommand, the schema and the page description follow.
"""

from __future__ import annotations

# The declaration modules register their actions when imported: this order is the registry's order
# (the page's buttons, the CLI's help), so it is kept as written rather than sorted.
# isort: off
from . import modelserving
from . import model_version
from . import release
from . import kserve

# isort: on
from .kserve import ISVC_CANARY, ISVC_PAUSE, ISVC_PROMOTE, ISVC_RESUME, ISVC_ROLLBACK, ISVC_SET_IMAGE
from .model_version import APPROVE, DEPRECATE
from .modelserving import (
    ABORT,
    APPLY,
    APPLY_ADVICE,
    AUTOSCALE,
    DELETE,
    PAUSE,
    PROMOTE,
    RESUME,
    ROLLBACK,
    SCALE,
    SET_IMAGE,
)
from .registry import (
    BOOLEAN,
    COLLECTION,
    INTEGER,
    OBJECT,
    REASON,
    STRING,
    Action,
    Arg,
    Preset,
    all_actions,
    allowed,
    collection_description,
    get,
    page_description,
    perform,
    register,
    registry_document,
)
from .release import DEPLOY, PROMOTE_RELEASE, ROLLBACK_LAYER, ROLLBACK_RELEASE
from .targets import DEPLOYMENT_REVISION, INFERENCESERVICE, MODEL_VERSION, MODELSERVING, TARGETS, Target

__all__ = [
    "ABORT",
    "APPLY",
    "APPLY_ADVICE",
    "APPROVE",
    "AUTOSCALE",
    "BOOLEAN",
    "COLLECTION",
    "DELETE",
    "DEPLOY",
    "DEPLOYMENT_REVISION",
    "DEPRECATE",
    "INFERENCESERVICE",
    "INTEGER",
    "ISVC_CANARY",
    "ISVC_PAUSE",
    "ISVC_PROMOTE",
    "ISVC_RESUME",
    "ISVC_ROLLBACK",
    "ISVC_SET_IMAGE",
    "MODELSERVING",
    "MODEL_VERSION",
    "OBJECT",
    "PAUSE",
    "PROMOTE",
    "PROMOTE_RELEASE",
    "REASON",
    "RESUME",
    "ROLLBACK",
    "ROLLBACK_LAYER",
    "ROLLBACK_RELEASE",
    "SCALE",
    "SET_IMAGE",
    "STRING",
    "TARGETS",
    "Action",
    "Arg",
    "Preset",
    "Target",
    "all_actions",
    "allowed",
    "collection_description",
    "get",
    "kserve",
    "model_version",
    "modelserving",
    "page_description",
    "perform",
    "register",
    "registry_document",
    "release",
]

"""The service layer: the only place the operator controls are implemented (docs/interfaces.md).

Pages, the REST API, websocket consumers, the CLI and Celery tasks are thin callers of:

- ``actions``: the action registry, every operator control declared once (name, label, permission,
  arguments, service function, audit name); the API routes, the CLI subcommands and the page's
  controls are generated from it, and all run ``actions.perform``;
- ``controls``: pause, resume, promote, rollback, set_image (permission, audit, reconcile);
- ``cluster``: the active backend (``get_cluster``, ``get_router``, ``backend_name``);
- ``state``: list rows, the state view, the manifest, pods, revisions and their diff, progress history;
- ``audit``: searching the audit trail;
- ``simulation``: fault injection and the preview of a merge patch (simulated backend only);
- ``preview``: the preview of what the operator asked for (a patch or a set-image);
- ``accounts``: the operator account runall ensures and the CLI's default acting user;
- ``streaming``: the Channels group of a ModelServing and the state broadcast.
"""

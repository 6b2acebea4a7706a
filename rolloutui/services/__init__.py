"""The service layer: the only place the operator controls are implemented (docs/interfaces.md).

Pages, the REST API, websocket consumers, the CLI and Celery tasks are thin callers of:

- ``cluster``: the active backend (``get_cluster``, ``get_router``, ``backend_name``);
- ``state``: list rows, the state view, revisions and their diff, progress history;
- ``controls``: pause, resume, promote, rollback, set_image (permission, audit, reconcile);
- ``simulation``: fault injection and the preview of a change (simulated backend only);
- ``streaming``: the Channels group of a ModelServing and the state broadcast.
"""

"""The Channels group of one ModelServing and the state broadcast (``{"type": "state.update"}``).

Implemented in ``controller.runtime.publish`` (the controller's reconcile task publishes after every
pass and may not import the dashboard); re-exported here as the dashboard's entry point.
``publish_state`` never raises: if Redis is down it logs and returns.
"""

from __future__ import annotations

from controller.runtime.publish import group_name, publish_state

__all__ = ["group_name", "publish_state"]

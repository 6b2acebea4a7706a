"""The controller core: pure Python, no Django, Celery, Channels or kubernetes imports.

Modules:
- ``naming``: labels, annotations and names the controller writes on cluster objects.
- ``ports``: the protocols the reconcile pass talks to (cluster, router, clock).
- ``intorpercent``, ``spec``: API types, defaults and validation of a ModelServing manifest.
- ``strategy``: the effective rollout strategy with the source of every value.
- ``revisions``: canonical projection, hashing, history, GC, rollback and diff.
- ``observe``: pods -> role instances -> ServingGroups.
- ``planner``: plan(spec, revisions, observed, now) -> Plan.
- ``reconcile``: one reconcile pass against the ports.
- ``controls``: pause / resume / promote / rollback / setImage as manifest patches.
"""

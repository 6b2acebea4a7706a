"""Releases: the service side of model versions, environments and deployment revisions.

- ``records``: register, list and read the records; approve and deprecate a version;
- ``deploy``: deploy a release, roll back to a release, promote one to production, and the layered
  comparison the dialogs show;
- ``templates`` (pure): what a release writes into a ModelServing's role templates, read back per layer;
- ``status``: the post-reconcile hook that moves a release to Serving or Failed;
- ``demo``: the demo's model versions, environments and first release (``manage.py load_release_demo``).
"""

"""Release records (Django app ``releases``): model versions, environments and their targets, and
deployment revisions. Models and admin here; the behaviour is in ``rolloutui.services.releases``."""

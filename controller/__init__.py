"""The controller (a Django app): the pure core (``core``), the simulated cluster (``simcluster``),
the Kubernetes adapter (``k8s``), the app plumbing that runs reconciles (``runtime``), the Celery
tasks (``tasks``) and the ``simulate`` command. It never imports the dashboard (``rolloutui``)."""

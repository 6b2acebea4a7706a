"""Management commands of the dashboard: ``runall`` (make run), ``rollout`` (the CLI), ``release``,
``grant`` and ``load_release_demo``."""

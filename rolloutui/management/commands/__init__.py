"""The dashboard's commands: ``runall``, ``rollout``, ``release``, ``grant``, ``load_release_demo``."""

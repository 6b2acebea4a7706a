"""Benchmarks: ``python -m bench <name> [--json]`` runs ``bench.<name>.main(argv)``."""

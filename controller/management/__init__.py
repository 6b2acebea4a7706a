"""Management commands of the controller app: ``simulate`` (replay a scenario on the in-memory cluster)
and ``load_demo`` (the demo on the live simulated cluster)."""

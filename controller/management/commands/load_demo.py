"""`manage.py load_demo`: a demo cluster and ModelServing `default/demo`, if the cluster is empty.

Idempotent: nodes are created only when there are none, the demo ModelServing only when there is no
ModelServing at all (an operator's own objects are never touched), and the physics configuration
only when none is stored. `manage.py runall` calls it on every start.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from controller.runtime.backend import sim_cluster
from controller.simcluster.database.demo import load_demo


class Command(BaseCommand):
    help = "Create the demo nodes and ModelServing default/demo on the simulated cluster if it is empty."

    def add_arguments(self, parser):
        parser.add_argument("--nodes", type=int, default=6, help="Nodes to create (default 6).")
        parser.add_argument("--gpus", type=int, default=8, help="GPUs per node (default 8).")

    def handle(self, *args, **options):
        from django.conf import settings

        if getattr(settings, "ROLLOUTUI_BACKEND", "sim") != "sim":
            raise CommandError("load_demo needs the simulated cluster (ROLLOUTUI_BACKEND=sim)")
        if options["nodes"] < 1 or options["gpus"] < 1:
            raise CommandError("--nodes and --gpus must be at least 1")
        done = load_demo(sim_cluster(actor="operator"), nodes=options["nodes"], gpus=options["gpus"])
        for line in done or ["the simulated cluster is not empty: nothing to do"]:
            self.stdout.write(line)

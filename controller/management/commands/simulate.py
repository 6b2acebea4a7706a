"""``python manage.py simulate SCENARIO.yaml [--out TRACE.json] [--seed N]``.

Runs the real controller against the embedded simulated cluster on a virtual clock (no Redis,
Celery or network) and writes the trace. Exit 0 when the run completed; 2 with a one-line error
naming the field for an invalid scenario or manifest. A thin caller of ``controller.simcluster``.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from controller.simcluster.runner import run_to_json
from controller.simcluster.scenario import ScenarioError, load_scenario


class Command(BaseCommand):
    help = "Replay a rollout scenario on the simulated cluster and write its trace (JSON)."
    requires_system_checks: list = []
    requires_migrations_checks = False

    def add_arguments(self, parser):
        parser.add_argument("scenario", help="scenario YAML (format: docs/scenarios.md)")
        parser.add_argument("--out", help="write the trace here (default: stdout)")
        parser.add_argument("--seed", type=int, help="override the scenario's seed")

    def handle(self, *args, **options):
        try:
            scenario = load_scenario(options["scenario"], seed=options.get("seed"))
        except ScenarioError as exc:
            # Django prints it as one line on stderr ("CommandError: invalid scenario: <field>: ...").
            raise CommandError(f"invalid scenario: {exc}", returncode=2) from None
        text = run_to_json(scenario)
        if options.get("out"):
            with open(options["out"], "w") as fh:
                fh.write(text)
        else:
            self.stdout.write(text, ending="")

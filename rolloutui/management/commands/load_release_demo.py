"""`manage.py load_release_demo`: the demo's model versions, environments and first releases
(``rolloutui.services.releases.demo``), if the release registry is empty. ``runall`` runs it after
``load_demo``; it acts as the operator account (``ROLLOUTUI_ADMIN_USER``, default ``admin``)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from rolloutui.services import accounts
from rolloutui.services.releases.demo import load_release_demo


class Command(BaseCommand):
    help = "Load the release demo (two model versions, staging and production, r1 deployed) if there are no releases."

    def add_arguments(self, parser):
        parser.add_argument("--user", default=accounts.admin_username(), help="Acting user (the operator account).")

    def handle(self, *args, **options):
        from django.conf import settings
        from django.contrib.auth import get_user_model

        if getattr(settings, "ROLLOUTUI_BACKEND", "sim") != "sim":
            raise CommandError("load_release_demo needs the simulated cluster (ROLLOUTUI_BACKEND=sim)")
        User = get_user_model()
        try:
            user = User.objects.get(username=options["user"])
        except User.DoesNotExist:
            raise CommandError(
                f"user: no user named {options['user']!r} (runall creates the operator account)"
            ) from None
        done = load_release_demo(user)
        for line in done or ["the release registry is not empty: nothing to do"]:
            self.stdout.write(line)

"""`manage.py grant`: namespace grants of the product's roles (``rolloutui.models.NamespaceGrant``).

    manage.py grant list
    manage.py grant add    --user alice   --namespace team-a --role operator
    manage.py grant add    --group sre    --namespace '*'    --role viewer
    manage.py grant remove --user alice   --namespace team-a --role operator

Roles are the product groups' (``viewer``, ``operator``, ``ingester``, ``approver``,
``release-admin``: ``rolloutui.permissions.ROLE_GROUPS``). ``*`` is every namespace. Membership of
the groups ``viewers`` / ``operators`` keeps meaning every namespace; manage those with Django's
own tools.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from rolloutui import permissions


class Command(BaseCommand):
    help = "List, add or remove per-namespace grants of the product's roles to users or groups."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="verb", required=True)
        sub.add_parser("list", help="Every grant.")
        for verb in ("add", "remove"):
            p = sub.add_parser(verb, help=f"{verb.capitalize()} one grant.")
            who = p.add_mutually_exclusive_group(required=True)
            who.add_argument("--user", help="A user name.")
            who.add_argument("--group", help="A group name.")
            p.add_argument("--namespace", required=True, help="A namespace, or '*' for every namespace.")
            p.add_argument("--role", required=True, choices=sorted(permissions.roles()))

    def handle(self, *args, **o):
        from django.contrib.auth import get_user_model
        from django.contrib.auth.models import Group

        from rolloutui.models import NamespaceGrant

        if o["verb"] == "list":
            for grant in NamespaceGrant.objects.select_related("user", "group").order_by("namespace", "role", "id"):
                self.stdout.write(str(grant))
            return
        try:
            who = (
                {"user": get_user_model().objects.get(username=o["user"])}
                if o["user"]
                else {"group": Group.objects.get(name=o["group"])}
            )
        except (get_user_model().DoesNotExist, Group.DoesNotExist):
            raise CommandError(f"{'user' if o['user'] else 'group'}: no such {o['user'] or o['group']!r}") from None
        namespace = o["namespace"].strip()
        if not namespace:
            raise CommandError("namespace: required ('*' for every namespace)")
        if o["verb"] == "add":
            grant, created = NamespaceGrant.objects.get_or_create(**who, namespace=namespace, role=o["role"])
            self.stdout.write(f"{'added' if created else 'already there'}: {grant}")
        else:
            removed, _ = NamespaceGrant.objects.filter(**who, namespace=namespace, role=o["role"]).delete()
            self.stdout.write(f"removed {removed} grant(s)")

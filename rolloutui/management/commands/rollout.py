"""`manage.py rollout ACTION NAMESPACE/NAME --reason ... [--user ...]`: the controls from a shell.

    manage.py rollout pause     default/demo --reason "p99 up" --user alice
    manage.py rollout resume    default/demo --reason "fixed"
    manage.py rollout promote   default/demo --reason "canary ok" [--partition N | --full]
    manage.py rollout rollback  default/demo --reason "bad build" --to-revision 1
    manage.py rollout set-image default/demo --reason "v0.9.2" --role decode \
        --image vllm/vllm-openai:v0.9.2 [--container engine]

A thin caller of ``rolloutui.services.controls`` with ``source="cli"``: the same permission check,
audit record and reconcile as the dashboard and the API. ``--user`` must name an existing user with
the operate permission (default: ``$ROLLOUTUI_CLI_USER``, else ``$ROLLOUTUI_ADMIN_USER``, else
``admin``, the account ``runall`` creates). Exit status 1 with a one-line error naming the field.
"""

from __future__ import annotations

import os

from django.core.management.base import BaseCommand, CommandError

ACTIONS = ("pause", "resume", "promote", "rollback", "set-image")


class Command(BaseCommand):
    help = "Pause, resume, promote, roll back or set the image of a ModelServing (audited, source cli)."

    def add_arguments(self, parser):
        parser.add_argument("action", choices=ACTIONS)
        parser.add_argument("target", metavar="NAMESPACE/NAME")
        parser.add_argument(
            "--reason", required=True, help="Why (kept in the audit trail and the revision's change-cause)."
        )
        default_user = os.environ.get("ROLLOUTUI_CLI_USER") or os.environ.get("ROLLOUTUI_ADMIN_USER") or "admin"
        parser.add_argument("--user", default=default_user, help=f"Acting user (default {default_user!r}).")
        parser.add_argument("--partition", type=int, help="promote: set the partition to N.")
        parser.add_argument("--full", action="store_true", help="promote: partition 0 and resume.")
        parser.add_argument("--to-revision", type=int, help="rollback: the revision number to go back to.")
        parser.add_argument("--role", help="set-image: the role.")
        parser.add_argument("--image", help="set-image: the new image.")
        parser.add_argument("--container", help="set-image: the container (default: the first).")

    def handle(self, *args, **o):
        from django.contrib.auth import get_user_model

        from controller.core.controls import ControlError
        from controller.core.ports import ClusterError, NotFound
        from rolloutui.services import controls

        namespace, sep, name = o["target"].partition("/")
        if not sep or not namespace or not name:
            raise CommandError(f"target: expected NAMESPACE/NAME, got {o['target']!r}")
        User = get_user_model()
        try:
            user = User.objects.get(username=o["user"])
        except User.DoesNotExist:
            raise CommandError(f"user: no user named {o['user']!r} (choose one with --user)") from None
        action = o["action"]
        common = {"reason": o["reason"], "source": "cli"}
        try:
            if action == "pause":
                record = controls.pause(user, namespace, name, **common)
            elif action == "resume":
                record = controls.resume(user, namespace, name, **common)
            elif action == "promote":
                record = controls.promote(user, namespace, name, partition=o["partition"], full=o["full"], **common)
            elif action == "rollback":
                if o["to_revision"] is None:
                    raise CommandError("to-revision: required for rollback (--to-revision N)")
                record = controls.rollback(user, namespace, name, to_revision=o["to_revision"], **common)
            else:
                for key in ("role", "image"):
                    if not o[key]:
                        raise CommandError(f"{key}: required for set-image (--{key} ...)")
                record = controls.set_image(
                    user, namespace, name, role=o["role"], image=o["image"], container=o["container"], **common
                )
        except controls.ControlDenied as exc:
            raise CommandError(f"permission denied: {exc}") from None
        except ControlError as exc:
            raise CommandError(f"{exc.field}: {exc}" if exc.field else str(exc)) from None
        except NotFound as exc:
            raise CommandError(f"target: {exc}") from None
        except ClusterError as exc:
            raise CommandError(f"{type(exc).__name__}: {exc}") from None
        revisions = f"revision {record.from_revision or '?'} -> {record.to_revision or '?'}"
        self.stdout.write(f"{action} {namespace}/{name}: ok ({revisions}; audit #{record.pk}, by {record.actor_name})")

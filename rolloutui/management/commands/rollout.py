"""`manage.py rollout ACTION NAMESPACE/NAME --reason ... [--user ...] [flags]`: the controls from a shell.

    manage.py rollout pause     default/demo --reason "p99 up" --user alice
    manage.py rollout resume    default/demo --reason "fixed"
    manage.py rollout promote   default/demo --reason "canary ok" [--partition N | --full]
    manage.py rollout rollback  default/demo --reason "bad build" --to-revision 1
    manage.py rollout set-image default/demo --reason "v0.9.2" --role decode \
        --image vllm/vllm-openai:v0.9.2 [--container engine]

    manage.py rollout approve          demo-llm:v2 --reason "eval 4711 passed" --user alice
    manage.py rollout deploy           default/demo/r3 --reason "v2 to staging"
    manage.py rollout rollback-release default/demo/r1 --reason "v2 answers wrongly"
    manage.py rollout promote-release  default/demo/r3 --reason "green in staging" [--environment production]

One subcommand per action of the registry (``rolloutui.services.actions``), its positional argument
naming an object of the action's target (``NAMESPACE/NAME``, ``MODEL:VERSION`` or
``NAMESPACE/NAME/rN``), one flag per declared argument (``toRevision`` -> ``--to-revision``; a
boolean is a switch), run through ``actions.perform`` with ``source="cli"``: the same validation,
permission check, audit record and reconcile as the dashboard and the API. ``--user`` must name an
existing user with the action's permission (default: ``$ROLLOUTUI_CLI_USER``, else
``$ROLLOUTUI_ADMIN_USER``, else ``admin``, the account ``runall`` creates). Whoever can run this
command can act as any such user (it has the database), so the audit record also names the
operating-system account that ran it (``os_user``) and the authentication method ``cli``. Exit
status 1 with a one-line error naming the field.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from controller.core.controls import ControlError
from controller.core.ports import ClusterError, NotFound
from rolloutui.services import accounts, actions, origin
from rolloutui.services.controls import ControlDenied

SOURCE = "cli"


class Command(BaseCommand):
    help = (
        "Run an operator control on a ModelServing, a model version or a release (audited, source cli): "
        + ", ".join(a.name for a in actions.all_actions())
    )

    def add_arguments(self, parser):
        subcommands = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
        user = accounts.cli_username()
        for action in actions.all_actions():
            sub = subcommands.add_parser(action.name, help=action.help, description=action.help)
            sub.add_argument("target", metavar=action.target.metavar, help=f"The {action.target.label}.")
            sub.add_argument("--reason", required=True, help=actions.REASON.help)
            sub.add_argument("--user", default=user, help=f"Acting user (default {user!r}).")
            for arg in action.args:
                if arg.type == actions.BOOLEAN:
                    sub.add_argument(arg.flag, dest=arg.param, action="store_true", help=arg.help)
                else:
                    kind = int if arg.type == actions.INTEGER else str
                    sub.add_argument(arg.flag, dest=arg.param, type=kind, metavar=arg.metavar, help=arg.help)

    def handle(self, *args, **o):
        from django.contrib.auth import get_user_model

        action = actions.get(o["action"])
        try:
            keys = action.target.parse(o["target"])
        except ControlError as exc:
            raise CommandError(f"target: {exc}") from None
        values = {arg.name: o[arg.param] for arg in action.args}
        for arg in action.args:
            if arg.required and values[arg.name] in (None, ""):
                flag = arg.flag.removeprefix("--")
                raise CommandError(f"{flag}: required for {action.name} ({arg.flag} {arg.metavar})")
        User = get_user_model()
        try:
            user = User.objects.get(username=o["user"])
        except User.DoesNotExist:
            raise CommandError(f"user: no user named {o['user']!r} (choose one with --user)") from None
        ran_by = origin.Origin(auth_method="cli", os_user=origin.os_user())
        try:
            with origin.acting(ran_by):
                record = actions.perform(action, user, *keys.values(), {**values, "reason": o["reason"]}, source=SOURCE)
        except ControlDenied as exc:
            raise CommandError(f"permission denied: {exc}") from None
        except ControlError as exc:
            raise CommandError(f"{exc.field}: {exc}" if exc.field else str(exc)) from None
        except NotFound as exc:
            raise CommandError(f"target: {exc}") from None
        except ClusterError as exc:
            raise CommandError(f"{type(exc).__name__}: {exc}") from None
        what = action.target.describe(*keys.values())
        revisions = f"revision {record.from_revision or '?'} -> {record.to_revision or '?'}; "
        if action.target is not actions.MODELSERVING and not (record.from_revision or record.to_revision):
            revisions = ""
        self.stdout.write(f"{action.name} {what}: ok ({revisions}audit #{record.pk}, by {record.actor_name})")

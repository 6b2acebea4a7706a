"""`manage.py release VERB ...`: the release records from a shell.

    manage.py release versions [--model chat-llm] [--status Approved]
    manage.py release version chat-llm:v2                       (JSON)
    manage.py release register version.json [--reason ...]      (JSON or YAML; - reads stdin)
    manage.py release environments
    manage.py release environment staging                       (JSON)
    manage.py release create-environment env.yaml
    manage.py release history [NAMESPACE/NAME] [--environment staging]
    manage.py release show default/demo/r3                      (JSON)
    manage.py release plan --environment staging --version chat-llm:v2 [--target default/demo]
                           [--profile pd-standard] [--config '{"batching": {"maxBatchSize": 8}}'] --reason ...
    manage.py release change default/demo/r3                    (what deploying/restoring r3 changes, per layer)

The actions on versions and releases (approve, deprecate, deploy, rollback-release,
promote-release) are subcommands of ``manage.py rollout`` like every control of the action registry.
Every verb calls ``rolloutui.services.releases`` (the same checks, permissions and audit as the API);
writes act as ``--user`` (default as ``manage.py rollout``). Exit status 1 with a one-line error
naming the field.
"""

from __future__ import annotations

import json
import sys

import yaml
from django.core.management.base import BaseCommand, CommandError

from controller.core import safeyaml
from controller.core.controls import ControlError
from controller.core.ports import ClusterError, NotFound
from rolloutui.services import accounts, actions
from rolloutui.services.controls import ControlDenied
from rolloutui.services.releases import deploy, records

SOURCE = "cli"


def _table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    lines = ["  ".join(str(v).ljust(w) for v, w in zip(row, widths)).rstrip() for row in [header, *rows]]
    return "\n".join(lines)


class Command(BaseCommand):
    help = "Release records: model versions, environments, deployment revisions (list, show, register, plan)."

    def add_arguments(self, parser):
        verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
        user = accounts.cli_username()

        def writer(sub):
            sub.add_argument("--user", default=user, help=f"Acting user (default {user!r}).")

        sub = verbs.add_parser("versions", help="List model versions.")
        sub.add_argument("--model")
        sub.add_argument("--status", choices=["Registered", "Approved", "Deprecated"])
        sub = verbs.add_parser("version", help="Show one model version (JSON).")
        sub.add_argument("key", metavar="MODEL:VERSION")
        sub = verbs.add_parser("register", help="Register a model version from a JSON or YAML file (- for stdin).")
        sub.add_argument("file")
        sub.add_argument("--reason", default="")
        writer(sub)
        verbs.add_parser("environments", help="List environments and what runs on their targets.")
        sub = verbs.add_parser("environment", help="Show one environment (JSON).")
        sub.add_argument("name")
        sub = verbs.add_parser("create-environment", help="Create an environment from a JSON or YAML file.")
        sub.add_argument("file")
        sub.add_argument("--reason", default="")
        writer(sub)
        sub = verbs.add_parser("history", help="List deployment revisions, newest first.")
        sub.add_argument("target", nargs="?", metavar="NAMESPACE/NAME")
        sub.add_argument("--environment")
        sub.add_argument("--status")
        sub = verbs.add_parser("show", help="Show one deployment revision (JSON).")
        sub.add_argument("release", metavar=actions.DEPLOYMENT_REVISION.metavar)
        sub = verbs.add_parser("plan", help="Plan a release (Pending); `rollout deploy` starts it.")
        sub.add_argument("--environment", required=True)
        sub.add_argument("--version", dest="model_version", required=True, metavar="MODEL:VERSION")
        sub.add_argument("--target", metavar="NAMESPACE/NAME")
        sub.add_argument("--profile", dest="resource_profile")
        sub.add_argument("--config", help="Batching/timeout overrides as JSON.")
        sub.add_argument("--reason", required=True)
        sub.add_argument(
            "--deploy",
            action="store_true",
            help="Deploy it at once, in the same action: a refused deploy leaves no Pending release.",
        )
        writer(sub)
        sub = verbs.add_parser("change", help="What deploying or restoring a release changes now, per layer.")
        sub.add_argument("release", metavar=actions.DEPLOYMENT_REVISION.metavar)

    def handle(self, *args, **o):
        try:
            getattr(self, "verb_" + o["verb"].replace("-", "_"))(o)
        except ControlDenied as exc:
            raise CommandError(f"permission denied: {exc}") from None
        except ControlError as exc:
            raise CommandError(f"{exc.field}: {exc}" if exc.field else str(exc)) from None
        except NotFound as exc:
            raise CommandError(f"not found: {exc}") from None
        except ClusterError as exc:
            raise CommandError(f"{type(exc).__name__}: {exc}") from None

    # -- helpers ---------------------------------------------------------------------------------------------
    def _user(self, o):
        from django.contrib.auth import get_user_model

        User = get_user_model()
        try:
            return User.objects.get(username=o["user"])
        except User.DoesNotExist:
            raise CommandError(f"user: no user named {o['user']!r} (choose one with --user)") from None

    @staticmethod
    def _load(path: str):
        try:
            text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()
        except OSError as exc:
            raise CommandError(f"file: cannot read {path}: {exc.strerror}") from None
        try:
            return safeyaml.load(text)  # JSON is YAML; the bounded reader every user-supplied YAML goes through
        except safeyaml.YamlRefused as exc:
            where = f" ({exc.path})" if exc.path else ""
            raise CommandError(f"file: {path} is refused{where}: {exc}") from None
        except yaml.YAMLError as exc:
            raise CommandError(f"file: {path} is neither JSON nor YAML: {exc}") from None

    def _json(self, value) -> None:
        self.stdout.write(json.dumps(value, indent=2, sort_keys=False))

    def _release(self, text: str):
        return records.get_release(**actions.DEPLOYMENT_REVISION.parse(text))

    # -- verbs -----------------------------------------------------------------------------------------------
    def verb_versions(self, o):
        rows = [
            [mv.model, mv.version, mv.status, mv.runtime_image, mv.approved_by_name or "", f"{mv.created_at:%Y-%m-%d}"]
            for mv in records.model_versions(model=o["model"], status=o["status"])
        ]
        self.stdout.write(_table(rows, ["MODEL", "VERSION", "STATUS", "IMAGE", "APPROVED BY", "CREATED"]))

    def verb_version(self, o):
        model, version = records.parse_version_key(o["key"], "key")
        self._json(records.model_version_json(records.get_model_version(model, version), with_deployments=True))

    def verb_register(self, o):
        mv, record = records.register_model_version(
            self._user(o), self._load(o["file"]), reason=o["reason"], source=SOURCE
        )
        self.stdout.write(f"registered {mv.key} ({mv.status}; audit #{record.pk}, by {record.actor_name})")

    def verb_environments(self, o):
        rows = []
        for env in records.environments():
            shown = records.environment_json(env)
            for t in shown["targets"] or [{"namespace": "", "name": "", "active": None}]:
                active = t.get("active")
                live = f"r{active['number']} {active['model']}:{active['version']} {active['status']}" if active else ""
                target = f"{t['namespace']}/{t['name']}" if t["name"] else "(no targets)"
                rows.append([env.name, "yes" if env.requires_approval else "no", target, live])
        self.stdout.write(_table(rows, ["ENVIRONMENT", "APPROVAL", "TARGET", "LIVE RELEASE"]))

    def verb_environment(self, o):
        env = records.environments().filter(name=o["name"]).first()
        if env is None:
            raise CommandError(f"not found: environment {o['name']} does not exist")
        self._json(records.environment_json(env))

    def verb_create_environment(self, o):
        env, record = records.create_environment(
            self._user(o), self._load(o["file"]), reason=o["reason"], source=SOURCE
        )
        self.stdout.write(f"created environment {env.name} (audit #{record.pk}, by {record.actor_name})")

    def verb_history(self, o):
        namespace = name = None
        if o["target"]:
            namespace, _, name = o["target"].partition("/")
            if not namespace or not name:
                raise CommandError(f"target: expected NAMESPACE/NAME, got {o['target']!r}")
        rows = [
            [
                f"{dr.target.namespace}/{dr.target.name}",
                f"r{dr.number}",
                dr.model_version.key,
                dr.environment.name,
                dr.status,
                dr.controller_revision or "",
                dr.deployed_by_name or dr.created_by_name,
                dr.reason,
            ]
            for dr in records.releases(namespace=namespace, name=name, environment=o["environment"], status=o["status"])
        ]
        self.stdout.write(
            _table(rows, ["TARGET", "RELEASE", "VERSION", "ENVIRONMENT", "STATUS", "REVISION", "BY", "WHY"])
        )

    def verb_show(self, o):
        self._json(records.release_json(self._release(o["release"])))

    def verb_plan(self, o):
        values = {"environment": o["environment"], "modelVersion": o["model_version"], "reason": o["reason"]}
        if o["target"]:
            values["target"] = o["target"]
        if o["resource_profile"]:
            values["resourceProfile"] = o["resource_profile"]
        if o["config"]:
            try:
                values["config"] = json.loads(o["config"])
            except ValueError as exc:
                raise CommandError(f"config: not JSON: {exc}") from None
        if o.get("deploy"):
            dr, record = deploy.create_and_deploy(self._user(o), {**values, "deploy": True}, source=SOURCE)
            ref = f"{dr.target.namespace}/{dr.target.name}/r{dr.number}"
            self.stdout.write(
                f"deployed {ref} ({dr.model_version.key}) to {dr.environment.name}: {dr.status} (audit #{record.pk})"
            )
            return
        dr, record = records.create_release(self._user(o), values, source=SOURCE)
        ref = f"{dr.target.namespace}/{dr.target.name}/r{dr.number}"
        self.stdout.write(
            f"planned {ref} ({dr.model_version.key}) in {dr.environment.name}: {dr.status} (audit #{record.pk}); "
            f"start it with: manage.py rollout deploy {ref} --reason ..."
        )

    def verb_change(self, o):
        keys = actions.DEPLOYMENT_REVISION.parse(o["release"])
        change = deploy.release_change(**keys)
        live = change["live"]
        self.stdout.write(f"r{keys['number']} against the live {'r' + str(live['number']) if live else 'templates'}:")
        for layer in change["layers"]:
            if not layer["changes"]:
                self.stdout.write(f"  {layer['layer']}: unchanged")
                continue
            self.stdout.write(f"  {layer['layer']}:")
            for c in layer["changes"]:
                self.stdout.write(f"    {c['role']} {c['field']}: {c['from']!r} -> {c['to']!r}")

"""`manage.py rollout SUBCOMMAND ...`: RolloutUI from a shell, in the manner of `kubectl argo rollouts`.

Reading (view permission; ``-o json|yaml`` for scripts, a table or summary otherwise):

    manage.py rollout list     [-n NAMESPACE] [--phase PHASE]
    manage.py rollout get      NAMESPACE/NAME [--watch [--timeout S]]
    manage.py rollout status   NAMESPACE/NAME [--timeout S]     # exit 0 done, 1 failed, 2 timed out
    manage.py rollout history  NAMESPACE/NAME
    manage.py rollout diff     NAMESPACE/NAME --from N --to M
    manage.py rollout audit    [NAMESPACE/NAME] [--action A] [--who U] [--source S] [--limit N]
    manage.py rollout preview  NAMESPACE/NAME --role R --image I [--container C]   (simulated cluster)
    manage.py rollout advise   NAMESPACE/NAME --role R --image I [--container C] [--limit N] [--floor G] [--json]

Controls (operate permission, audited with source ``cli``): one subcommand per action of the
registry (``rolloutui.services.actions``), one flag per declared argument (``toRevision`` ->
``--to-revision``; a boolean is a switch; an argument read from a file is ``-f FILE``, ``-`` for
standard input), run through ``actions.perform``: the same validation, permission check, audit
record and reconcile as the dashboard and the API.

    manage.py rollout pause     default/demo --reason "p99 up" --user alice
    manage.py rollout promote   default/demo --reason "canary ok" [--partition N | --full]
    manage.py rollout set-image default/demo --reason "v0.9.2" --role decode --image vllm/vllm-openai:v0.9.2
    manage.py rollout rollback  default/demo --reason "bad build" --to-revision 1
    manage.py rollout apply     -f examples/kthena/model-serving__sample.yaml --reason "try it"
    manage.py rollout delete    default/sample --reason "done"

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

``--user`` names an existing user (default: ``$ROLLOUTUI_CLI_USER``, else ``$ROLLOUTUI_ADMIN_USER``,
else ``admin``, the account ``runall`` creates). Errors are one line naming the field, exit status 1.

``status`` waits on the rollout's conditions, polling the stored state every ``--interval`` seconds
(0.5 by default): it prints a line whenever the state's message changes and exits 0 once the
controller has observed the current spec and reports it converged, 1 as soon as an instance of the
new revision fails or the progress deadline passes (``Progressing=False``,
``ProgressDeadlineExceeded``), 2 when ``--timeout`` seconds pass first (no timeout by default).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import yaml
from django.core.management.base import BaseCommand, CommandError

from controller.core.controls import ControlError
from controller.core.phases import PHASES
from controller.core.ports import ClusterError, Conflict, NotFound
from rolloutui.services import accounts, actions, audit, controls, manifests, origin, preview, state
from rolloutui.services.controls import ControlDenied

SOURCE = "cli"
VIEW = "rolloutui.view_modelserving"
EXIT_DONE, EXIT_FAILED, EXIT_TIMEOUT = 0, 1, 2
READ_COMMANDS = ("list", "get", "status", "history", "diff", "audit")
# A preview needs operate (as from the page and the API); its refusal is audited by the service.
PREVIEW = "preview"
ADVISE = "advise"  # the strategy advisor: previews of candidate strategies (operate, as a preview)


class Exit(Exception):
    """Leave with this status (``status``'s 1 and 2) after the output is written."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def _dest(arg) -> str:
    """Where argparse keeps a declared argument: apart from the command's own options, so an action
    argument named like one of them (promote-release's ``--target``) cannot take its value."""
    return f"action_{arg.param}"


def _target(value: str) -> tuple[str, str]:
    namespace, sep, name = value.partition("/")
    if not sep or not namespace or not name:
        raise CommandError(f"target: expected NAMESPACE/NAME, got {value!r}")
    return namespace, name


def _table(rows: list[list[Any]], header: list[str]) -> str:
    cells = [header, *[[("" if c is None else str(c)) for c in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells)


class Command(BaseCommand):
    help = "RolloutUI from a shell (ModelServings, model versions, releases): " + ", ".join(
        [*READ_COMMANDS, PREVIEW, ADVISE, *(a.name for a in actions.all_actions())]
    )

    def add_arguments(self, parser):
        subcommands = parser.add_subparsers(dest="command", required=True, metavar="SUBCOMMAND")
        user = accounts.cli_username()

        def add(name: str, help_text: str, *, target: bool | str = True, metavar: str = "NAMESPACE/NAME"):
            sub = subcommands.add_parser(name, help=help_text, description=help_text)
            if target == "optional":
                sub.add_argument("target", metavar=metavar, nargs="?")
            elif target:
                sub.add_argument("target", metavar=metavar)
            sub.add_argument("--user", default=user, help=f"Acting user (default {user!r}).")
            sub.add_argument("-o", "--output", choices=("json", "yaml"), help="Print JSON or YAML instead of text.")
            return sub

        sub = add("list", "List ModelServings: phase, groups ready and updated, revisions.", target=False)
        sub.add_argument("-n", "--namespace", help="Only this namespace.")
        sub.add_argument("--phase", help=f"Only this phase ({', '.join(PHASES)}).")
        sub = add("get", "Show one ModelServing's rollout: phase, revisions, groups, roles, why it waits.")
        sub.add_argument("-w", "--watch", action="store_true", help="Print again whenever it changes.")
        sub.add_argument("--timeout", type=float, help="With --watch: stop after this many seconds.")
        sub.add_argument("--interval", type=float, default=1.0, help="With --watch: seconds between reads.")
        sub = add("status", "Wait until the rollout is done (exit 0), fails (1) or --timeout passes (2).")
        sub.add_argument("--timeout", type=float, help="Seconds to wait at most (default: no limit).")
        sub.add_argument("--interval", type=float, default=0.5, help="Seconds between reads (default 0.5).")
        add("history", "List the revisions: number, hash, which is current and which the update, change cause.")
        sub = add("diff", "Field-by-field difference of two revisions' versioned fields.")
        sub.add_argument("--from", dest="from_revision", type=int, required=True, metavar="N")
        sub.add_argument("--to", dest="to_revision", type=int, required=True, metavar="M")
        sub = add("audit", "The audit trail, newest first (of one ModelServing when named).", target="optional")
        sub.add_argument("--action", help="Only this action (pause, set_image, apply, delete, ...).")
        sub.add_argument("--who", help="Only this user.")
        sub.add_argument("--source", help="Only this source (page, api, cli, scenario, system).")
        sub.add_argument("--limit", type=int, default=50, help="At most this many records (default 50).")
        sub = add("preview", "Simulate a set-image on a copy (simulated cluster only): duration, capacity dip.")
        sub.add_argument("--role", required=True)
        sub.add_argument("--image", required=True)
        sub.add_argument("--container")
        sub = add(
            ADVISE,
            "Find the fastest rollout strategy for a set-image that keeps the floor (previews of candidate "
            "strategies on a copy; simulated cluster only). Apply it with apply-advice --advice ID.",
        )
        sub.add_argument("--role", required=True)
        sub.add_argument("--image", required=True)
        sub.add_argument("--container")
        sub.add_argument("--limit", type=int, help="Simulate at most this many candidates (default 12).")
        sub.add_argument(
            "--floor", type=int, metavar="GROUPS", help="Keep at least this many groups (default: derived)."
        )
        sub.add_argument("--json", dest="output", action="store_const", const="json", help="Print JSON (as -o json).")

        for action in actions.all_actions():
            sub = add(action.name, action.help, target=action.scope == actions.OBJECT, metavar=action.target.metavar)
            sub.add_argument("--reason", required=True, help=actions.REASON.help)
            for arg in action.args:
                if arg.from_file:
                    sub.add_argument("-f", arg.flag, dest=_dest(arg), metavar="FILE", help=arg.help)
                elif arg.type == actions.BOOLEAN:
                    sub.add_argument(arg.flag, dest=_dest(arg), action="store_true", help=arg.help)
                else:
                    kind = int if arg.type == actions.INTEGER else str
                    sub.add_argument(arg.flag, dest=_dest(arg), type=kind, metavar=arg.metavar, help=arg.help)

    def execute(self, *args, **options):
        try:
            return super().execute(*args, **options)
        except Exit as leave:
            sys.exit(leave.code)

    def handle(self, *args, **o):
        from django.contrib.auth import get_user_model

        User = get_user_model()
        try:
            user = User.objects.get(username=o["user"])
        except User.DoesNotExist:
            raise CommandError(f"user: no user named {o['user']!r} (choose one with --user)") from None
        self.output = o.get("output")
        # Reads show what this user may see: secret-looking values masked unless they may operate.
        self.user = user
        command = o["command"]
        # Whoever runs this command can act as any user (it has the database): the audit also names
        # the operating-system account that ran it.
        ran_by = origin.Origin(auth_method="cli", os_user=origin.os_user())
        try:
            with origin.acting(ran_by):
                if command in READ_COMMANDS:
                    where = _target(o["target"])[0] if o.get("target") else o.get("namespace")
                    try:
                        controls.check_permission(user, VIEW, namespace=where or None)
                    except ControlDenied as exc:
                        raise CommandError(f"permission denied: {exc}") from None
                    getattr(self, "do_" + command)(o)
                elif command == PREVIEW:
                    self.do_preview(o)
                elif command == ADVISE:
                    self.do_advise(o)
                else:
                    self.do_control(actions.get(command), user, o)
        except ControlDenied as exc:
            raise CommandError(f"permission denied: {exc}") from None
        except manifests.ManifestError as exc:
            lines = [f"manifest: {exc}"]
            lines += [
                f"  document {e['document'] + 1}" + (f", line {e['line']}" if e.get("line") else "") + ": "
                f"{e['path'] + ': ' if e.get('path') else ''}{e['message']}"
                for e in exc.errors[1:]
            ]
            raise CommandError("\n".join(lines)) from None
        except ControlError as exc:
            raise CommandError(f"{exc.field}: {exc}" if exc.field else str(exc)) from None
        except NotFound as exc:
            raise CommandError(f"target: {exc}") from None
        except Conflict as exc:
            raise CommandError(f"conflict: {exc} (it changed since it was read; read it again)") from None
        except ClusterError as exc:
            raise CommandError(f"{type(exc).__name__}: {exc}") from None

    # -- output --------------------------------------------------------------------------------------

    def emit(self, data: Any, text: str | None = None) -> None:
        if self.output == "json":
            self.stdout.write(json.dumps(data, indent=2, default=str))
        elif self.output == "yaml":
            self.stdout.write(yaml.safe_dump(json.loads(json.dumps(data, default=str)), sort_keys=False).rstrip())
        else:
            self.stdout.write(text if text is not None else json.dumps(data, indent=2, default=str))

    # -- controls ------------------------------------------------------------------------------------

    def do_control(self, action: actions.Action, user, o: dict[str, Any]) -> None:
        values = {}
        for arg in action.args:
            value = o[_dest(arg)]
            if arg.from_file and value is not None:
                value = self._read(value, arg)
            values[arg.name] = value
        for arg in action.args:
            if arg.required and values[arg.name] in (None, ""):
                flag = arg.flag.removeprefix("--")
                how = "-f FILE" if arg.from_file else f"{arg.flag} {arg.metavar}"
                raise CommandError(f"{flag}: required for {action.name} ({how})")
        if action.scope == actions.OBJECT:
            try:
                keys = action.target.parse(o["target"])
            except ControlError as exc:
                raise CommandError(f"target: {exc}") from None
            record = actions.perform(action, user, *keys.values(), {**values, "reason": o["reason"]}, source=SOURCE)
            records = [record]
        else:
            records = actions.perform(action, user, {**values, "reason": o["reason"]}, source=SOURCE)
        lines = []
        for record in records:
            # An InferenceService's audit names generations (KServe makes the revisions).
            unit = "generation" if action.target is actions.INFERENCESERVICE else "revision"
            revisions = f"{unit} {record.from_revision or '?'} -> {record.to_revision or '?'}"
            outcome = (record.details or {}).get("outcome")
            collection = action.scope == actions.COLLECTION
            named = action.target.describe(*keys.values()) if not collection else f"{record.namespace}/{record.name}"
            what = f"{action.name} {named}: {outcome if collection else 'ok'}"
            has_revisions = record.from_revision or record.to_revision or action.target is actions.MODELSERVING
            extra = "" if collection or not has_revisions else f"{revisions}; "
            lines.append(f"{what} ({extra}audit #{record.pk}, by {record.actor_name})")
            # apply's probe advice: said under the ModelServing it is about; it refused nothing.
            lines.extend(f"  warning: {w}" for w in (record.details or {}).get("warnings") or [])
        self.emit([audit.record_json(r) for r in records], "\n".join(lines))

    @staticmethod
    def _read(path: str, arg: actions.Arg) -> str:
        if path == "-":
            return sys.stdin.read()
        try:
            with open(path, encoding="utf-8") as fh:
                return fh.read()
        except OSError as exc:
            raise CommandError(f"filename: cannot read {path}: {exc.strerror or exc}") from None

    # -- reading -------------------------------------------------------------------------------------

    def do_list(self, o: dict[str, Any]) -> None:
        rows = state.list_summaries(namespace=o.get("namespace") or None, phase=o.get("phase") or None)
        table = _table(
            [
                [
                    r["namespace"],
                    r["name"],
                    r["phase"],
                    f"{r['ready']}/{r['desired']}",
                    f"{r['updated']}/{r['desired']}",
                    f"{r.get('currentRevision') or '-'} -> {r.get('updateRevision') or '-'}",
                    r["strategyType"],
                ]
                for r in rows
            ],
            ["NAMESPACE", "NAME", "PHASE", "READY", "UPDATED", "REVISION (CURRENT -> UPDATE)", "STRATEGY"],
        )
        self.emit(rows, table if rows else "No ModelServings.")

    def _summary(self, view: dict[str, Any]) -> str:
        numbers = {r["hash"]: r["number"] for r in view.get("revisions") or []}

        def rev(h: str | None) -> str:
            return f"#{numbers[h]} {h}" if h in numbers else (h or "-")

        counts = view.get("counts") or {}
        lines = [
            f"Name:       {view['namespace']}/{view['name']}",
            f"Phase:      {view['phase']}" + (" (converged)" if view.get("converged") else ""),
            f"Strategy:   {view['strategyType']}  partition {view['spec']['partition']}"
            + ("  paused" if view["spec"]["paused"] else ""),
            f"Revisions:  current {rev(view.get('currentRevision'))}, update {rev(view.get('updateRevision'))}",
            f"Groups:     desired {view['spec']['replicas']}, updated {counts.get('updatedReplicas') or 0}, "
            f"available {counts.get('availableReplicas') or 0}",
        ]
        for c in view.get("conditions") or []:
            lines.append(
                f"Condition:  {c['type']}={c['status']} {c.get('reason') or ''} {c.get('message') or ''}".rstrip()
            )
        for r in view.get("roles") or []:
            lines.append(f"Role:       {r.get('name')}: progress {float(r.get('progress') or 0):.0%}")
        for w in view.get("waiting") or []:
            groups = ", ".join(str(g) for g in w.get("groups") or [] if g is not None)
            lines.append(f"Waiting:    {w.get('reason')}" + (f" (groups {groups})" if groups else ""))
        by_group: dict[int, list[str]] = {}
        for inst in view.get("instances") or []:
            mark = "" if inst["revision"] == view.get("updateRevision") else " (old)"
            by_group.setdefault(inst["group"], []).append(f"{inst['role']}[{inst['ordinal']}] {inst['state']}{mark}")
        for g in sorted(by_group):
            lines.append(f"Group {g}:    " + ", ".join(by_group[g]))
        return "\n".join(lines)

    def do_get(self, o: dict[str, Any]) -> None:
        namespace, name = _target(o["target"])
        view = state.get_state(namespace, name)
        self.emit(view, self._summary(view))
        if not o.get("watch"):
            return
        deadline = None if o.get("timeout") is None else time.monotonic() + o["timeout"]
        last = self._watch_key(view)
        try:
            while deadline is None or time.monotonic() < deadline:
                time.sleep(max(o["interval"], 0.05))
                try:
                    view = state.get_state(namespace, name)
                except NotFound:
                    self.stdout.write(f"{namespace}/{name} was deleted")
                    return
                key = self._watch_key(view)
                if key != last:
                    last = key
                    self.stdout.write("")
                    self.emit(view, self._summary(view))
        except KeyboardInterrupt:
            return

    @staticmethod
    def _watch_key(view: dict[str, Any]) -> str:
        # What `get` prints, without the clock: the cluster time alone does not make a new print.
        return json.dumps({k: v for k, v in view.items() if k not in ("time", "drain")}, sort_keys=True, default=str)

    def do_status(self, o: dict[str, Any]) -> None:
        namespace, name = _target(o["target"])
        deadline = None if o.get("timeout") is None else time.monotonic() + o["timeout"]
        last = None
        while True:
            current = state.rollout_status(namespace, name)
            if current["message"] != last:
                last = current["message"]
                if not self.output:
                    self.stdout.write(f"{current['phase']}: {current['message']}")
            if current["verdict"] != state.PROGRESSING:
                break
            if deadline is not None and time.monotonic() >= deadline:
                current = {**current, "verdict": "timeout"}
                if not self.output:
                    self.stdout.write(f"timed out after {o['timeout']:g} s: {current['message']}")
                break
            time.sleep(max(o["interval"], 0.05))
        if self.output:
            self.emit(current)
        code = {state.DONE: EXIT_DONE, state.FAILED: EXIT_FAILED}.get(current["verdict"], EXIT_TIMEOUT)
        if code:
            raise Exit(code)

    def do_history(self, o: dict[str, Any]) -> None:
        namespace, name = _target(o["target"])
        revisions = state.list_revisions(namespace, name)
        rows = [
            [
                r.get("number"),
                r.get("hash"),
                ",".join(k for k in ("current", "update") if r.get(k)),
                r.get("created") or "",
                r.get("changeCause") or ("" if r.get("readable", True) else f"unreadable: {r.get('error')}"),
            ]
            for r in revisions
        ]
        self.emit(revisions, _table(rows, ["REVISION", "HASH", "", "CREATED", "CHANGE-CAUSE"]))

    def do_diff(self, o: dict[str, Any]) -> None:
        namespace, name = _target(o["target"])
        d = state.revision_diff(namespace, name, o["from_revision"], o["to_revision"], user=self.user)
        lines = [f"revision {d['from']['number']} ({d['from']['hash']}) -> {d['to']['number']} ({d['to']['hash']})"]
        for c in d["changes"]:
            lines.append(f"  {c['change']:<8} {c['path']}: {json.dumps(c.get('from'))} -> {json.dumps(c.get('to'))}")
        if not d["changes"]:
            lines.append("  no differences in the versioned fields")
        self.emit(d, "\n".join(lines))

    def do_audit(self, o: dict[str, Any]) -> None:
        namespace = name = None
        if o.get("target"):
            namespace, name = _target(o["target"])
        records = list(
            audit.search(
                namespace=namespace, name=name, action=o.get("action"), who=o.get("who"), source=o.get("source")
            )[: max(o["limit"], 1)]
        )
        numbers: dict = {}  # the revisions' numbers now, read once per ModelServing
        shown = [audit.record_json(r, reader=self.user, numbers=numbers) for r in records]

        def revisions(r, j) -> str:
            # As numbered when the record was written, with the hash (and the number now, if a
            # rollback re-numbered it); a record of no revision shows its columns.
            ends = j.get("revisions") or {}
            if ends.get("from") or ends.get("to"):
                return " -> ".join((ends.get(side) or {}).get("text") or "-" for side in ("from", "to"))
            return f"{r.from_revision or '-'} -> {r.to_revision or '-'}"

        rows = [
            [
                r.created_at.strftime("%Y-%m-%d %H:%M:%S"),
                r.actor_name,
                r.source,
                r.action,
                f"{r.namespace}/{r.name}" if r.name else "",
                revisions(r, j),
                r.result,
                r.reason if r.result == "ok" else f"{r.reason} [{r.error}]",
            ]
            for r, j in zip(records, shown, strict=True)
        ]
        self.emit(
            shown,
            _table(rows, ["WHEN", "WHO", "SOURCE", "ACTION", "MODELSERVING", "REVISIONS", "RESULT", "REASON"]),
        )

    def do_advise(self, o: dict[str, Any]) -> None:
        from rolloutui.services import advisor

        namespace, name = _target(o["target"])
        change = {"role": o["role"], "image": o["image"]}
        if o.get("container"):
            change["container"] = o["container"]
        result = advisor.advise_for(
            self.user, namespace, name, set_image=change, limit=o.get("limit"), floor=o.get("floor"), source=SOURCE
        )
        rows = []
        for i, c in enumerate(result["candidates"]):
            mark = "*" if i == result["recommended"] else ("=" if c["current"] else "")
            took = "-" if c["durationSeconds"] is None else f"{c['durationSeconds']:g}"
            low = "-" if c["minAvailable"] is None else str(c["minAvailable"])
            rows.append(
                [f"{mark}{i}", advisor.strategy_text(c["strategy"]), took, low, str(c["gpusBorrowed"]), c["why"]]
            )
        text = "\n".join(
            [
                f"floor: {result['floor']['groups']} groups ({result['floor']['why']})",
                _table(rows, ["#", "STRATEGY", "SECONDS", "MIN", "GPUS", "WHY"]),
                f"advice: {result['summary']}",
                f"apply: manage.py rollout apply-advice {namespace}/{name} --advice {result['id']} --reason ...",
            ]
        )
        self.emit(result, text)

    def do_preview(self, o: dict[str, Any]) -> None:
        namespace, name = _target(o["target"])
        change = {"role": o["role"], "image": o["image"]}
        if o.get("container"):
            change["container"] = o["container"]
        result = preview.preview_for(self.user, namespace, name, set_image=change, source=SOURCE)
        text = json.dumps(result, indent=2, default=str)
        if result.get("durationSeconds") is not None:
            text = (
                f"converged: {result.get('converged')} after {result.get('durationSeconds')} simulated s; "
                f"at least {result.get('minAvailable')} of {result.get('desired')} groups available "
                f"(budget floor {result.get('floor')})"
            )
        self.emit(result, text)

"""The CLI's verbs: a table of reads (GET paths of the REST API) and one verb per action of the
server's registry, built from the registry document (``GET /api/actions/``) so a control declared
on the server appears here with no change to the CLI.

Pure: no network and no files; ``main`` fetches the document and runs what ``build_parser`` parsed.
"""

from __future__ import annotations

import argparse
import re
import urllib.parse
from typing import Any, NamedTuple

# How a read names its object; the control verbs take these patterns from the registry document.
TARGETS: dict[str, tuple[str, str]] = {
    "modelserving": ("NAMESPACE/NAME", r"(?P<namespace>[^/\s]+)/(?P<name>[^/\s]+)"),
    "inferenceservice": ("NAMESPACE/NAME", r"(?P<namespace>[^/\s]+)/(?P<name>[^/\s]+)"),
    "modelversion": ("MODEL:VERSION", r"(?P<model>[^:/\s]+):(?P<version>[^/\s]+)"),
    "deploymentrevision": ("NAMESPACE/NAME/rN", r"(?P<namespace>[^/\s]+)/(?P<name>[^/\s]+)/r?(?P<number>[0-9]{1,9})"),
    "environment": ("NAME", r"(?P<name>[^/\s]+)"),
    "pod": ("NAMESPACE/POD", r"(?P<namespace>[^/\s]+)/(?P<name>[^/\s]+)"),
}


# NamedTuple rather than dataclasses: the latter imports inspect, a sixth of the CLI's start-up.
class Option(NamedTuple):
    """A query parameter of a read, given as ``--flag``."""

    param: str
    help: str
    type: Any = str
    required: bool = False
    flag: str = ""
    short: str = ""

    @property
    def option(self) -> str:
        return self.flag or "--" + self.param.replace("_", "-")


class Read(NamedTuple):
    """A read verb: ``GET path`` (``{key}`` filled from the target) with ``options`` as the query.
    ``routes``: the API's URL names it covers (checked by the test that every read has a verb)."""

    verb: str
    help: str
    path: str
    routes: tuple[str, ...]
    target: str | None = None
    options: tuple[Option, ...] = ()
    optional_target: bool = False
    # A read that is a POST (a simulation that changes nothing): the options are its JSON body.
    post: bool = False


MS = "/api/modelservings/{namespace}/{name}/"
_RELEASE_FILTERS = (
    Option("environment", "Only releases to this environment."),
    Option("model", "Only releases of this model."),
    Option("version", "Only releases of this model version."),
    Option("namespace", "Only releases to this namespace.", short="-n"),
    Option("name", "Only releases to this ModelServing."),
    Option("status", "Only releases in this status."),
)

READS: tuple[Read, ...] = (
    Read(
        "list",
        "List ModelServings.",
        "/api/modelservings/",
        ("api-modelservings",),
        options=(
            Option("namespace", "Only this namespace.", short="-n"),
            Option("phase", "Only this phase (Healthy, Progressing, Paused, Blocked, Degraded)."),
            Option("search", "Substring of namespace/name."),
        ),
    ),
    Read(
        "get",
        "Show a ModelServing's rollout; --watch redraws it when it changes.",
        MS,
        ("api-modelserving",),
        "modelserving",
    ),
    Read(
        "status",
        "Wait until the rollout is done (exit 0), fails (1) or --timeout passes (2).",
        MS + "status",
        ("api-rollout-status",),
        "modelserving",
    ),
    Read("history", "The ModelServing's revisions.", MS + "revisions/", ("api-revisions",), "modelserving"),
    Read(
        "diff",
        "What changed between two revisions.",
        MS + "revisions/diff",
        ("api-revision-diff",),
        "modelserving",
        options=(
            Option("from", "The older revision number.", int, True, flag="--from"),
            Option("to", "The newer revision number.", int, True, flag="--to"),
        ),
    ),
    Read(
        "progress",
        "Sampled rollout progress (the dashboard's charts).",
        MS + "history/",
        ("api-history",),
        "modelserving",
        options=(Option("since", "Only points after this cluster time.", float),),
    ),
    Read("manifest", "The ModelServing's metadata and spec.", MS + "manifest/", ("api-manifest",), "modelserving"),
    Read(
        "capacity",
        "Capacity signals per role and the recommended replicas.",
        MS + "capacity/",
        ("api-capacity",),
        "modelserving",
    ),
    Read(
        "comparison",
        "Request figures per revision (stable vs canary) over a window.",
        MS + "comparison/",
        ("api-comparison",),
        "modelserving",
        options=(
            Option("window", "Seconds back from now (default 600).", float),
            Option("bucket", "Seconds per series point (default 60).", float),
        ),
    ),
    Read(
        "paths",
        "Requests through the roles per revision pair: consistent, mixed, refused, KV format mismatch.",
        MS + "paths/",
        ("api-paths",),
        "modelserving",
        options=(
            Option("window", "Seconds back from now (default 900, at most a day).", float),
            Option("bucket", "Seconds per series point (default 60).", float),
        ),
    ),
    Read(
        "pods",
        "Pods of a ModelServing, optionally of one group, role or role instance.",
        MS + "pods/",
        ("api-pods",),
        "modelserving",
        options=(
            Option("group", "Only this ServingGroup.", int),
            Option("role", "Only this role."),
            Option("ordinal", "Only this role instance.", int),
        ),
    ),
    Read(
        "releases",
        "The ModelServing's environment, live release and release history.",
        MS + "releases",
        ("api-modelserving-releases",),
        "modelserving",
    ),
    Read(
        "preview",
        "Simulate a change on a copy of the ModelServing (simulated cluster only).",
        MS + "preview/",
        ("api-preview", "api-preview-job"),
        "modelserving",
        options=(
            Option("role", "The role whose image changes.", required=True),
            Option("image", "The new image.", required=True),
            Option("container", "The container (default: the role's first)."),
        ),
    ),
    Read(
        "advise",
        "Find the fastest rollout strategy for a set-image that keeps the floor (previews of candidate "
        "strategies on a copy; simulated cluster only). Apply it with apply-advice --advice ID.",
        MS + "advise/",
        ("api-advise",),
        "modelserving",
        options=(
            Option("role", "The role whose image changes.", required=True),
            Option("image", "The new image.", required=True),
            Option("container", "The container (default: the role's first)."),
            Option("limit", "Simulate at most this many candidates (default 12).", int),
            Option("floor", "Keep at least this many groups (default: derived).", int),
        ),
        post=True,
    ),
    Read(
        "audit",
        "The audit trail, newest first (of one ModelServing when given).",
        "/api/audit/",
        ("api-audit",),
        "modelserving",
        optional_target=True,
        options=(
            Option("action", "e.g. pause, set_image."),
            Option("who", "The acting user's name."),
            Option("source", "page, api, cli, ..."),
            Option("result", "ok, denied, error."),
            Option("q", "Substring of the reason or the user.", flag="--search"),
            Option("page_size", "How many records (default 50).", int, flag="--limit"),
        ),
    ),
    Read(
        "events",
        "Audit records, cluster events and notifications across workloads, newest first.",
        "/api/events/",
        ("api-events",),
        options=(
            Option("namespace", "Only this namespace.", short="-n"),
            Option("workload", "Only this workload (NAME or NAMESPACE/NAME)."),
            Option("action", "An audit action, event reason or notification kind."),
            Option("who", "The acting user (or controller)."),
            Option("type", "audit, event or notification."),
            Option("since", "Only items after this time (epoch seconds).", float),
            Option("limit", "How many items (default 100, at most 500).", int),
        ),
    ),
    Read(
        "pod-events",
        "A pod's events (scheduled, pulled, started, probe failures, back-off, kills).",
        "/api/pods/{namespace}/{name}/events/",
        ("api-pod-events",),
        "pod",
    ),
    Read(
        "pod-log",
        "The last lines of a pod's engine log.",
        "/api/pods/{namespace}/{name}/log/",
        ("api-pod-log",),
        "pod",
        options=(Option("tail", "How many lines (default 200, at most 1000).", int),),
    ),
    Read(
        "workloads",
        "ModelServings and InferenceServices in one list.",
        "/api/workloads/",
        ("api-workloads",),
        options=(Option("kind", "Only this kind."),),
    ),
    Read(
        "isvc-list",
        "List InferenceServices.",
        "/api/inferenceservices/",
        ("api-inferenceservices",),
        options=(
            Option("namespace", "Only this namespace.", short="-n"),
            Option("phase", "Only this phase."),
            Option("search", "Substring of namespace/name."),
        ),
    ),
    Read(
        "isvc-get",
        "Show an InferenceService.",
        "/api/inferenceservices/{namespace}/{name}/",
        ("api-inferenceservice",),
        "inferenceservice",
    ),
    Read(
        "isvc-history",
        "Sampled progress of an InferenceService.",
        "/api/inferenceservices/{namespace}/{name}/history/",
        ("api-inferenceservice-history",),
        "inferenceservice",
    ),
    Read(
        "isvc-preview",
        "Simulate a new image on a copy of an InferenceService; nothing is applied.",
        "/api/inferenceservices/{namespace}/{name}/preview",
        ("api-inferenceservice-preview",),
        "inferenceservice",
        options=(
            Option("image", "The new image.", required=True),
            Option("component", "predictor (default), transformer or explainer."),
            Option("container", "The container (default: the component's first)."),
        ),
        post=True,
    ),
    Read(
        "notifications",
        "Recent notification deliveries (operators).",
        "/api/notifications/deliveries/",
        ("api-notification-deliveries",),
        options=(Option("page_size", "How many deliveries (default 50).", int, flag="--limit"),),
    ),
    Read(
        "model-versions",
        "List model versions.",
        "/api/model-versions/",
        ("api-model-versions",),
        options=(
            Option("model", "Only this model."),
            Option("status", "Only this status."),
            Option("q", "Substring of model, version or evaluation.", flag="--search"),
        ),
    ),
    Read(
        "model-version",
        "One model version, with its releases.",
        "/api/model-versions/{model}/{version}/",
        ("api-model-version",),
        "modelversion",
    ),
    Read("environments", "List environments.", "/api/environments/", ("api-environments",)),
    Read(
        "environment",
        "One environment, with its targets' live releases.",
        "/api/environments/{name}/",
        ("api-environment",),
        "environment",
    ),
    Read(
        "release-list",
        "List releases (deployment revisions).",
        "/api/deployment-revisions/",
        ("api-deployment-revisions",),
        options=_RELEASE_FILTERS,
    ),
    Read(
        "release-get",
        "One release, with its status events.",
        "/api/deployment-revisions/{namespace}/{name}/{number}/",
        ("api-deployment-revision",),
        "deploymentrevision",
    ),
    Read(
        "release-change",
        "What deploying or restoring a release changes now, per layer.",
        "/api/deployment-revisions/{namespace}/{name}/{number}/change",
        ("api-deployment-revision-change",),
        "deploymentrevision",
    ),
    Read("sim-nodes", "Nodes of the simulated cluster.", "/api/sim/nodes/", ("api-sim-nodes",)),
)
READS_BY_VERB = {read.verb: read for read in READS}
# Verbs of the CLI itself, never shadowed by a server action.
OWN_VERBS = ("login", "logout")


class UsageError(Exception):
    """A bad command line, naming the argument (``target: expected NAMESPACE/NAME, got 'x'``)."""


def parse_target(pattern: str, metavar: str, text: str) -> dict[str, str]:
    found = re.fullmatch(pattern, text.strip())
    if not found:
        raise UsageError(f"target: expected {metavar}, got {text!r}")
    return found.groupdict()


def fill(path: str, keys: dict[str, Any]) -> str:
    return path.format(**{k: urllib.parse.quote(str(v), safe="") for k, v in keys.items()})


def parse_duration(text: str) -> float:
    """``90``, ``90s``, ``10m``, ``1h`` -> seconds (as ``kubectl --timeout``)."""
    found = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|s|m|h)?\s*", text)
    if not found:
        raise argparse.ArgumentTypeError(f"expected a duration such as 90s, 10m or 1h, got {text!r}")
    scale = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 1}[found.group(2)]
    return float(found.group(1)) * scale


def _outputs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o", "--output", choices=("json", "yaml"), help="Print the API's answer as JSON or YAML (for scripts)."
    )
    parser.add_argument("--json", dest="output", action="store_const", const="json", help="The same as -o json.")


def _connection() -> argparse.ArgumentParser:
    """``--server`` and ``--token``, accepted before or after the verb (``rolloutui login --server URL``)."""
    common = argparse.ArgumentParser(add_help=False)
    # SUPPRESS: not given after the verb, the value given before it (or none) stands.
    common.add_argument("--server", default=argparse.SUPPRESS, help="The server's URL.")
    common.add_argument("--token", default=argparse.SUPPRESS, help="An API token.")
    return common


_COMMON = _connection()


def _add_read(sub, read: Read) -> None:
    p = sub.add_parser(read.verb, help=read.help, description=read.help, parents=[_COMMON])
    p.set_defaults(kind="read", read=read)
    if read.target:
        metavar = TARGETS[read.target][0]
        p.add_argument("target", metavar=metavar, nargs="?" if read.optional_target else None)
    for opt in read.options:
        names = [opt.short, opt.option] if opt.short else [opt.option]
        p.add_argument(*names, dest=f"q_{opt.param}", type=opt.type, required=opt.required, help=opt.help)
    if read.verb == "get":
        p.add_argument("-w", "--watch", action="store_true", help="Redraw whenever the rollout changes.")
        p.add_argument("--interval", type=parse_duration, default=2.0, help="Seconds between polls (default 2s).")
        p.add_argument("--timeout", type=parse_duration, help="Stop watching after this long (10m, 1h).")
    if read.verb == "status":
        p.add_argument("--timeout", type=parse_duration, help="Give up (exit 2) after this long: 90s, 10m, 1h.")
        p.add_argument("--interval", type=parse_duration, default=2.0, help="Seconds between polls (default 2s).")
    _outputs(p)


def arg_dest(arg: dict[str, Any]) -> str:
    return "a_" + arg["name"]


def _add_action(sub, action: dict[str, Any]) -> None:
    p = sub.add_parser(
        action["name"], help=action.get("help", ""), description=action.get("help", ""), parents=[_COMMON]
    )
    p.set_defaults(kind="action", action=action)
    if action.get("scope") != "collection":
        p.add_argument("target", metavar=action["target"]["metavar"], help=f"The {action['target']['label']}.")
    groups: dict[str, Any] = {}
    for names in action.get("exclusive") or []:
        group = p.add_mutually_exclusive_group()
        for name in names:
            groups[name] = group
    for arg in action["args"]:
        into = groups.get(arg["name"], p)
        names = ["-f", arg["flag"]] if arg.get("fromFile") else [arg["flag"]]
        helptext = arg.get("help", "") + (" ('-' for standard input)" if arg.get("fromFile") else "")
        if arg["type"] == "boolean":
            into.add_argument(*names, dest=arg_dest(arg), action="store_true", help=helptext)
        else:
            into.add_argument(
                *names,
                dest=arg_dest(arg),
                type=int if arg["type"] == "integer" else str,
                required=bool(arg.get("required")),
                metavar="N" if arg["type"] == "integer" else ("FILE" if arg.get("fromFile") else "..."),
                help=helptext,
            )
    _outputs(p)


def build_parser(registry: dict[str, Any] | None, prog: str = "rolloutui") -> argparse.ArgumentParser:
    """The whole command line: global options, the CLI's own verbs, the reads, then one verb per
    action of ``registry`` (``None``: the server's actions are not known yet)."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Operate RolloutUI's rollouts from anywhere, through the server's REST API.",
    )
    parser.add_argument("--server", help="The server's URL (default $ROLLOUTUI_SERVER, then `rolloutui login`'s).")
    parser.add_argument("--token", help="An API token (default $ROLLOUTUI_TOKEN, then `rolloutui login`'s).")
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    sub.required = True
    login = sub.add_parser(
        "login", help="Get a token for --server and store it in the config file (0600).", parents=[_COMMON]
    )
    login.set_defaults(kind="login")
    login.add_argument("--username", "-u", help="Default: asked.")
    login.add_argument("--password-stdin", action="store_true", help="Read the password from standard input.")
    logout = sub.add_parser("logout", help="Revoke the stored token and forget it.", parents=[_COMMON])
    logout.set_defaults(kind="logout")
    for read in READS:
        _add_read(sub, read)
    taken = set(OWN_VERBS) | set(READS_BY_VERB)
    for action in (registry or {}).get("actions") or []:
        if action["name"] not in taken:
            _add_action(sub, action)
    return parser


def action_request(action: dict[str, Any], options: dict[str, Any], read_file) -> tuple[str, dict[str, Any], str]:
    """``(path, body, what)`` of an action's ``POST`` from the parsed options. ``read_file(path)``
    reads a ``-f`` argument (``-`` for standard input)."""
    body: dict[str, Any] = {}
    for arg in action["args"]:
        value = options.get(arg_dest(arg))
        if value is None or value is False:
            continue
        body[arg["name"]] = read_file(value) if arg.get("fromFile") else value
    if action.get("scope") == "collection":
        return action["path"], body, action["name"]
    target = action["target"]
    keys = parse_target(target["cli"], target["metavar"], options["target"])
    return fill(action["path"], keys), body, f"{action['name']} {options['target']}"


def read_request(read: Read, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """``(path, query)`` of a read's ``GET`` from the parsed options."""
    query = {opt.param: options.get(f"q_{opt.param}") for opt in read.options}
    keys: dict[str, str] = {}
    if read.target and options.get("target"):
        metavar, pattern = TARGETS[read.target]
        keys = parse_target(pattern, metavar, options["target"])
    if read.optional_target:
        query.update(keys)
        return read.path, query
    return fill(read.path, keys), query

"""`tfjobgen status`, registered with the CLI (cli.FEATURE_COMMANDS).

    tfjobgen status NAME [-n NAMESPACE] [--kubeconfig F] [--context C] [--watch] [--timeout S] [--format table|json]
    tfjobgen status [-n NAMESPACE | -A] [--format table|json]          the jobs of a namespace, or of all

Exit 0 whenever the job could be read, whatever its state; 1 with one line when the cluster cannot
be reached, the job does not exist or reading it is not allowed; 2 for a usage error. Nothing
here imports more than argparse until the command runs (the Kubernetes client is imported by
read.py, by this command only).
"""

from __future__ import annotations

import sys

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def register(commands) -> None:
    status = commands.add_parser(
        "status", help="what a job is doing on a cluster: each task, the job's state, placement, progress",
        description="Read a TrainingJob's objects from a cluster (native Jobs, a JobSet or a TFJob) and say, per task, "
                    "its phase, node, restarts and why (the scheduler's reason, the exit code and what it means), and "
                    "for the job its state (waiting for admission, starting, running, succeeded, failed) with the "
                    "conditions behind it, whether its placement holds, and its training metrics when they can be "
                    "reached through the API server. Without NAME: the jobs of the namespace (docs/status.md).")
    status.add_argument("name", nargs="?", metavar="NAME", help="the TrainingJob's name (none: list the jobs)")
    status.add_argument("-n", "--namespace", help="its namespace (default: the kubeconfig context's, else default)")
    status.add_argument("-A", "--all-namespaces", action="store_true", help="list the jobs of every namespace")
    status.add_argument("--kubeconfig", metavar="FILE", help="default: $KUBECONFIG, else ~/.kube/config")
    status.add_argument("--context", help="the kubeconfig context (default: its current one)")
    status.add_argument("-w", "--watch", action="store_true", help="redraw in place until the job ends (Ctrl-C stops)")
    status.add_argument("--interval", type=_seconds, default=2.0, metavar="SECONDS",
                        help="seconds between reads with --watch (default 2)")
    status.add_argument("--timeout", type=_deadline, default=60.0, metavar="SECONDS",
                        help="give up on a read of the cluster after this long in all, however slowly it answers "
                             "(default 60; with --watch, each read)")
    status.add_argument("--format", choices=("table", "json"), default="table")
    status.set_defaults(run=_status)


def _seconds(text: str) -> float:
    import argparse

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0.2 <= value <= 3600:
        raise argparse.ArgumentTypeError("between 0.2 and 3600 seconds")
    return value


def _deadline(text: str) -> float:
    import argparse

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 1 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"{text}: between 1 and 3600 seconds")
    return value


def _status(args) -> int:
    usage = _usage_problem(args)
    if usage:
        print(f"tfjobgen status: {usage}", file=sys.stderr)
        return EXIT_USAGE
    from ..inputs.kubernetes_syntax import dns_label_problem
    from .read import Reader, StatusError, bounded

    try:
        # bounded too: an exec plugin of the kubeconfig runs here, and may wait for ever
        reader = bounded(args.timeout, lambda: Reader(args.kubeconfig, args.context))
        namespace = args.namespace or reader.default_namespace
        if dns_label_problem(namespace):
            raise StatusError(f"the kubeconfig's context names the namespace {namespace!r}, which is no DNS-1123 "
                              f"label: {dns_label_problem(namespace)}; name one with -n NAMESPACE")
        if args.name is None:
            return _list(reader, None if args.all_namespaces else namespace, args.format, args.timeout)
        return _one(reader, namespace, args)
    except StatusError as err:
        print(f"tfjobgen status: {err}", file=sys.stderr)
        return EXIT_FAILED


def _usage_problem(args) -> str:
    from ..inputs.kubernetes_syntax import dns_label_problem

    # Both go into request paths and a label selector: anything else could reach other paths or select more.
    if args.name is not None and dns_label_problem(args.name):
        return f"NAME {args.name!r}: a job name is a DNS-1123 label: {dns_label_problem(args.name)}"
    if args.namespace is not None and dns_label_problem(args.namespace):
        return f"-n {args.namespace}: a namespace is a DNS-1123 label: {dns_label_problem(args.namespace)}"
    if args.name and args.all_namespaces:
        return "-A lists the jobs of every namespace; name one job with -n NAMESPACE instead"
    if args.watch and not args.name:
        return "--watch follows one job: name it (tfjobgen status NAME -n NAMESPACE --watch)"
    if args.watch and args.format == "json":
        return "--watch redraws a table; --format json prints the status once"
    return ""


def _one(reader, namespace: str, args) -> int:
    import json

    from . import derive, render, watch
    from .read import bounded

    def read() -> derive.JobStatus:
        return derive.job_status(bounded(args.timeout, lambda: reader.job(namespace, args.name),
                                         lambda: reader.server))

    if args.watch:
        return watch.watch(read, args.interval)
    status = read()
    if args.format == "json":
        print(json.dumps(render.as_json(status), indent=1, sort_keys=True))
    else:
        print(render.text(status))
    return EXIT_OK


def _list(reader, namespace: str | None, output: str, timeout: float) -> int:
    import datetime
    import json

    from . import derive, render
    from .read import bounded

    snapshots = bounded(timeout, lambda: reader.all_jobs(namespace), lambda: reader.server)
    statuses = [derive.job_status(snapshot) for snapshot in snapshots]
    if output == "json":
        print(json.dumps(render.listing_json(statuses), indent=1, sort_keys=True))
    elif not statuses:
        print(f"no tfjobgen jobs in namespace {namespace}" if namespace else "no tfjobgen jobs in any namespace",
              file=sys.stderr)
    else:
        print(render.listing(statuses, datetime.datetime.now(datetime.timezone.utc), namespace is None))
    return EXIT_OK

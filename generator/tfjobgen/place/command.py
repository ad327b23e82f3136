"""`tfjobgen place`, registered with the CLI (cli.FEATURE_COMMANDS).

    tfjobgen place JOB... [--profile FILE] [--orders N] [--seed N] [--lose-node] [--nodes N]
                          [--kubernetes RELEASE] [--format table|json|markdown]

Nothing here imports more than argparse until the command runs.
"""

from __future__ import annotations

import sys

EXIT_OK, EXIT_FAILED = 0, 1


def register(commands) -> None:
    from ..cluster.command import node_count

    place = commands.add_parser(
        "place", help="where the real kube-scheduler puts jobs, on a fresh local cluster of their profile",
        description="Render the jobs, then for each creation order start a local cluster of the profile, create "
                    "the jobs' objects in that (shuffled) order, wait for the scheduler to settle, and report per "
                    "job: pods placed, pods Pending with the scheduler's reason, whether the topology's layout "
                    "holds, preemptions. Exit 1 when a layout breaks or a pod stays Pending.")
    place.add_argument("paths", nargs="+", metavar="JOB", help="TrainingJob files, or folders searched for *.yaml")
    place.add_argument("--profile", metavar="FILE", help="ClusterProfile file (default: the embedded profile)")
    place.add_argument("--orders", type=_orders, default=3, metavar="N", help="creation orders to try (default 3)")
    place.add_argument("--seed", type=int, default=0, help="the first order's seed (default 0)")
    place.add_argument("--lose-node", action="store_true",
                       help="after placing, evict a PS, then lose a server running the jobs' pods")
    place.add_argument("--nodes", type=node_count, metavar="N",
                       help="nodes of the main group (default: the profile's nodeCount, else what the jobs need)")
    place.add_argument("--kubernetes", default="", metavar="RELEASE",
                       help="the clusters' Kubernetes release, as for `cluster up` (default: the default release)")
    place.add_argument("--format", choices=("table", "json", "markdown"), default="table")
    place.set_defaults(run=_place)


def _orders(text: str) -> int:
    from ..cluster.command import whole_number

    return whole_number(text, "place tries at least 1 creation order")


def _place(args) -> int:
    import json

    from ..artifacts import programs
    from ..cluster import control, processes, shape
    from ..expand import pipeline
    from ..inputs.problems import InvalidInput
    from ..kit import table
    from . import place

    profile = pipeline.load_profile(args.profile)
    try:
        intents, problems = pipeline.load_given(args.paths)
    except pipeline.MissingPath as err:
        print(f"tfjobgen place: {err}", file=sys.stderr)
        return 2
    expansion = pipeline.expand(intents, profile)
    problems += expansion.problems
    if any(p.is_error for p in problems) or not intents:
        raise InvalidInput(problems or [_no_jobs(args.paths)])
    objects = expansion.in_order()
    nodes = args.nodes or place.nodes_needed(expansion.jobs, profile, spare=1 if args.lose_node else 0)
    runs = []
    for seed in range(args.seed, args.seed + args.orders):
        print(f"place: order {seed} ({seed - args.seed + 1} of {args.orders}) ...", file=sys.stderr, flush=True)
        try:
            runs.append(place.run_order(objects, profile, nodes, seed, args.lose_node, f"place-{seed}-{_pid()}",
                                        lambda line: print(f"place: {line}", file=sys.stderr, flush=True),
                                        kubernetes=args.kubernetes))
        except (control.ClusterError, programs.ToolsMissing, processes.StartFailed, TimeoutError, shape.TooManyNodes,
                place.CreateFailed) as err:
            print(f"tfjobgen place: {err}", file=sys.stderr)
            return EXIT_FAILED
    if args.format == "json":
        print(json.dumps(place.as_json(runs), indent=1))
    else:
        render = table.markdown if args.format == "markdown" else table.render
        print(render(place.HEADERS, place.rows(runs)))
        notes = place.details(runs)
        if notes:
            print("\n" + "\n".join(
                f"- {line}" if args.format == "markdown" else line for line in notes))
    return EXIT_OK if all(run.good for run in runs) else EXIT_FAILED


def _no_jobs(paths):
    from ..inputs.problems import Problem

    return Problem("no TrainingJob found (a job file has apiVersion: tfjobgen.dev/v1alpha1 and kind: TrainingJob)",
                   file=" ".join(paths))


def _pid() -> int:
    import os

    return os.getpid()

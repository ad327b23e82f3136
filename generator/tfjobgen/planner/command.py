"""`tfjobgen plan`: the command line. Nothing here imports more than argparse until the command runs."""

from __future__ import annotations

import argparse
import sys

DESCRIPTION = """\
Before a job is launched: the nodes each topology needs and what would stay Pending
(against the cluster profile), the bytes each PS will hold and move per step under
each partitioner (predicted by TensorFlow's placement rules from spec.training,
spec.model or a checkpoint), the traffic that crosses servers in each topology, and
advice that names the field to change. Exit 0, or 1 when a job has errors.
"""

EXIT_OK, EXIT_INVALID = 0, 1


def register(commands) -> None:
    parser = commands.add_parser(
        "plan", help="capacity, PS load, traffic and advice for jobs, before they run",
        description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+", metavar="PATH", help="job files, or folders searched for *.yaml")
    parser.add_argument("--profile", metavar="FILE", help="ClusterProfile file (default: the embedded profile)")
    parser.add_argument("--format", choices=("table", "json", "markdown"), default="table",
                        help="table (default), json (one object per job; a list for several jobs), or markdown")
    parser.add_argument("--checkpoint", metavar="PATH",
                        help="read the variables from a checkpoint or SavedModel (needs TensorFlow; one job only)")
    parser.add_argument("--png", metavar="FILE", help="also draw bytes per PS before and after the advice (matplotlib)")
    parser.set_defaults(run=run)


def run(args) -> int:
    import json

    from ..concerns.workload import PlanError, from_checkpoint, of_job
    from ..expand import pipeline
    from ..inputs.problems import has_errors
    from . import report

    profile = pipeline.load_profile(args.profile)
    try:
        intents, problems = pipeline.load_given(args.paths)
    except pipeline.MissingPath as err:
        print(f"tfjobgen plan: {err}", file=sys.stderr)
        return EXIT_INVALID
    problems += pipeline.empty_folders(args.paths, intents)
    if args.checkpoint and len(intents) != 1:
        print(f"tfjobgen plan: --checkpoint describes one job's variables; {len(intents)} jobs were given",
              file=sys.stderr)
        return EXIT_INVALID
    jobs, found = pipeline.check_all(intents, profile)  # as `expand` does: a broken profile plans nothing
    problems += found
    for problem in problems:
        print(problem.format(), file=sys.stderr)
    if has_errors(problems):
        return EXIT_INVALID

    plans = []
    for intent, job in zip(intents, jobs):
        try:
            if args.checkpoint:
                print(f"tfjobgen plan: reading {args.checkpoint} with TensorFlow ...", file=sys.stderr, flush=True)
                workload = from_checkpoint(args.checkpoint, job)
            else:
                workload = of_job(job)
        except PlanError as err:
            print(f"tfjobgen plan: {err}", file=sys.stderr)
            return EXIT_INVALID
        plans.append(report.make(job, profile, workload, intent.data))

    if args.png:
        import io

        from ..kit import files
        from . import chart

        picture = io.BytesIO()
        try:
            chart.draw(plans, picture)
            files.write_file(args.png, picture.getvalue())  # nothing half-written under the name asked for
        except (chart.ChartError, files.WriteFailed) as err:
            print(f"tfjobgen plan: {err}", file=sys.stderr)
            return EXIT_INVALID
    if args.format == "json":
        data = [report.as_json(p) for p in plans]
        sys.stdout.write(json.dumps(data[0] if len(data) == 1 else data, indent=2, sort_keys=True) + "\n")
    elif args.format == "markdown":
        sys.stdout.write("\n".join(report.markdown(p) for p in plans))
    else:
        sys.stdout.write("\n".join(report.text(p) for p in plans))
    if args.png:
        print(f"tfjobgen plan: wrote {args.png}", file=sys.stderr)
    return EXIT_OK

"""`tfjobgen import`: the command line. Nothing here imports more than argparse until the command runs."""

from __future__ import annotations

import argparse
import os
import sys

DESCRIPTION = """\
Turn Kubeflow TFJobs (kubeflow.org/v1, v1beta2, v1beta1, v1alpha2, v1alpha1) and Volcano Jobs
running TensorFlow PS training into TrainingJob intents: on stdout, or one file per job in -o DIR,
with a comment where import made a choice. A report lists every source field: carried over (to
which field), dropped (why), or needing a decision (the closest field): a table on stderr, or
Markdown with --report. Every intent passes tfjobgen's validation first, and its rendered pods are
compared with the source's (images, commands, resources, env). A file that cannot be imported is
refused in one line per problem, `file:line: field: what is wrong and what would be right`, and
nothing is written. Exit 0, or 1 when anything was refused.
"""

EXIT_OK, EXIT_INVALID = 0, 1


def register(commands) -> None:
    parser = commands.add_parser(
        "import", help="TrainingJobs from existing TFJobs and Volcano Jobs, with a report of every field",
        description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", metavar="FILE", help="TFJob or Volcano Job manifests (YAML)")
    parser.add_argument("-o", "--output", metavar="DIR", help="write one file per job, <name>.yaml, into DIR")
    parser.add_argument("--report", metavar="FILE", help="write the report as Markdown to FILE (default: a table on stderr)")
    parser.add_argument("--namespace", metavar="NS", help="namespace of jobs whose source names none (default: default)")
    parser.set_defaults(run=run)


def run(args) -> int:
    from ..inputs import source
    from ..inputs.problems import InvalidInput, Problem
    from ..kit import files as out
    from . import check, files, report

    problems, jobs, passed = [], [], []
    for path in args.files:
        try:
            text = source.read_text(path)
        except FileNotFoundError:
            problems.append(Problem("no such file", file=path))
            continue
        except InvalidInput as err:
            problems += err.problems
            continue
        except IsADirectoryError:
            problems.append(Problem("a folder: name the manifest files (import reads files, not folders)", file=path))
            continue
        result = files.import_text(text, path, args.namespace)
        problems += result.problems
        jobs += result.jobs
        passed += result.rows
    checked = check.all_jobs(jobs) if jobs else check.Checked()
    problems += checked.problems
    errors = [p for p in problems if p.is_error]
    for problem in sorted(errors, key=lambda p: (p.file, p.line, p.field)):
        print(problem.format(), file=sys.stderr)
    if errors:
        print(f"tfjobgen import: {len(errors)} problem(s); nothing written", file=sys.stderr)
        return EXIT_INVALID
    rows = [r for job in jobs for r in job.rows] + passed
    written = {os.path.join(args.output, f"{job.name}.yaml"): job.text for job in jobs} if args.output else {}
    taken = sorted(path for path in written if os.path.lexists(path))
    if taken:  # a job file of the same name is someone's job: import adds files, it never replaces one
        for path in taken:
            print(f"{path}: a file of this name is there already; import writes new job files only: remove it, "
                  "or import into another folder and compare", file=sys.stderr)
        print(f"tfjobgen import: {len(taken)} problem(s); nothing written", file=sys.stderr)
        return EXIT_INVALID
    warned = {job.name: [w.format() for w in job.warnings] for job in jobs}
    page = report.markdown(rows, checked.additions, warned) if args.report else ""
    # The report goes with the jobs, all or nothing, unless it is a device or pipe (/dev/stderr), written as it is.
    device = bool(args.report) and os.path.exists(args.report) and not os.path.isfile(args.report)
    if args.report and not device:
        written[args.report] = page
    try:
        if written:
            out.write_files(written)
        if device:
            out.write_file(args.report, page)
    except out.WriteFailed as err:
        print(f"tfjobgen import: {err}", file=sys.stderr)
        return EXIT_INVALID
    if not args.output:
        sys.stdout.write("---\n".join(job.text for job in jobs))
    for warning in (w for job in jobs for w in job.warnings):
        print(warning.format(), file=sys.stderr)
    if not args.report:
        print(report.text(rows), file=sys.stderr)
        for name, added in checked.additions.items():
            print(f"\n{name}: tfjobgen's own additions to every pod:", file=sys.stderr)
            for line in added:
                print(f"  - {line}", file=sys.stderr)
    counts = {o: sum(r.outcome == o for r in rows) for o in (report.CARRIED, report.DROPPED, report.DECIDE)}
    where = f" into {args.output}" if args.output else ""
    print(f"tfjobgen import: {len(jobs)} job(s){where}; fields: " + ", ".join(f"{n} {o}" for o, n in counts.items())
          + (f"; report in {args.report}" if args.report else ""), file=sys.stderr)
    return EXIT_OK

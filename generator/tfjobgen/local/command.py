"""`tfjobgen run-local`: the command line. Nothing here imports more than argparse until the command runs."""

from __future__ import annotations

import argparse

from ..shared.contract import ROLES

DESCRIPTION = """\
Run a TrainingJob's pods as local processes with real TensorFlow: the job is rendered
exactly as for kustomize, every address moves to 127.0.0.1, one process per task.
A job larger than this machine is scaled down (with a notice). Failed tasks get new
processes as the Job controller would give them new pods; a task failing for good fails
the job, and the run shows how long every other task took to end. Ctrl-C stops every
process started. Ends with a summary and PASS or FAIL.
"""


def _task_at_step(text: str) -> tuple[str, int]:
    task, sep, step = text.partition("@")
    if not sep or ":" not in task or not step.isdigit():
        raise argparse.ArgumentTypeError(f"expected ROLE:INDEX@STEP such as ps:1@150, got {text!r}")
    return task, int(step)


def _task_name(text: str) -> str:
    role, sep, index = text.partition(":")
    if not sep or role not in ROLES or not index.isdigit():
        raise argparse.ArgumentTypeError(f"expected ROLE:INDEX such as ps:1, got {text!r}")
    return text


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return int(text)


def _count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}")
    return int(text)


def register(commands) -> None:
    parser = commands.add_parser(
        "run-local", help="run a job's pods as local processes with real TensorFlow",
        description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("job", metavar="JOB.yaml", help="a file with one TrainingJob")
    parser.add_argument("--profile", metavar="FILE", help="ClusterProfile file (default: the embedded profile)")
    parser.add_argument("--steps", type=_positive, metavar="N", help="train N steps instead of training.steps")
    parser.add_argument("--scale-workers", type=_positive, metavar="N", help="run N workers")
    parser.add_argument("--scale-ps", type=_positive, metavar="N", help="run N parameter servers")
    parser.add_argument("--with-evaluator", action="store_true",
                        help="run the evaluator even when the job is scaled down")
    parser.add_argument("--restarts", type=_count, metavar="N",
                        help="new pods each failed task may get before it fails for good "
                             "(default: the job's failurePolicy.backoffLimitPerTask)")
    parser.add_argument("--startup-timeout", type=_positive, metavar="S",
                        help="seconds the chief waits for every task (default: training.startupTimeoutSeconds)")
    parser.add_argument("--model-dir", metavar="DIR",
                        help="checkpoints here (kept between runs, so a run resumes); default: a new directory")
    parser.add_argument("--work-dir", metavar="DIR", help="logs and task directories (default: under $TMPDIR)")
    parser.add_argument("--kill", type=_task_at_step, action="append", default=[], metavar="TASK@STEP",
                        help="fault injection: kill -9 TASK once the chief reported STEP, e.g. ps:1@150")
    parser.add_argument("--evict", type=_task_at_step, action="append", default=[], metavar="TASK@STEP",
                        help="a disruption: SIGTERM TASK once the chief reported STEP, as an eviction would; "
                             "its new pod does not count against its budget")
    parser.add_argument("--without", type=_task_name, action="append", default=[], metavar="TASK",
                        help="do not start TASK (e.g. ps:1): see the chief's startup deadline name it")
    parser.add_argument("--report", metavar="FILE", help="also write the result as JSON to FILE")
    parser.set_defaults(run=run)


def run(args) -> int:
    from .run import main

    return main(args)

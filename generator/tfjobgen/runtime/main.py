"""The entry point: read the task from the environment, run its role, turn failures into one line.

    python -m tfjobgen.runtime                      run the task TF_CONFIG describes
    python -m tfjobgen.runtime sample-data ...      write example TFRecord / CSV files

Exit codes: 0 done, 1 training failed (a new pod may help), 2 configuration
error (a new pod will not help), 3 the chief stayed unreachable, 4 stopped because
another task failed for good, 130 interrupted, 143 stopped by SIGTERM (its pod deleted:
termination.py). 2, 3 and 4 fail the whole job
(contract.PERMANENT_EXIT_CODES); so does any failure on a task's last attempt, and
ending.py makes sure every other task hears of it.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
import traceback

from ..shared import contract
from . import events, hadoop, settings, termination
from .control import Aborted, ChiefGone, ChiefServer, Refused
from .ending import Ending
from .errors import EXIT_ABORTED, EXIT_CHIEF_GONE, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_SETUP, SetupError, TaskFailed
from .summaries import Summaries


def main(argv: list[str]) -> int:
    if argv[:1] == ["sample-data"]:
        return _sample_data(argv[1:])
    if argv:
        print(f"usage: python -m tfjobgen.runtime [sample-data ...] (unexpected: {' '.join(argv)})", file=sys.stderr)
        return EXIT_SETUP
    code = run_task(dict(os.environ))
    sys.stdout.flush()
    sys.stderr.flush()
    # A TF server has no clean shutdown and gRPC threads can hold up interpreter exit: leave now.
    os._exit(code)


def run_task(env: dict[str, str]) -> int:
    started = time.monotonic()
    said: list[events.Reporter] = []  # the task's reporter, once it has one
    termination.exit_on_sigterm(lambda code: said[0](events.EXIT, code=code, reason="SIGTERM") if said else
                                print(events.line(events.EXIT, code=code, reason="SIGTERM"), flush=True))
    try:
        task = settings.from_env(env, cpus=len(os.sched_getaffinity(0)))
        metrics, note = _metrics(task, started)
    except SetupError as err:
        print(events.line(events.ERROR, message=str(err)), flush=True)
        return EXIT_SETUP
    report = events.Reporter(task.name)
    said.append(report)
    if metrics:
        report.listeners.append(metrics.observe)
    if task.is_chief:  # the task that reports steps writes TensorBoard summaries next to its checkpoints
        report.listeners.append(Summaries(task.training.model_dir,
                                          lambda message: report(events.NOTICE, message=message)).observe)
    if note:
        report(events.NOTICE, message=note)
    for note in task.notes:
        report(events.NOTICE, message=note)
    if task.last_attempt:
        report(events.NOTICE, message=f"last attempt ({task.failures} earlier failure(s), budget {task.retries}): "
                                      "a failure now is for good")
    _prepare_tensorflow(task)
    ending = Ending(task, report)
    code, reason = _run_role(task, report, ending)
    ending.before_exit(code, reason)
    report(events.EXIT, code=code)
    return code


def _metrics(task: settings.Task, started: float):
    """(the task's metrics, serving on its metrics port, or None; a notice when it serves none)."""
    if task.metrics_port is None:
        return None, ""
    try:
        from .metrics import Metrics

        metrics = Metrics(task, started)
    except ImportError:  # the `runtime` extra brings it: an image of your own may not
        return None, "prometheus-client is not installed: this task serves no metrics"
    try:
        metrics.serve()
    except OSError as err:
        raise SetupError(f"could not serve metrics on port {task.metrics_port}: the port is in use ({err})") \
            from None
    return metrics, f"metrics served on port {task.metrics_port}"


def _prepare_tensorflow(task: settings.Task) -> None:
    """Environment TensorFlow reads once, at import: set it before anything imports TensorFlow."""
    os.environ[contract.INTRA_OP_ENV] = str(task.intra_op)
    os.environ[contract.INTER_OP_ENV] = str(task.inter_op)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")  # C++ INFO lines bury the runtime's own events
    # TensorFlow imports Keras (its optimizers, for SavedModels of Keras objects) when it is imported, and
    # Keras imports matplotlib where it is installed. The runtime has optimizers of its own and saves
    # checkpoints only: without that import each task starts 0.7 s of CPU sooner (docs/benchmarks.md).
    sys.modules.setdefault("keras.src.optimizers", None)  # None: "not importable", which TensorFlow skips
    # Checkpoint saving retraces a small function on every save and TF warns each time; nothing to act on.
    logging.getLogger("tensorflow").addFilter(lambda record: "triggered tf.function retracing" not in
                                              record.getMessage())


def _run_role(task: settings.Task, report: events.Reporter, ending: Ending) -> tuple[int, str]:
    """(exit code, why) of the task's role."""
    try:
        if hadoop.set_classpath(task, os.environ):  # before TensorFlow (and its JVM) load
            report(events.NOTICE, message="CLASSPATH set from `hadoop classpath --glob` for hdfs://")
        # The chief listens before it imports TensorFlow (seconds), so the others register meanwhile.
        if task.is_chief:
            ending.server = _control_server(task, report, ending)
        server, started = ending.server, time.monotonic()
        if task.role == "ps" or (task.api == "tf2" and task.role == "worker"):
            from .servers import serve_until_done
            return serve_until_done(task, report, ending), ""
        if task.api == "tf2":
            from . import tf2
            if task.is_chief:
                return tf2.run_chief(task, report, server, started, ending), ""
            return tf2.run_evaluator(task, report, ending), ""
        from . import tf1
        if task.role == "evaluator":
            return tf1.run_evaluator(task, report, ending), ""
        return tf1.run_trainer(task, report, server, started, ending), ""
    except (SetupError, TaskFailed) as err:
        return _failed(report, err.exit_code, str(err))
    except Refused as err:
        return _failed(report, EXIT_SETUP, str(err))
    except ChiefGone as err:
        return _failed(report, EXIT_CHIEF_GONE, str(err))
    except Aborted as err:
        return _failed(report, EXIT_ABORTED, f"stopped by the chief: {err}")
    except KeyboardInterrupt:
        return _failed(report, EXIT_INTERRUPTED, "interrupted")
    except Exception as err:  # noqa: BLE001 - the last resort: still one line, traceback on request
        code, message = _failed(report, EXIT_FAILED, _describe(err))
        if os.environ.get(contract.DEBUG_ENV):
            traceback.print_exc()
        return code, message


def _failed(report: events.Reporter, code: int, message: str) -> tuple[int, str]:
    report(events.ERROR, message=message)
    return code, message


def _control_server(task: settings.Task, report: events.Reporter, ending: Ending) -> ChiefServer:
    def on_change(name: str, state: str) -> None:
        if state == "disconnected":
            report(events.NOTICE, message=f"{name} disconnected from the control channel")

    server = ChiefServer(task.control_address, task.job, task.control_clients, on_change=on_change,
                         on_failed=ending.task_failed)
    server.start()
    report(events.NOTICE, message=f"control server listening at {task.control_address}; waiting for "
                                  f"{len(task.peers)} tasks (threads {task.intra_op}/{task.inter_op})")
    return server


def _describe(err: Exception) -> str:
    """One line for an error nobody anticipated (TensorFlow's own errors have a `message`)."""
    text = str(getattr(err, "message", "") or err).strip()
    first = text.splitlines()[0][:300] if text else ""
    hint = "" if os.environ.get(contract.DEBUG_ENV) else " (TFJOBGEN_DEBUG=1 prints the traceback)"
    return f"{type(err).__name__}: {first}{hint}"


def _sample_data(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tfjobgen.runtime sample-data",
                                     description="Write synthetic examples in the runtime's file format.")
    parser.add_argument("path", help="the file to write (any TensorFlow filesystem)")
    parser.add_argument("--format", choices=("tfrecord", "csv"), default="tfrecord")
    parser.add_argument("--examples", type=int, default=10000)
    parser.add_argument("--vocabulary", type=int, default=100000, help="ids are drawn below this")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    from . import data

    data.write_sample(args.path, args.format, args.examples, args.vocabulary, args.seed)
    print(f"wrote {args.examples} examples to {args.path} ({args.format})")
    return 0

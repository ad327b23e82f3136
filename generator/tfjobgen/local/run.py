"""run-local from start to end: render, check, plan, run (retrying on a port collision), summarise.

This process never imports TensorFlow: the tasks do.
"""

from __future__ import annotations

import glob
import importlib.metadata
import importlib.util
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass

from .. import backends
from ..concerns import container, volumes
from ..expand import pipeline
from ..kit import files, owned
from ..shared import contract, filesystems, install
from . import machine, scrape, shape, summary, tasks
from .progress import Progress
from .shape import LocalError, Shape
from .summary import display_path
from .supervisor import Fault, PortCollision, Supervisor

EXIT_PASS, EXIT_FAIL, EXIT_CANNOT_RUN, EXIT_INTERRUPTED = 0, 1, 2, 130
PORT_ATTEMPTS = 3


@dataclass
class Prepared:
    request: tasks.JobRequest
    shape: Shape  # the tasks that run here
    overrides: tasks.Overrides
    notices: list[str]
    chief: str  # the task that coordinates: chief:0, or worker:0 in a tf1 job without a chief


def main(args) -> int:
    progress = Progress()
    try:
        prepared = prepare(args)
    except LocalError as err:
        print(f"tfjobgen run-local: {err}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    if prepared is None:
        return EXIT_FAIL  # the job itself has errors (printed)
    try:
        if args.report:
            files.check(args.report)  # now, not after the whole run
        if args.work_dir:
            os.makedirs(args.work_dir, exist_ok=True)
    except files.WriteFailed as err:
        print(f"tfjobgen run-local: {err}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    except OSError as err:
        print(f"tfjobgen run-local: cannot write {args.work_dir}: {files.why(err, args.work_dir)}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    request, counts, training = prepared.request, prepared.shape.counts, prepared.request.training or {}
    run_dir = os.path.abspath(args.work_dir or os.path.join(
        tempfile.gettempdir(), "tfjobgen-run-local", f"{request.name}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"))
    try:
        os.makedirs(run_dir, exist_ok=True)
    except OSError as err:
        print(f"tfjobgen run-local: cannot write {run_dir}: {files.why(err, run_dir)}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    steps = (prepared.overrides.steps or training["steps"]) if request.uses_runtime else 0
    startup_timeout = prepared.overrides.startup_timeout or training.get("startupTimeoutSeconds", 300)
    progress.line(f"run-local: {request.name} ({request.api}, {request.protocol}): "
                  f"{shape.describe_counts(counts)}" + (f", {steps} steps" if steps else "")
                  + f"; logs in {display_path(os.path.join(run_dir, 'logs'))}; Ctrl-C stops every task")
    for notice in prepared.notices:
        progress.line(f"run-local: {notice}")
    for name in sorted(args.without):
        progress.line(f"run-local: not starting {name} (--without): the chief's startup deadline "
                      f"({startup_timeout} s) should name it")

    result = None
    for attempt in range(1, PORT_ATTEMPTS + 1):
        # Ports are free when chosen, not necessarily when a task binds them: on a collision,
        # everything started is stopped and the whole cluster starts again on new ports.
        ports = owned.free_ports(tasks.ports_needed(request, counts))
        try:
            local_tasks, notices, task_files = tasks.build(request, counts, ports, run_dir, prepared.overrides,
                                                      machine.detect().cpus)
        except LocalError as err:
            print(f"tfjobgen run-local: {err}", file=sys.stderr)
            return EXIT_CANNOT_RUN
        scrape_config, scrape_text = scrape.file(run_dir, local_tasks, request.pods[0].namespace)
        try:
            write_files({**task_files, scrape_config: scrape_text})
        except files.WriteFailed as err:
            print(f"tfjobgen run-local: {err}", file=sys.stderr)
            return EXIT_CANNOT_RUN
        for notice in notices + [f"a Prometheus scrape config for them: {scrape_config}"] if attempt == 1 else ():
            progress.line(f"run-local: {notice}")
        supervisor = Supervisor(
            [t for t in local_tasks if t.name not in args.without], run_dir, run_dir,  # the run's id: its directory
            uses_runtime=request.uses_runtime, chief=prepared.chief, target_steps=steps,
            completed_by=request.completed_by,
            lifecycle=tasks.lifecycle_of(request, prepared.overrides),
            faults=tuple(Fault(task, step) for task, step in args.kill)
            + tuple(Fault(task, step, evict=True) for task, step in args.evict),
            stall_limit=startup_timeout + 60, on_update=progress)
        try:
            result = supervisor.run()
            break
        except PortCollision as err:
            progress.line(f"run-local: a port was taken ({err}); starting the cluster again with new ports"
                          if attempt < PORT_ATTEMPTS else f"run-local: ports kept colliding ({err})")
    progress.close()
    if result is None:
        print(f"FAIL: no set of free ports worked in {PORT_ATTEMPTS} attempts", file=sys.stderr)
        return EXIT_FAIL
    if summary.verdict(result)[0] and request.uses_runtime and not args.model_dir:
        _drop_checkpoints(os.path.join(run_dir, "model"))
    print()
    print(summary.render(result, training.get("batchSize"), training.get("partitioner")))
    if args.report:
        try:
            files.write_file(args.report, json.dumps(summary.as_dict(result, request.name, counts), indent=2,
                                                     default=str))
        except files.WriteFailed as err:
            print(f"tfjobgen run-local: {err}", file=sys.stderr)
            return EXIT_FAIL
    if result.interrupted:
        return EXIT_INTERRUPTED
    return EXIT_PASS if summary.verdict(result)[0] else EXIT_FAIL


def _drop_checkpoints(model_dir: str) -> None:
    """A passed run's checkpoints in its own directory are of no further use (a new run starts
    in a new directory) and the README's model writes 1.3 GB per checkpoint: remove them."""
    if not os.path.isdir(model_dir):
        return
    freed = 0
    for name in os.listdir(model_dir):
        if name.startswith(("ckpt-", "model.ckpt-", "checkpoint", "graph.pbtxt", "events.")):
            path = os.path.join(model_dir, name)
            freed += os.path.getsize(path)
            os.remove(path)
    if freed:
        print(f"run-local: removed this run's checkpoints ({freed / (1 << 20):,.0f} MiB); "
              "--model-dir DIR keeps them (and resumes from them)")


def prepare(args) -> Prepared | None:
    """Render the job and decide what runs here; LocalError when it cannot run here at all."""
    profile = pipeline.load_profile(args.profile)
    try:
        intents, problems = pipeline.load_intents([args.job])  # as `tfjobgen render` and kustomize read it
    except FileNotFoundError:
        raise LocalError(f"no such file: {args.job}") from None
    if not intents and not problems:
        raise LocalError(f"no TrainingJob in {args.job}")
    if len(intents) > 1:
        raise LocalError(f"{args.job} has {len(intents)} TrainingJobs; run-local runs one at a time")
    expansion = pipeline.expand(intents, profile)
    problems += expansion.problems
    for problem in problems:
        print(problem.format(), file=sys.stderr)
    if not expansion.ok or any(p.is_error for p in problems):
        return None
    # The same pods the job's controller would create in a cluster, env resolved.
    request = tasks.describe(backends.decode(expansion.objects[0]))
    notices = []
    for pod in request.pods[:1]:
        for name in pod.unresolved:
            notices.append(f"{name} comes from a Secret or resource field, which only a cluster has; "
                           "it is not set here")

    mounted = _volumes_mounted(request.pods)
    if mounted:
        notices.append(f"the job mounts volumes ({mounted}); run-local makes none: each task reads and writes "
                       "those paths on this machine, as they are here")
    gpus = sorted({f"{name} on {pod.role}" for pod in request.pods
                   for name in pod.container.get("resources", {}).get("limits", {}) if name.endswith("/gpu")})
    if gpus:
        notices.append(f"the job asks for GPUs ({', '.join(gpus)}); run-local runs every task on this machine's "
                       "CPUs and ignores the GPU limits")
    protocol = None
    if request.protocol != "grpc":
        if _has_star_server():
            pass
        elif request.uses_runtime:
            protocol = "grpc"
            notices.append(f"protocol {request.protocol} needs DeepRec's TensorFlow, which this Python lacks: "
                           "running with grpc instead (the StarServer endpoint map is still rewritten and checked)")
        else:
            notices.append(f"protocol {request.protocol} needs DeepRec's TensorFlow, which this Python lacks: "
                           "the job's own program decides whether it can run (the endpoint map is still "
                           "rewritten and checked)")
    if request.uses_runtime:
        _check_tensorflow()
        _check_local_data(request.training)
    else:
        notices.append("the job runs its own program (spec.command): run-local starts it as given; progress, "
                       "placement and restarts need tfjobgen's runtime, so this run shows task states only")

    asked = dict(request.counts)
    chosen = shape.choose(asked, machine.detect(), shape.model_bytes(request.training),
                          scale_ps=args.scale_ps, scale_workers=args.scale_workers,
                          with_evaluator=args.with_evaluator)
    notices = list(chosen.notices) + notices
    if not request.uses_runtime:
        for flag, faults in (("--kill", args.kill), ("--evict", args.evict)):
            for task, step in faults:  # a fault waits for its step: it would never come, and the run "PASS"
                raise LocalError(f"{flag} {task}@{step}: a fault is injected at a step the chief reports, and a "
                                 "program of your own (spec.command) reports none; to see its recovery, kill -9 "
                                 "the task's process yourself while the run goes on")
    names = {f"{role}:{i}" for role, n in chosen.counts.items() for i in range(n)}
    for name in list(args.without) + [task for task, _ in args.kill + args.evict]:
        if name not in names:
            raise LocalError(f"{name} is not among the tasks that run here ({', '.join(sorted(names))})")
    chief = "chief:0" if "chief" in chosen.counts else "worker:0"
    if chief in args.without:
        raise LocalError(f"--without {chief}: the run needs its chief; leave out a PS or a worker")
    overrides = tasks.Overrides(steps=args.steps, startup_timeout=args.startup_timeout,
                                model_dir=args.model_dir, protocol=protocol, retries=args.restarts)
    return Prepared(request, chosen, overrides, notices, chief)


def write_files(written: dict[str, str]) -> None:
    """The files tasks.build says the tasks read (path -> text), their folders made: all or none (WriteFailed)."""
    files.write_files(written, make_folders=True)


def _volumes_mounted(pods) -> str:
    """The job's own mounts of each pod's training container, with their source and where they are mounted (not
    tfjobgen's: its scratch, the endpoint map and the entrypoint run-local needs none of), e.g.
    "/etc/creds from secret creds (worker), /models from claim model-config (every role)"."""
    own = {*volumes.OWN_VOLUMES, container.ENTRY_VOLUME}
    roles: dict[tuple[str, str], set[str]] = {}
    for pod in pods:
        sources = {v["name"]: v for v in pod.spec.get("volumes", [])}
        for mount in pod.container.get("volumeMounts", []):
            if mount["name"] not in own:
                where = (mount["mountPath"], _source_text(sources.get(mount["name"], {})))
                roles.setdefault(where, set()).add(pod.role)
    every = {pod.role for pod in pods}
    return ", ".join(f"{path} from {source} ({'every role' if found == every else ', '.join(sorted(found))})"
                     for (path, source), found in sorted(roles.items()))


def _source_text(volume: dict) -> str:
    """Where a volume's files come from, in words: "claim ctr-data", "secret reader", "an emptyDir"."""
    if "persistentVolumeClaim" in volume:
        return f"claim {volume['persistentVolumeClaim'].get('claimName')}"
    for kind, key in (("configMap", "name"), ("secret", "secretName"), ("csi", "driver")):
        if kind in volume:
            return f"{kind} {volume[kind].get(key)}"
    return "an emptyDir" if "emptyDir" in volume else f"volume {volume.get('name')}"


def _has_star_server() -> bool:
    """DeepRec ships as a `tensorflow` distribution whose version names it (1.15.5+deeprec2402)."""
    for name in ("tensorflow", "tensorflow-cpu"):
        try:
            if "deeprec" in importlib.metadata.version(name).lower():
                return True
        except importlib.metadata.PackageNotFoundError:
            continue
    return False


def _check_tensorflow() -> None:
    if importlib.util.find_spec("tensorflow") is None:
        raise LocalError(f"TensorFlow is not installed for {sys.executable}: the tasks need it; install the "
                         f"runtime extra (tensorflow-cpu 2.21.0): {install.extra('runtime')}")


def _check_local_data(training: dict) -> None:
    """Local data files must exist before anything starts (remote ones are the chief's to check)."""
    data = training.get("data", {})
    if data.get("format", "synthetic") == "synthetic":
        return
    if not data.get("paths"):
        raise LocalError("training.data.paths is empty: list the tfrecord or csv files (globs allowed)")
    for i, pattern in enumerate(data["paths"]):
        if not contract.is_shared_storage(pattern) and not glob.glob(pattern):
            raise LocalError(f"training.data.paths[{i}] {pattern!r} matches no file here")
        scheme = filesystems.scheme(pattern)
        if not filesystems.built_in(scheme) and importlib.util.find_spec("tensorflow_io") is None:
            # Said before any task starts: otherwise the chief says it after TensorFlow's import.
            raise LocalError(f"training.data.paths[{i}] {pattern!r}: "
                             f"{filesystems.missing(scheme, _tensorflow_version())}; run-local's tasks run "
                             f"{sys.executable}, which lacks it, and the job's image needs it too")


def _tensorflow_version() -> str:
    """The installed TensorFlow's version, read without importing it."""
    for name in ("tensorflow-cpu", "tensorflow"):
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return filesystems.TENSORFLOW_RELEASE

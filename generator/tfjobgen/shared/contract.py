"""The contract between the generator, the runtime in the pods and the local runner.

The generator writes these names into every pod; tfjobgen's runtime
(`runtime/`) reads them; `run-local` rewrites them for a machine without a
cluster. All three import them from here, so a name changes in one place.
Plain constants, and the few one-line rules all three apply to them (the cluster spec's
JSON, the inter-op floor, which paths are shared storage): the runtime imports this
module before TensorFlow, so it imports nothing but the standard library.
"""

from __future__ import annotations

import json

# ---- roles -------------------------------------------------------------------------------

# Every role, in the order every listing uses (objects, TF_CONFIG, tables).
ROLES = ("chief", "evaluator", "ps", "worker")
# Roles of TensorFlow's training cluster: the evaluator reads checkpoints and is not part of it
# (TensorFlow's TFConfigClusterResolver accepts it out of `cluster`; Kubeflow's TFJob operator lists
# it there all the same, and the runtime leaves it out of the servers it forms).
TRAINING_ROLES = ("chief", "ps", "worker")
# Roles that run at most one task.
SINGLE_ROLES = ("chief", "evaluator")
# Roles every job has (the schema requires them): the chief waits for all of their tasks.
REQUIRED_ROLES = ("ps", "worker")
# Roles that run training steps, each connecting to every PS.
TRAINER_ROLES = ("chief", "worker")
# The order tables and reports show roles in: the servers, the trainers, then the evaluator.
TABLE_ROLES = ("ps", "worker", "chief", "evaluator")

# ---- the pod's environment -----------------------------------------------------------------

TF_CONFIG = "TF_CONFIG"
CLUSTER_ENV = "TFJOBGEN_CLUSTER"  # the cluster spec (JSON), from the job's ConfigMap
TASK_INDEX_ENV = "TFJOBGEN_TASK_INDEX"  # the task's index within its role
JOB_ENV = "TFJOBGEN_JOB"  # the TrainingJob's name
API_ENV = "TFJOBGEN_API"  # tf2 | tf1
PROTOCOL_ENV = "TFJOBGEN_PROTOCOL"  # grpc | star_server | star_server_lite
CONTROL_ADDRESS_ENV = "TFJOBGEN_CONTROL_ADDRESS"  # the chief's control server (runtime only)
TRAINING_ENV = "TFJOBGEN_TRAINING"  # spec.training as JSON (runtime only)
EVALUATOR_ENV = "TFJOBGEN_EVALUATOR"  # "1" when the job has an evaluator (runtime only: the chief admits it)
RETRIES_ENV = "TFJOBGEN_TASK_RETRIES"  # failures a task may have before it fails for good (runtime only)
# How often this task failed before (an Indexed Job's failure-count annotation, read through the
# downward API); "" when its controller does not say (a Job of one task). Runtime only.
FAILURES_ENV = "TFJOBGEN_TASK_FAILURES"
INTRA_OP_ENV = "TF_NUM_INTRAOP_THREADS"
INTER_OP_ENV = "TF_NUM_INTEROP_THREADS"
OMP_ENV = "OMP_NUM_THREADS"
THREAD_ENVS = (INTRA_OP_ENV, INTER_OP_ENV, OMP_ENV)
ENDPOINT_MAP_PATH_ENV = "TF_SEASTAR_ENDPOINT_MAP_PATH"
# The port the task serves Prometheus metrics on (tfjobgen's runtime serves its own there; a
# program of your own may serve its metrics on it). run-local sets it to a free local port.
METRICS_PORT_ENV = "TFJOBGEN_METRICS_PORT"
# A program of your own runs under the entrypoint (cluster-tools/entry), which reads these besides the control
# channel's variables: how long a task waits for an absent chief (the runtime's 2 x startupTimeoutSeconds), and
# the exits that fail the job at once (PERMANENT_EXIT_CODES and spec.failurePolicy.permanentExitCodes).
CHIEF_ABSENCE_ENV = "TFJOBGEN_CHIEF_ABSENCE_SECONDS"
PERMANENT_CODES_ENV = "TFJOBGEN_PERMANENT_EXIT_CODES"
GENERATED_PREFIX = "TFJOBGEN_"  # every variable of this prefix is tfjobgen's
DEBUG_ENV = "TFJOBGEN_DEBUG"  # set: the CLI and the runtime print tracebacks instead of one line

# ---- the job's ConfigMap -------------------------------------------------------------------

CLUSTER_KEY = "cluster.json"  # the TF cluster spec
ENDPOINT_MAP_KEY = ".endpoint_map"  # StarServer's grpc -> seastar address map
ENDPOINT_MAP_DIR = "/etc/tfjobgen/starserver"  # where the map is mounted in the pod


def cluster_json(cluster: dict) -> str:
    """The cluster spec (role -> addresses) as the ConfigMap holds it, TFJOBGEN_CLUSTER carries it and
    TF_CONFIG embeds it; run-local writes its own cluster the same way."""
    return json.dumps(cluster, sort_keys=True, separators=(",", ":"))


# ---- the container -------------------------------------------------------------------------

CONTAINER_NAME = "tensorflow"  # also the name Kubeflow's TFJob operator looks for
RUNTIME_COMMAND = ("python", "-m", "tfjobgen.runtime")
RUNTIME_IMAGE = "tfjobgen-runtime"  # the image `make images` builds for it (artifacts/images/catalog.py)
METRICS_PORT_NAME = "metrics"  # the container port Prometheus scrapes (the PodMonitor names it)
METRICS_PATH = "/metrics"
SCRATCH_DIR = "/tmp"  # the writable emptyDir (also HOME)
# A program of your own (spec.command) runs as `ENTRY_PROGRAM -- <command>`: the init container ENTRY_CONTAINER
# copies the entry image's binary (at ENTRY_SOURCE) into an emptyDir mounted at ENTRY_DIR.
ENTRY_CONTAINER = "tfjobgen-entry"
ENTRY_DIR = "/tfjobgen"
ENTRY_PROGRAM = f"{ENTRY_DIR}/entry"
ENTRY_SOURCE = "/tfjobgen-entry"
ENTRY_REPOSITORY = "registry.example.com/ml/tfjobgen-entry"  # on the profile's imageRegistry when it sets one


def own_program(command: list[str]) -> list[str]:
    """The program a container's command runs: a program of your own without the entrypoint it runs under."""
    prefix = [ENTRY_PROGRAM, "--"]
    return list(command[len(prefix):]) if list(command[:len(prefix)]) == prefix else list(command)

# ---- storage -------------------------------------------------------------------------------

def is_shared_storage(path: str) -> bool:
    """A URL (hdfs://, gs://, s3://): storage every pod reaches. Any other path is inside one pod (or,
    under run-local, relative to the directory it was started in)."""
    return "://" in path


# ---- TensorFlow facts ----------------------------------------------------------------------

# A tf2 worker whose inter-op pool has one thread deadlocks ParameterServerStrategy silently
# (measured on TF 2.21): no tf2 worker ever gets fewer than this.
TF2_WORKER_MIN_INTER_OP = 2


def inter_op_threads(api: str, role: str, count: int) -> int:
    """`count` inter-op threads for a task of this api and role: raised to TF2_WORKER_MIN_INTER_OP for a
    tf2 worker, else unchanged. The generator's default, the runtime and run-local's capping all apply it."""
    return max(TF2_WORKER_MIN_INTER_OP, count) if api == "tf2" and role == "worker" else count


# ---- how the runtime exits (docs/runtime.md) ----------------------------------------------

EXIT_OK = 0
EXIT_FAILED = 1  # training failed; a restart may help (a lost PS, a missing task)
EXIT_SETUP = 2  # the configuration is wrong; a restart will not help
EXIT_CHIEF_GONE = 3  # the chief stayed unreachable for too long
EXIT_ABORTED = 4  # another task failed for good and the chief stopped this one
EXIT_INTERRUPTED = 130
# Exits after which a new pod cannot do better: they fail the whole job at once (lifecycle.py).
PERMANENT_EXIT_CODES = (EXIT_SETUP, EXIT_CHIEF_GONE, EXIT_ABORTED)

# What each exit says, for people (`tfjobgen status`, run-local's messages): this is their one home.
EXIT_MEANINGS = {
    EXIT_OK: "done",
    EXIT_FAILED: "training failed; a new pod may do better",
    EXIT_SETUP: "wrong configuration; a new pod will not help",
    EXIT_CHIEF_GONE: "the chief stayed unreachable too long",
    EXIT_ABORTED: "stopped by the chief: another task failed for good",
}
# A process killed by signal n exits 128 + n, as the kubelet reports a container's end (EXIT_INTERRUPTED
# is 128 + SIGINT). The signals a pod's process meets, and why it usually met them.
SIGNAL_EXIT_BASE = 128
SIGNALS = {
    2: ("SIGINT", "interrupted"),
    9: ("SIGKILL", "killed: out of memory, or it did not stop within its grace period"),
    15: ("SIGTERM", "stopped: its pod was deleted (evicted, preempted, its node lost, or its job ended)"),
}


def signal_name(number: int) -> str:
    return SIGNALS[number][0] if number in SIGNALS else f"signal {number}"


def exit_meaning(code: int, runtime: bool = True) -> str:
    """What a task's exit code means; `runtime`: the task runs tfjobgen's runtime (a program of your own
    gives its codes its own meanings: only 0 and the signals are known). "" when nothing is known."""
    if code > SIGNAL_EXIT_BASE:
        number = code - SIGNAL_EXIT_BASE
        return f"{signal_name(number)}: {SIGNALS[number][1] if number in SIGNALS else 'killed by a signal'}"
    if runtime or code == EXIT_OK:
        return EXIT_MEANINGS.get(code, "")
    return ""

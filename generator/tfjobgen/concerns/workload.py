"""A job's workload: the variables it will create on its PS, from one of three sources, in creation order.

    spec.training   tfjobgen's runtime: shared/variable_placement/reference_model.py's list (the same
                    list the runtime builds its model from), the job's batch size and optimizer
    spec.model      a program of your own: the variables it declares
    a checkpoint    a checkpoint or SavedModel, read with TensorFlow (the runtime extra)

Round-robin placement follows creation order, so the order matters; a
checkpoint lists its variables by name and says nothing of the order (the
report says so). Only `from_checkpoint` does I/O, and it imports TensorFlow
only when called.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..inputs import trainingjob
from ..inputs.problems import Problem
from ..shared import install
from ..shared.variable_placement import reference_model
from ..shared.variable_placement.round_robin import Variable, reference_variables

ID_BYTES = 8  # an int64 id or row index sent with a lookup or a sparse update

# Where the optimizer's arithmetic runs decides what crosses the network on each update:
RULES_ON_WORKER = "worker"  # tfjobgen's runtime: gathers and scatters on the PS, arithmetic on the worker
RULES_ON_PS = "ps"  # TensorFlow's fused optimizer kernels (ResourceApply*), colocated with the variable


class PlanError(Exception):
    """The variables cannot be read: one line naming the file or field, and what would work."""


@dataclass(frozen=True)
class Workload:
    """What a job puts on its PS, and how it splits and updates it."""

    source: str  # where the variables came from, for people
    variables: tuple[Variable, ...]  # in creation order
    partitioner: str  # the one the job uses: auto | fixed | none
    min_shard_bytes: int
    optimizer: str | None  # a reference_model.OPTIMIZERS name; None when unknown (a checkpoint)
    rules_on: str  # RULES_ON_WORKER or RULES_ON_PS
    field: str  # the intent field that holds these settings: spec.training or spec.model
    order_known: bool = True  # False for a checkpoint: it lists variables by name
    id_skew: float = 1.0  # lookups hit row floor(rows x u ** id_skew), u uniform: 1 is uniform over the rows


def from_training(job: trainingjob.TrainingJob) -> Workload:
    """tfjobgen's runtime: the reference model at the job's size, as the runtime creates it."""
    training, shape = job.training, job.training["model"]
    found = reference_variables(job.api, training["optimizer"], training["batchSize"], shape["vocabularySize"],
                                shape["embeddingDim"], tuple(shape["hiddenUnits"]))
    # Synthetic ids follow the runtime's own rule; the ids of files are unknown here, so taken as uniform.
    skew = reference_model.ID_SKEW if training["data"]["format"] == "synthetic" else 1.0
    return Workload("spec.training (tfjobgen's runtime)", found, training["partitioner"], training["minShardBytes"],
                    training["optimizer"], RULES_ON_WORKER, "spec.training", id_skew=skew)


def from_declared(declared: trainingjob.DeclaredModel) -> Workload:
    """spec.model: the variables a program of your own declares."""
    slots = len(reference_model.SLOTS[declared.optimizer])
    found = tuple(Variable(v.name, v.shape, v.dtype, v.trainable, slots if v.trainable else 0,
                           v.lookups_per_step or 0) for v in declared.variables)
    return Workload("spec.model (declared)", found, declared.partitioner, declared.min_shard_bytes,
                    declared.optimizer, RULES_ON_PS, "spec.model")


def of_job(job: trainingjob.TrainingJob) -> Workload | None:
    """The job's own description of its variables: spec.training for the runtime, else spec.model (or None)."""
    if job.uses_runtime:
        return from_training(job)
    return from_declared(job.model) if job.model else None


def check(job: trainingjob.TrainingJob) -> list[Problem]:
    """spec.model's meaning, beyond its schema."""
    if job.model is None:
        return []
    if job.uses_runtime:
        return [Problem("describes the model of a program of your own (spec.command); tfjobgen's runtime takes "
                        "its model from spec.training.model: remove spec.model or set spec.command", "spec.model")]
    problems, seen = [], {}
    for i, variable in enumerate(job.model.variables):
        where = f"spec.model.variables[{i}]"
        if variable.name in seen:
            first = f"spec.model.variables[{seen[variable.name]}]"
            problems.append(Problem(f"'{variable.name}' is already declared at {first}: variable names are unique",
                                    f"{where}.name"))
        seen.setdefault(variable.name, i)
        if variable.lookups_per_step and not variable.shape:
            problems.append(Problem("a scalar has no rows to look up: remove lookupsPerStep or give the table its "
                                    "shape [rows, width]", f"{where}.lookupsPerStep"))
    return problems


# ---- a checkpoint or SavedModel (TensorFlow) ------------------------------------------------

_VALUE_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"  # object-based (tf2) checkpoints
_SLOT_MARK = "/.OPTIMIZER_SLOT/"
_SKIPPED = ("_CHECKPOINTABLE_OBJECT_GRAPH", "save_counter")


def checkpoint_prefix(path: str) -> str:
    """The checkpoint prefix for a path: a SavedModel folder, a folder with a `checkpoint` file, or a prefix."""
    if os.path.isfile(os.path.join(path, "saved_model.pb")) or os.path.isfile(os.path.join(path, "saved_model.pbtxt")):
        return os.path.join(path, "variables", "variables")
    if os.path.isdir(path):
        import tensorflow as tf

        latest = tf.train.latest_checkpoint(path)
        if latest is None:
            raise PlanError(f"{path}: a folder with neither a SavedModel (saved_model.pb) nor a checkpoint "
                            "(a 'checkpoint' file): give the checkpoint's prefix, e.g. model/ckpt-100")
        return latest
    return path


def from_checkpoint(path: str, job: trainingjob.TrainingJob) -> Workload:
    """The variables saved in a checkpoint or SavedModel, each slot beside the variable it belongs to."""
    if not os.path.exists(path) and not os.path.exists(path + ".index"):
        raise PlanError(f"{path}: no such checkpoint, SavedModel or folder")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's start-up chatter is not ours to show
    try:
        import tensorflow as tf
    except ImportError:
        raise PlanError(f"{path}: reading a checkpoint needs TensorFlow, which is not installed for this Python: "
                        f"declare the variables in spec.model, or {install.extra('runtime')}") from None
    prefix = checkpoint_prefix(path)
    try:
        reader = tf.train.load_checkpoint(prefix)
        shapes, dtypes = reader.get_variable_to_shape_map(), reader.get_variable_to_dtype_map()
    except (tf.errors.OpError, ValueError) as err:
        first = (getattr(err, "message", "") or str(err)).strip().splitlines()[0][:200]
        raise PlanError(f"{path}: not a readable checkpoint or SavedModel ({first})") from None
    entries = {}
    for name in sorted(shapes):
        if name.startswith(_SKIPPED) or dtypes[name].name == "string":
            continue
        entries[name[:-len(_VALUE_SUFFIX)] if name.endswith(_VALUE_SUFFIX) else name] = (
            tuple(int(d) for d in shapes[name]), dtypes[name].name)
    slots: dict[str, int] = {}
    primary = {}
    for name, (shape, dtype) in entries.items():
        owner = _slot_owner(name, shape, entries)
        if owner:
            slots[owner] = slots.get(owner, 0) + 1
        else:
            primary[name] = (shape, dtype)
    if not primary:
        raise PlanError(f"{path}: the checkpoint holds no variables")
    # A checkpoint does not say what is trained: a variable with slots is, and so is any float one.
    found = tuple(Variable(name, shape, dtype, bool(slots.get(name)) or dtype.startswith(("float", "bfloat")),
                           slots.get(name, 0), 0) for name, (shape, dtype) in primary.items())
    partitioner = job.training["partitioner"] if job.uses_runtime else (job.model.partitioner if job.model else "none")
    min_shard = job.training["minShardBytes"] if job.uses_runtime else (
        job.model.min_shard_bytes if job.model else 262144)
    return Workload(f"checkpoint {path}", found, partitioner, min_shard, None, RULES_ON_PS,
                    "spec.training" if job.uses_runtime else "spec.model", order_known=False)


def _slot_owner(name: str, shape: tuple, entries: dict) -> str | None:
    """The variable a checkpoint entry is an optimizer slot of: `<var>/.OPTIMIZER_SLOT/...` (tf2), or
    `<var>/<Slot>` of the same shape (tf1: embedding/Adagrad, embedding/Adam_1); else None."""
    if _SLOT_MARK in name:
        owner = name.split(_SLOT_MARK)[0]
        return owner if owner in entries else None
    owner, sep, _ = name.rpartition("/")
    if sep and owner in entries and entries[owner][0] == shape and not _slot_owner(owner, shape, entries):
        return owner
    return None

"""What the reference model creates on the PS, as plain data: every variable in creation order, every slot.

The runtime builds its model from this list (runtime/wide_deep.py) and its optimizers'
slots from SLOTS (runtime/optimizers.py); `tfjobgen plan` predicts bytes per PS from
the very same list (round_robin.reference_variables) without importing TensorFlow. So a change to the model's
shape or to an optimizer's slots changes the runtime and the prediction
together.

    embedding       [vocabulary x dim]           read by lookup: FIELDS rows per example, of the ids
    wide            [vocabulary x 1]             read by lookup: FIELDS rows per example, of the same ids
    hidden_<i>/kernel, hidden_<i>/bias           the deep tower, read whole every step
    output/kernel, output/bias
    global_step     int64 scalar, not trained    tf2 creates it after the model, tf1 before
"""

from __future__ import annotations

from dataclasses import dataclass

FIELDS = 8  # categorical ids per example, all from one vocabulary
DENSE = 8  # numeric features per example
# Synthetic ids are skewed like real traffic: id = floor(vocabulary x u ** ID_SKEW), u uniform in [0, 1),
# so 10% of the lookups hit the first 0.1% of ids (data.py draws them; `tfjobgen plan` counts the rows
# a batch touches, and on which shard, from the same rule).
ID_SKEW = 3.0

# Optimizer slots per trainable variable, with their initial values. Each slot has its
# variable's shape and dtype and lives beside it on the same PS.
SLOTS: dict[str, dict[str, float]] = {
    "sgd": {}, "adagrad": {"accumulator": 0.1}, "ftrl": {"accumulator": 0.1, "linear": 0.0},
    "lazy_adam": {"m": 0.0, "v": 0.0}, "adam": {"m": 0.0, "v": 0.0}}
OPTIMIZERS = tuple(SLOTS)
# Optimizers whose update of a looked-up table touches only the rows a batch used; the others
# (dense adam) read and write every row of the table and of its slots on every step.
SPARSE_UPDATES = ("sgd", "adagrad", "ftrl", "lazy_adam")
# What one update moves between a worker and the PS, per updated row: (rows read, rows written)
# of the variable and its slots. optimizers.py's rules compute on the worker: gathers and
# scatters run on the PS where the variable lives, the arithmetic between them does not.
# "sparse": a looked-up table's touched rows; "dense": a variable updated whole.
UPDATE_ROWS: dict[str, dict[str, tuple[int, int]]] = {
    "sgd": {"sparse": (0, 1), "dense": (0, 1)},  # scatter_sub / assign_sub
    "adagrad": {"sparse": (1, 2), "dense": (1, 2)},  # read accumulator; write accumulator, variable
    "ftrl": {"sparse": (3, 3), "dense": (1, 2)},  # tables: variable, accumulator, linear; tower: adagrad
    "lazy_adam": {"sparse": (2, 3), "dense": (2, 3)},  # read m, v; write m, v, variable
    "adam": {"sparse": (2, 3), "dense": (2, 3)},  # the table's gradient is made dense: every row
}


@dataclass(frozen=True)
class ReferenceVariable:
    """A variable of the reference model, as the runtime creates it (round_robin.Variable: as a PS holds it)."""

    name: str
    shape: tuple[int, ...]
    dtype: str  # a TensorFlow dtype name: float32, int64, ...
    trainable: bool = True
    init: str = "zeros"  # how the runtime initialises it: uniform, zeros, he_normal (fan-in: shape[0])
    lookups_per_example: int = 0  # rows one example reads by lookup; 0: the variable is read whole
    ids: str = ""  # the input whose ids it is looked up by: tables read by the same ids share them


GLOBAL_STEP = ReferenceVariable("global_step", (), "int64", trainable=False)


def model_variables(vocabulary: int, embedding_dim: int,
                    hidden_units: tuple[int, ...]) -> tuple[ReferenceVariable, ...]:
    """The wide & deep model's variables, in the order the runtime creates them."""
    found = [ReferenceVariable("embedding", (vocabulary, embedding_dim), "float32", init="uniform",
                               lookups_per_example=FIELDS, ids="ids"),
             ReferenceVariable("wide", (vocabulary, 1), "float32", lookups_per_example=FIELDS, ids="ids")]
    width = FIELDS * embedding_dim + DENSE
    for i, units in enumerate(hidden_units):
        found += [ReferenceVariable(f"hidden_{i}/kernel", (width, units), "float32", init="he_normal"),
                  ReferenceVariable(f"hidden_{i}/bias", (units,), "float32")]
        width = units
    found += [ReferenceVariable("output/kernel", (width, 1), "float32", init="he_normal"),
              ReferenceVariable("output/bias", (1,), "float32")]
    return tuple(found)


def created_variables(api: str, vocabulary: int, embedding_dim: int,
                      hidden_units: tuple[int, ...]) -> tuple[ReferenceVariable, ...]:
    """Every variable the chief places on the PS, in creation order: the global step first under
    tf1 (get_or_create_global_step comes before the model), last under tf2."""
    model = model_variables(vocabulary, embedding_dim, hidden_units)
    return (GLOBAL_STEP,) + model if api == "tf1" else model + (GLOBAL_STEP,)

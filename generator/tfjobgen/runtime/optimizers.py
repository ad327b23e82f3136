"""Optimizers that update only the embedding rows a batch touched, written out in plain ops.

The seed's warning: dense Adam updates every parameter on every step, which is
very costly with large embeddings. The gradient of an embedding lookup is
sparse (IndexedSlices: the rows used, and their gradients); these optimizers
keep it sparse:

    sgd        w -= lr * g
    adagrad    a += g^2;  w -= lr * g / sqrt(a)                      sparse rows only
    ftrl       FTRL-proximal without regularisation on the tables    sparse rows only
               (the dense tower gets Adagrad, as TF's canned wide & deep does)
    lazy_adam  Adam's moments and step, on the touched rows only     sparse rows only
    adam       Adam on the whole table: the embedding gradient is made dense (the costly way,
               kept so the difference can be measured)

Each variable (each shard of a partitioned one) gets its slots beside it on the
same PS: the caller passes `new_slot(variable, slot_name, initial_value)`, since
that differs between the APIs. The updates run where the variables live, so a
worker sends only the touched rows' gradients to each PS. The same code runs
in a tf2 tf.function and in a tf1 graph: `apply` returns the update ops.
"""

from __future__ import annotations

from typing import Callable, Iterable

import tensorflow as tf

from ..shared.variable_placement.reference_model import OPTIMIZERS as KINDS
from ..shared.variable_placement.reference_model import SLOTS as _SLOTS  # plain data, shared with `tfjobgen plan`

_BETA1, _BETA2, _EPSILON = 0.9, 0.999, 1e-7


def variable_key(variable) -> str:
    """A stable, checkpoint-safe key for a variable ('embedding/part_0:0' -> 'embedding.part_0')."""
    return variable.name.split(":")[0].replace("/", ".")


class Optimizer(tf.Module):
    def __init__(self, kind: str, learning_rate: float):
        super().__init__(name="optimizer")
        if kind not in KINDS:
            raise ValueError(f"unknown optimizer {kind!r}")
        self.kind = kind
        self.learning_rate = learning_rate
        self.slots: dict[str, dict[str, tf.Variable]] = {}

    def build(self, variables: Iterable, new_slot: Callable) -> None:
        """Create every slot up front (a strategy cannot create variables inside a step)."""
        for variable in variables:
            self.slots[variable_key(variable)] = {
                name: new_slot(variable, name, initial) for name, initial in _SLOTS[self.kind].items()}

    def slot_variables(self) -> list:
        return [v for slots in self.slots.values() for v in slots.values()]

    def apply(self, grads_and_vars: Iterable, step) -> list:
        """Update each variable from its gradient; `step` is the global step before this update."""
        updates = []
        for grad, variable in grads_and_vars:
            if grad is None:
                continue
            slots = self.slots[variable_key(variable)]
            if isinstance(grad, tf.IndexedSlices) and self.kind != "adam":
                values, rows = _deduplicate(grad)
                updates += getattr(self, f"_sparse_{self.kind}")(variable, slots, values, rows, step)
            else:
                updates += getattr(self, f"_dense_{self.kind}")(variable, slots, tf.convert_to_tensor(grad), step)
        return updates

    # ---- the update rules: `rows` are unique row numbers of `variable`, `values` their gradients

    def _sparse_sgd(self, var, slots, values, rows, step):
        return [var.scatter_sub(tf.IndexedSlices(self.learning_rate * values, rows))]

    def _dense_sgd(self, var, slots, grad, step):
        return [var.assign_sub(self.learning_rate * grad)]

    def _sparse_adagrad(self, var, slots, values, rows, step):
        accumulator = slots["accumulator"]
        new_accumulator = tf.gather(accumulator, rows) + tf.square(values)
        return [accumulator.scatter_update(tf.IndexedSlices(new_accumulator, rows)),
                var.scatter_sub(tf.IndexedSlices(self.learning_rate * values * tf.math.rsqrt(new_accumulator),
                                                 rows))]

    def _dense_adagrad(self, var, slots, grad, step):
        accumulator = slots["accumulator"]
        new_accumulator = accumulator.read_value() + tf.square(grad)
        return [accumulator.assign(new_accumulator),
                var.assign_sub(self.learning_rate * grad * tf.math.rsqrt(new_accumulator))]

    def _ftrl(self, weights, accumulator, linear, grad):
        """FTRL-proximal (McMahan et al. 2013) with l1 = l2 = 0: new (weights, accumulator, linear)."""
        new_accumulator = accumulator + tf.square(grad)
        sigma = (tf.sqrt(new_accumulator) - tf.sqrt(accumulator)) / self.learning_rate
        new_linear = linear + grad - sigma * weights
        new_weights = -self.learning_rate * new_linear * tf.math.rsqrt(new_accumulator)
        return new_weights, new_accumulator, new_linear

    def _sparse_ftrl(self, var, slots, values, rows, step):
        weights, accumulator, linear = self._ftrl(
            tf.gather(var, rows), tf.gather(slots["accumulator"], rows), tf.gather(slots["linear"], rows), values)
        return [slots["accumulator"].scatter_update(tf.IndexedSlices(accumulator, rows)),
                slots["linear"].scatter_update(tf.IndexedSlices(linear, rows)),
                var.scatter_update(tf.IndexedSlices(weights, rows))]

    # FTRL recomputes a weight from its accumulators alone, which wipes out a dense layer's random
    # initialisation; like TF's canned wide & deep models, the tower gets Adagrad instead.
    _dense_ftrl = _dense_adagrad

    def _adam_rate(self, step):
        t = tf.cast(step, tf.float32) + 1.0
        return self.learning_rate * tf.sqrt(1.0 - tf.pow(_BETA2, t)) / (1.0 - tf.pow(_BETA1, t))

    def _sparse_lazy_adam(self, var, slots, values, rows, step):
        m = _BETA1 * tf.gather(slots["m"], rows) + (1.0 - _BETA1) * values
        v = _BETA2 * tf.gather(slots["v"], rows) + (1.0 - _BETA2) * tf.square(values)
        return [slots["m"].scatter_update(tf.IndexedSlices(m, rows)),
                slots["v"].scatter_update(tf.IndexedSlices(v, rows)),
                var.scatter_sub(tf.IndexedSlices(self._adam_rate(step) * m / (tf.sqrt(v) + _EPSILON), rows))]

    def _dense_adam(self, var, slots, grad, step):
        m = _BETA1 * slots["m"].read_value() + (1.0 - _BETA1) * grad
        v = _BETA2 * slots["v"].read_value() + (1.0 - _BETA2) * tf.square(grad)
        return [slots["m"].assign(m), slots["v"].assign(v),
                var.assign_sub(self._adam_rate(step) * m / (tf.sqrt(v) + _EPSILON))]

    _dense_lazy_adam = _dense_adam  # dense variables (the tower) get plain Adam


def _deduplicate(grad: tf.IndexedSlices) -> tuple[tf.Tensor, tf.Tensor]:
    """Sum the gradients of repeated rows: scatter_update would otherwise keep only one of them."""
    rows, positions = tf.unique(grad.indices)
    values = tf.math.unsorted_segment_sum(grad.values, positions, tf.shape(rows)[0])
    return values, rows

"""The reference wide & deep model: one large embedding table, a wide part, a small deep tower.

    ids (FIELDS) --embedding [vocabulary x dim]--> FIELDS x dim --+
    dense (DENSE) --------------------------------------------------+--> deep tower (ReLU) --> logit
    ids (FIELDS) --wide [vocabulary x 1]------------------- sum ---------------------------> + logit

The embedding is the seed's "one big variable": with partitioner none it lands
whole on one PS. The same class serves both APIs; only how a variable is made
differs, so the caller passes `new_variable(name, shape, initializer)`:
`tf2_variable` (ParameterServerStrategy partitions it) or `tf1_variable`
(`tf.compat.v1.get_variable` under a partitioned variable_scope).
"""

from __future__ import annotations

import functools
import math
from typing import Callable

import tensorflow as tf

from ..shared.variable_placement import reference_model
from ..shared.variable_placement.reference_model import FIELDS

Initializer = Callable[[tuple], tf.Tensor]  # shape of the (partition of the) variable -> initial value


def uniform(scale: float) -> Initializer:
    return lambda shape: tf.random.uniform(shape, -scale, scale)


def he_normal(fan_in: int) -> Initializer:
    std = math.sqrt(2.0 / fan_in)  # from the whole variable's fan-in, also when a partition asks
    return lambda shape: tf.random.normal(shape, stddev=std)


def zeros(shape) -> tf.Tensor:
    return tf.zeros(shape)


def _partition_aware(initializer: Initializer, shape: tuple, partition_shape=None, partition_offset=None):
    # ParameterServerStrategy asks for each shard's value separately, on that shard's PS,
    # instead of building the whole table on the chief and sending it over.
    return initializer(tuple(partition_shape) if partition_shape is not None else shape)


def tf2_variable(name: str, shape: tuple, initializer: Initializer) -> tf.Variable:
    """A variable made under a strategy scope: the strategy places and partitions it."""
    return tf.Variable(functools.partial(_partition_aware, initializer, shape), shape=shape,
                       dtype=tf.float32, name=name)


def tf1_variable(name: str, shape: tuple, initializer: Initializer):
    """A variable made with get_variable: the enclosing variable_scope's partitioner splits it."""
    return tf.compat.v1.get_variable(
        name, shape=shape, dtype=tf.float32,
        initializer=lambda shape, dtype=None, partition_info=None: initializer(tuple(shape)))


def initializer(variable: reference_model.ReferenceVariable) -> Initializer:
    """The initial value of a variable of the reference model (variable_placement/reference_model.py)."""
    if variable.init == "uniform":
        return uniform(0.05)
    if variable.init == "he_normal":
        return he_normal(variable.shape[0])
    return zeros


class WideDeep(tf.Module):
    def __init__(self, vocabulary: int, embedding_dim: int, hidden_units: tuple[int, ...],
                 new_variable: Callable[[str, tuple, Initializer], object]):
        super().__init__(name="wide_deep")
        self.embedding_dim = embedding_dim
        # Created in the reference model's order: round-robin placement on the PS follows it.
        made = {v.name: new_variable(v.name, v.shape, initializer(v))
                for v in reference_model.model_variables(vocabulary, embedding_dim, hidden_units)}
        self.embedding, self.wide = made["embedding"], made["wide"]
        self.tower = [(made[f"hidden_{i}/kernel"], made[f"hidden_{i}/bias"]) for i in range(len(hidden_units))]
        self.output_kernel, self.output_bias = made["output/kernel"], made["output/bias"]

    def __call__(self, features: dict) -> tf.Tensor:
        """Logits, one per example."""
        ids = features["ids"]
        # tf.nn.embedding_lookup reads a partitioned table shard by shard ("div" layout), so
        # only the rows a batch needs travel from the PS.
        embedded = tf.nn.embedding_lookup(self.embedding, ids)
        x = tf.concat([tf.reshape(embedded, [-1, FIELDS * self.embedding_dim]), features["dense"]], axis=1)
        for kernel, bias in self.tower:
            x = tf.nn.relu(tf.matmul(x, kernel) + bias)
        deep = tf.squeeze(tf.matmul(x, self.output_kernel), axis=1)
        wide = tf.reduce_sum(tf.nn.embedding_lookup(self.wide, ids), axis=[1, 2])
        return deep + wide + self.output_bias


def loss_of(model: WideDeep, features: dict, labels: tf.Tensor) -> tf.Tensor:
    logits = model(features)
    return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits))

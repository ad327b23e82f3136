"""TensorFlow's own reading of TF_CONFIGs: TFConfigClusterResolver and multi_worker_util's checks.

Each case is one pod's TF_CONFIG and what TensorFlow must read from it: its task type and
index, the jobs of the cluster, and its own address (for the evaluator, which serves nothing:
that TensorFlow takes it as a task of its own, in or out of `cluster`). TensorFlow is imported in a
process of its own (seconds), once for every case given.

Used by tests/test_tf_config.py on the pods decode predicts and by the cluster tier on the pods
the real controllers created.
"""

from __future__ import annotations

import json
import subprocess
import sys

from ..shared import contract

# One line of cases in, one line of the misread ones out, for as long as stdin is open.
_RESOLVE = """
import json, os, sys
import tensorflow as tf
from tensorflow.python.distribute import multi_worker_util
for line in sys.stdin:
    wrong = []
    for case in json.loads(line):
        os.environ["TF_CONFIG"] = case["tf_config"]
        resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
        spec = resolver.cluster_spec()
        try:
            multi_worker_util._validate_cluster_spec(spec, resolver.task_type, resolver.task_id)
        except ValueError as err:
            wrong.append([case["pod"], str(err)])
            continue
        seen = [resolver.task_type, resolver.task_id, sorted(spec.jobs)]
        if resolver.task_type != "evaluator":
            seen.append(spec.task_address(resolver.task_type, resolver.task_id))
        else:
            seen.append(multi_worker_util.is_chief(spec, "evaluator", 0))  # a task of its own, whatever the cluster
        if seen != case["expected"]:
            wrong.append([case["pod"], seen, case["expected"]])
    print(json.dumps(wrong), flush=True)
"""


def case(pod: str, tf_config: str, role: str, index: int, hostname: str, cluster_roles: list[str]) -> dict:
    """What TensorFlow must read from `tf_config`, the TF_CONFIG of task role:index in pod `hostname`:
    that task, a cluster of exactly `cluster_roles`, and its own address the entry naming the host."""
    config = json.loads(tf_config)
    own = True if role == "evaluator" else next(
        (a for a in config["cluster"].get(role, []) if a.startswith(hostname + ".")), f"no address of {hostname}")
    return {"pod": pod, "tf_config": tf_config, "expected": [role, index, sorted(cluster_roles), own]}


def cluster_roles(roles: set[str], evaluator_in_cluster: bool) -> list[str]:
    """The roles a job's TF_CONFIG must list in `cluster`: the training roles it has, and its
    evaluator when the controller that writes TF_CONFIG lists it (backends' Naming says)."""
    listed = set(contract.TRAINING_ROLES) | ({"evaluator"} if evaluator_in_cluster else set())
    return sorted(roles & listed)


def misread(cases: list[dict], python: str = sys.executable) -> list:
    """The cases TensorFlow reads otherwise than expected (empty: every one as expected)."""
    with Reader(python) as reader:
        return reader.misread(cases)


class Reader:
    """TensorFlow imported once in a process of its own, asked again and again (the cluster tier
    checks each job as it runs)."""

    def __init__(self, python: str = sys.executable):
        self.python = python
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> "Reader":
        self.process = subprocess.Popen([self.python, "-c", _RESOLVE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True,
                                        env={"TF_CPP_MIN_LOG_LEVEL": "2", "PATH": "/usr/bin:/bin"})
        return self

    def misread(self, cases: list[dict]) -> list:
        assert self.process and self.process.stdin and self.process.stdout
        self.process.stdin.write(json.dumps(cases) + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        if not answer:
            self.process.wait(timeout=60)
            raise RuntimeError(f"TensorFlow could not read the TF_CONFIGs: {self.process.stderr.read()[-2000:]}")
        return json.loads(answer)

    def __exit__(self, *exc) -> None:
        if self.process:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process.stdout.close()
            self.process.stderr.close()

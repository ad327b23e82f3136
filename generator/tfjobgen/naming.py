"""What a backend's controller calls each task's pod: the part of a backend the plan needs.

TF_CONFIG lists every task's host:port, so the plan must know, before any
object exists, the hostname each controller will give each pod: an Indexed
Job names its pods' hosts `<job-name>-<index>`, JobSet `<jobset>-<rjob>-<j>-<i>`,
Kubeflow's TFJob operator `<tfjob>-<type>-<i>`. Each backend describes its
scheme with one `Naming`; the plan and the concern modules use nothing else of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .model import TrainingJob
from .profile import ClusterProfile


@dataclass(frozen=True)
class Naming:
    # The pod's hostname for task `index` of `role`.
    hostname: Callable[[TrainingJob, str, int], str]
    # host:port of the task's TF server, exactly as TF_CONFIG lists it.
    address: Callable[[TrainingJob, ClusterProfile, str, int], str]
    # The env source of the task index in a template that all tasks of a role share
    # (an Indexed Job's completion index, say): the `valueFrom` of an env entry.
    index_source: Callable[[str], dict]
    # The env source, in such a shared template, of how often the task failed before (an
    # Indexed Job's failure-count annotation); None when the controller does not say.
    failures_source: dict | None = None
    # True when the controller writes TF_CONFIG into the pods itself (Kubeflow's TFJob).
    writes_tf_config: bool = False
    # True when that TF_CONFIG's `cluster` lists the evaluator too (the TFJob operator lists every
    # replica type); tfjobgen's own TF_CONFIG lists the training roles only.
    evaluator_in_cluster: bool = False
    # The name of the TF server's container port (the TFJob operator reads `tfjob-port`).
    grpc_port_name: str = "grpc"

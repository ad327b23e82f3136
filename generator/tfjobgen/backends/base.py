"""The backend boundary: what every backend provides, and what reading objects back yields.

    Backend
      name          spec.backend's value
      naming        what its controller calls each pod (the plan writes TF_CONFIG from it)
      check         what it cannot express, as problems (a topology it has no encoding for)
      encode        JobPlan -> the objects that run the job (the pipeline's render step adds the
                    add-ons' after them: monitoring, TensorBoard; no backend knows those)
      decode        objects -> DecodedJob per job it finds: each task as the pod its
                    controller would create, env resolved as the kubelet would, and
                    the other objects that controller creates (Services)
      one_object    whether one object carries the whole job: what a gang scheduler that
                    admits objects (Kueue) needs to know of it (gang.py)
      reporting     how its controller reports on a running job: what `tfjobgen status` reads

`summary`, `diff`, `run-local` and the tests read rendered objects only through
`decode`, so they work for every backend alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..concerns.lifecycle import Lifecycle
from ..concerns.names import Naming
from ..concerns.pods import Pod
from ..inputs.problems import Problem
from ..inputs.profile import ClusterProfile
from ..inputs.trainingjob import TrainingJob


@dataclass
class DecodedJob:
    """One TrainingJob found among rendered objects, as its controller would run it."""

    namespace: str
    name: str
    backend: str
    objects: list[dict]  # every object carrying the job's label
    pods: list[Pod]  # one per task, roles in contract.ROLES order, then by index
    lifecycle: Lifecycle  # how its controller treats a failed task (lifecycle.py)
    config: dict[str, str] = field(default_factory=dict)  # the cluster ConfigMap's data
    # Objects its controller creates besides pods: JobSet's headless Service, the TFJob
    # operator's Service per pod (none on native, whose Service is among `objects`).
    created: list[dict] = field(default_factory=list)
    # True when a task failing for good stops every task of the job (JobSet's FailJobSet, the TFJob
    # operator); False: only the tasks of the same object (native: the other roles' Jobs go on).
    fails_as_one: bool = False
    # Why its tasks could not be read ("": they were): objects edited by hand need not be what we render.
    unreadable: str = ""
    # Tasks (role:index) whose exit 0 completes the whole job, upon which its controller deletes every
    # task still running (JobSet's successPolicy, the TFJob operator's cleanPodPolicy); () when each
    # object completes on its own (native: a Job completes when all of its tasks have).
    completed_by: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class Reporting:
    """How a backend's controller reports on a job it runs (status/derive.py reads the job with it)."""

    kind: str  # of the object(s) carrying the job
    suspend: tuple[str, ...] = ("suspend",)  # where a carrier's spec holds its suspend flag
    # False when no object says the whole job succeeded (native: each Job completes on its own), so the
    # job is done when its leading task (the chief, else worker 0) is.
    job_conditions: bool = True
    # True when the job's child Jobs carry the Failed condition that names the pod which failed it (JobSet's).
    child_jobs_name_failure: bool = False
    # True when the exit codes of the pods it deletes survive only in its ExitedWithCode events (the operator).
    exits_in_events: bool = False


@dataclass(frozen=True)
class Backend:
    name: str
    naming: Naming
    check: Callable[[TrainingJob, ClusterProfile], list[Problem]]
    encode: Callable[["JobPlan"], list[dict]]  # noqa: F821 - plan.JobPlan (plan imports names, not backends)
    decode: Callable[[list[dict]], list[DecodedJob]]
    # True when one object carries the whole job, a part per role (a JobSet's replicatedJobs, a TFJob's replica
    # types): Kueue admits it whole, as one Workload with a PodSet per role. False when the job is several
    # objects (batch/v1 Jobs), each of which Kueue admits on its own, so that its parts may wait for each other.
    one_object: bool
    reporting: Reporting
    # Pod labels the controller's webhooks set from what only the cluster knows (a PriorityClass's value):
    # decode cannot predict their values, only that they are there.
    cluster_valued_pod_labels: tuple[str, ...] = ()

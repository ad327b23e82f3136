"""What a source document is, and its replicas in one shape whatever API wrote them.

Kubeflow's TFJob changed shape across its versions (v1alpha1 listed `replicaSpecs` with a
`tfReplicaType`; v1alpha2 and later key `tfReplicaSpecs` by type; v1 moved the job-wide policies
under `runPolicy`), and a Volcano Job lists `tasks` by name. `read` turns each into a `Source`: the
replicas by tfjobgen role, each with the path its fields were written at, so that every row of the
report and every refusal names the source's own field and line. Pure: a parsed document in, a
Source or a Refusal out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..inputs.problems import field_path

KUBEFLOW = "kubeflow.org"
TFJOB_VERSIONS = ("v1", "v1beta2", "v1beta1", "v1alpha2", "v1alpha1")
VOLCANO = "batch.volcano.sh/v1alpha1"
TFJOB = "TFJob"  # the source kind; spelled TfJob by tensorflow.org's older one

# TFJob replica types (any case) and the tfjobgen role each becomes. Master is the chief's older name
# (v1alpha1's MASTER, v1's Master), which the training operator treats as the chief.
ROLE_OF_TYPE = {"ps": "ps", "worker": "worker", "chief": "chief", "master": "chief", "evaluator": "evaluator"}
ROLES = ("ps", "worker", "chief", "evaluator")

# Go templates (Helm, Arena), Jinja, and Katib's trial parameters: such a file is not the job yet.
_TEMPLATE = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\$\{trialParameters\.")


@dataclass(frozen=True)
class Replica:
    """One replica type of the source, as the role it becomes."""

    role: str
    key: str  # the source's own name for it: PS, Worker, Master, ps (a Volcano task) ...
    path: str  # where it was written: spec.tfReplicaSpecs.PS, spec.tasks[0]
    data: dict  # the replica spec (replicas, restartPolicy, template, ...)

    @property
    def pod(self) -> dict:
        template = self.data.get("template")
        spec = template.get("spec") if isinstance(template, dict) else None
        return spec if isinstance(spec, dict) else {}

    @property
    def pod_path(self) -> str:
        return f"{self.path}.template.spec"

    @property
    def pod_metadata(self) -> dict:
        template = self.data.get("template")
        meta = template.get("metadata") if isinstance(template, dict) else None
        return meta if isinstance(meta, dict) else {}


@dataclass(frozen=True)
class Source:
    """A TFJob or Volcano Job, its replicas by role, and the job-wide policy fields with their paths."""

    kind: str  # "TFJob kubeflow.org/v1", "Volcano Job" ...
    data: dict
    replicas: dict[str, Replica]  # by tfjobgen role, in ROLES order
    policies: dict[str, tuple[str, Any]] = field(default_factory=dict)  # name -> (path, value)
    replica_container: str = "spec.tfReplicaSpecs"  # where the replicas are listed

    @property
    def metadata(self) -> dict:
        meta = self.data.get("metadata")
        return meta if isinstance(meta, dict) else {}


@dataclass(frozen=True)
class Refusal:
    """Why a document cannot be imported: one located line (`field`: what is wrong and what would be right)."""

    field: str
    message: str


def templated(text: str) -> str:
    """The first template expression of a file's text, or ''."""
    found = _TEMPLATE.search(text)
    return found.group(0) if found else ""


# envsubst's $VAR and ${VAR}, and <VALUE> placeholders, as a whole field's value or inside it. Shell code in a
# command, its args and env values may use $VAR itself: those are read as the program's, not as a template.
_PLACEHOLDER = re.compile(r"^\$[A-Za-z_][A-Za-z0-9_]*$|\$\{[A-Za-z_][A-Za-z0-9_.]*\}|^<[^<>]+>$")
_PROGRAM_FIELDS = re.compile(r"\.(command|args|env)(\[|$)")


def placeholder(data: Any, path: str = "") -> tuple[str, str] | None:
    """The first field whose value is left to be filled in (`name: $JOB_NAME`, `image: ${IMAGE}`), and its value."""
    if isinstance(data, dict):
        items = [(field_path(path, key) if path else str(key), value) for key, value in data.items()]
    elif isinstance(data, list):
        items = [(f"{path}[{i}]", value) for i, value in enumerate(data)]
    else:
        found = isinstance(data, str) and not _PROGRAM_FIELDS.search(path) and _PLACEHOLDER.search(data.strip())
        return (path, data) if found else None
    return next((hit for key, value in items if (hit := placeholder(value, key))), None)


def what(data: Any) -> str:
    """`Kind apiVersion` of a document, for messages."""
    if not isinstance(data, dict):
        return "a YAML list" if isinstance(data, list) else "a single value"
    return " ".join(str(data.get(k)) for k in ("kind", "apiVersion") if data.get(k)) or "a mapping without kind"


def is_candidate(data: Any) -> bool:
    """A document that claims to be a job import reads (a TFJob of any group, a Volcano Job, a Katib Experiment)."""
    if not isinstance(data, dict):
        return False
    kind, api = str(data.get("kind", "")), str(data.get("apiVersion", ""))
    return kind.lower() == TFJOB.lower() or (kind == "Job" and api == VOLCANO) or kind == "Experiment"


def read(data: dict) -> Source | Refusal:
    """The Source of a TFJob or Volcano Job, or why it is none import reads."""
    kind, api = str(data.get("kind", "")), str(data.get("apiVersion", ""))
    group, _, version = api.rpartition("/")
    if kind == "Job" and api == VOLCANO:
        return _volcano(data)
    if kind == "Experiment":
        return Refusal("kind", "a Katib Experiment: its trialTemplate is a template filled in per trial "
                               "(${trialParameters.*}); import the TFJob one trial ran (kubectl get tfjob -o yaml)")
    if kind.lower() != TFJOB.lower():
        return Refusal("kind", f"{what(data)} is not a job import reads: it reads Kubeflow TFJobs "
                               f"({KUBEFLOW}/{', '.join(TFJOB_VERSIONS)}) and Volcano Jobs ({VOLCANO})")
    if group != KUBEFLOW or version not in TFJOB_VERSIONS:
        return Refusal("apiVersion", f"{api!r} is not a Kubeflow TFJob API import reads ({KUBEFLOW}/"
                                     f"{', '.join(TFJOB_VERSIONS)}); a fork's TFJob (KubeDL, PAI) or tensorflow.org's "
                                     "TfJob: rewrite it as kubeflow.org/v1 and import that")
    if kind != TFJOB:
        return Refusal("kind", f"kind {kind!r}: the Kubeflow kind is spelled TFJob")
    spec = data.get("spec")
    if not isinstance(spec, dict):
        return Refusal("spec", "a TFJob needs a spec mapping with tfReplicaSpecs")
    if version == "v1alpha1":
        return _tfjob_list(data, spec, api)
    return _tfjob_map(data, spec, api, version)


def _tfjob_map(data: dict, spec: dict, api: str, version: str) -> Source | Refusal:
    specs = spec.get("tfReplicaSpecs")
    if not isinstance(specs, dict) or not specs:
        return Refusal("spec.tfReplicaSpecs", "no replicas: a TFJob lists them under spec.tfReplicaSpecs "
                                               "(PS, Worker, and optionally Chief and Evaluator)")
    found: list[tuple[str, str, str, Any]] = [(key, ROLE_OF_TYPE.get(str(key).lower(), ""), f"spec.tfReplicaSpecs.{key}",
                                               value) for key, value in specs.items()]
    policies = {}
    # v1 holds the job-wide policies under runPolicy; earlier versions (and v1 files written from old
    # examples, which the v1 operator ignores there) at spec's top.
    run_policy = spec.get("runPolicy") if isinstance(spec.get("runPolicy"), dict) else {}
    for name in ("cleanPodPolicy", "backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished",
                 "schedulingPolicy", "suspend", "managedBy"):
        if name in run_policy:
            policies[name] = (f"spec.runPolicy.{name}", run_policy[name])
        elif name in spec:
            policies[name] = (f"spec.{name}", spec[name])
    return _source(f"TFJob {api}", data, found, policies, "spec.tfReplicaSpecs")


def _tfjob_list(data: dict, spec: dict, api: str) -> Source | Refusal:
    specs = spec.get("replicaSpecs")
    if not isinstance(specs, list) or not specs:
        return Refusal("spec.replicaSpecs", "no replicas: a v1alpha1 TFJob lists them under spec.replicaSpecs")
    found = []
    for i, entry in enumerate(specs):
        key = str(entry.get("tfReplicaType", "")) if isinstance(entry, dict) else ""
        found.append((key, ROLE_OF_TYPE.get(key.lower(), ""), f"spec.replicaSpecs[{i}]", entry))
    policies = {"cleanPodPolicy": ("spec.terminationPolicy", spec["terminationPolicy"])} \
        if "terminationPolicy" in spec else {}
    return _source(f"TFJob {api}", data, found, policies, "spec.replicaSpecs")


def _volcano(data: dict) -> Source | Refusal:
    spec = data.get("spec")
    tasks = spec.get("tasks") if isinstance(spec, dict) else None
    if not isinstance(tasks, list) or not tasks:
        return Refusal("spec.tasks", "a Volcano Job lists its tasks under spec.tasks")
    plugins = spec.get("plugins") if isinstance(spec.get("plugins"), dict) else {}
    # The tensorflow plugin names the task of each TF role (--ps=NAME ...); without it, the task names do.
    named = {}
    tensorflow = plugins.get("tensorflow")
    for arg in tensorflow if isinstance(tensorflow, list) else []:
        option, _, value = str(arg).lstrip("-").partition("=")
        if option in ROLES and value:
            named[value] = option
    found = []
    for i, task in enumerate(tasks):
        key = str(task.get("name", "")) if isinstance(task, dict) else ""
        role = named.get(key) or ROLE_OF_TYPE.get(key.lower(), "")
        found.append((key, role, f"spec.tasks[{i}]", task))
    policies = {name: (f"spec.{name}", spec[name]) for name in
                ("minAvailable", "queue", "schedulerName", "maxRetry", "policies", "plugins", "ttlSecondsAfterFinished",
                 "priorityClassName", "volumes", "runningEstimate", "minSuccess", "networkTopology")
                if name in spec}
    return _source(f"Volcano Job {VOLCANO}", data, found, policies, "spec.tasks")


def _source(kind: str, data: dict, found: list, policies: dict, container: str) -> Source | Refusal:
    unknown = [(key, path) for key, role, path, _ in found if not role]
    if unknown:
        key, path = unknown[0]
        return Refusal(path, f"replica type {key!r} has no tfjobgen role: a TrainingJob has ps, worker, chief "
                             f"(Master is the chief) and evaluator; {kind} jobs with other types (a custom "
                             "AIMaster, a TensorBoard replica) stay where they run")
    by_role: dict[str, Replica] = {}
    for key, role, path, value in found:
        if role in by_role:
            return Refusal(path, f"{key!r} and {by_role[role].key!r} are both the {role}: keep one")
        if not isinstance(value, dict):
            return Refusal(path, f"the {key} replica spec is not a mapping")
        by_role[role] = Replica(role, str(key), path, value)
    if "ps" not in by_role:
        given = ", ".join(f"{r.key} x {r.data.get('replicas', 1)}" for r in by_role.values())
        return Refusal(container, f"no PS replica ({given}): this is collective (all-reduce) training such as "
                                  "MultiWorkerMirroredStrategy, and tfjobgen runs parameter-server training only: "
                                  "it would make nothing of it; keep it as it runs, or add a PS replica and a "
                                  "ParameterServerStrategy program")
    if "worker" not in by_role:
        return Refusal(container, "no Worker replica: a TrainingJob has PS and workers (a chief alone computes "
                                  "no gradients under ParameterServerStrategy); add a Worker replica")
    misshapen = _shapes(data, by_role.values())
    if misshapen:
        return misshapen
    return Source(kind, data, {role: by_role[role] for role in ROLES if role in by_role}, policies, container)


# The shape of each field import reads below a replica, as Kubernetes' API gives it: a value of another
# shape is refused at its field before any rule reads it.
_MAPPING, _LIST, _TEXT = "a mapping", "a list", "text"
_JOB_SHAPES = (("metadata", _MAPPING), ("metadata.labels", _MAPPING), ("metadata.annotations", _MAPPING),
               ("spec.runPolicy", _MAPPING), ("spec.runPolicy.schedulingPolicy", _MAPPING))
_REPLICA_SHAPES = (("template", _MAPPING), ("template.metadata", _MAPPING), ("template.metadata.labels", _MAPPING),
                   ("template.metadata.annotations", _MAPPING), ("template.spec", _MAPPING),
                   ("template.spec.volumes", _LIST), ("template.spec.initContainers", _LIST),
                   ("template.spec.imagePullSecrets", _LIST), ("template.spec.nodeSelector", _MAPPING),
                   ("template.spec.tolerations", _LIST))
_CONTAINER_SHAPES = (("env", _LIST), ("envFrom", _LIST), ("resources", _MAPPING), ("resources.requests", _MAPPING),
                     ("resources.limits", _MAPPING), ("volumeMounts", _LIST))
_OF = {_MAPPING: dict, _LIST: list, _TEXT: str}


def _at(data: Any, dotted: str) -> tuple[bool, Any]:
    for key in dotted.split("."):
        if not isinstance(data, dict) or key not in data:
            return False, None
        data = data[key]
    return True, data


def _shapes(data: dict, replicas) -> Refusal | None:
    """The first field import reads whose value has another shape than Kubernetes gives it."""
    checks = [(path, shape, data, path) for path, shape in _JOB_SHAPES]  # (shown, shape, holder, key in holder)
    for replica in replicas:
        checks += [(f"{replica.path}.{path}", shape, replica.data, path) for path, shape in _REPLICA_SHAPES]
        containers = replica.pod.get("containers")
        for i, container in enumerate(containers if isinstance(containers, list) else []):
            where = field_path(replica.pod_path, "containers", i)
            if not isinstance(container, dict):
                return Refusal(where, f"a container is a mapping, not {what_value(container)}")
            checks += [(f"{where}.{path}", shape, container, path) for path, shape in _CONTAINER_SHAPES]
            env = container.get("env")
            for j, entry in enumerate(env if isinstance(env, list) else []):
                if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                    return Refusal(f"{where}.env[{j}]", "an env entry is a mapping with a name (text)")
            mounts = container.get("volumeMounts")
            for j, entry in enumerate(mounts if isinstance(mounts, list) else []):
                if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                    return Refusal(f"{where}.volumeMounts[{j}]", "a volume mount is a mapping with a name (text)")
        volumes = replica.pod.get("volumes")
        for j, volume in enumerate(volumes if isinstance(volumes, list) else []):
            if not isinstance(volume, dict) or not isinstance(volume.get("name"), str):
                return Refusal(f"{replica.pod_path}.volumes[{j}]", "a volume is a mapping with a name (text)")
    for shown, shape, holder, key in checks:
        found, value = _at(holder, key)
        if found and value is not None and not isinstance(value, _OF[shape]):
            return Refusal(shown, f"{shape} is what Kubernetes takes here, not {what_value(value)}")
    return None


def what_value(value: Any) -> str:
    return {dict: "a mapping", list: "a list", str: f"the text {value!r}", bool: f"{value}"}.get(
        type(value), f"the number {value}" if isinstance(value, (int, float)) else type(value).__name__)


def main_container(replica: Replica) -> tuple[int, dict] | Refusal:
    """The container that trains: the one named tensorflow (the operator's name for it), or the only one."""
    containers = replica.pod.get("containers")
    path = field_path(replica.pod_path, "containers")
    if not isinstance(containers, list) or not containers or not all(isinstance(c, dict) for c in containers):
        return Refusal(path, f"the {replica.key} pod has no containers: a TFJob replica runs a container named tensorflow")
    named = [i for i, c in enumerate(containers) if c.get("name") == "tensorflow"]
    if len(containers) == 1:
        return 0, containers[0]
    if len(named) == 1:
        return named[0], containers[named[0]]
    return Refusal(path, f"the {replica.key} pod has {len(containers)} containers and none is named tensorflow: "
                         "name the training container tensorflow, as the TFJob operator expects")

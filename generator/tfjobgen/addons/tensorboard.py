"""TensorBoard for one job (spec.tensorboard): a Deployment and a Service reading the job's log directory.

    Deployment     <job>-tensorboard   one pod, the job's image, `tensorboard --logdir <dir>`; a <dir> on a
                                       claim the training pods mount is mounted read-only at the same path
    Service        <job>-tensorboard   port 6006, for `kubectl port-forward svc/<job>-tensorboard 6006`
    NetworkPolicy  <job>-tensorboard   no ingress at all: port-forward reaches the pod through the
                                       kubelet, which NetworkPolicies do not govern

The pod is restricted like the training pods (Pod Security Standards "restricted", read-only root
filesystem with /tmp an emptyDir, no service-account token) and
does not carry the job's label, so the job's Service, NetworkPolicy and PodMonitor leave it out.
It reads the log directory with the job's service account and env (cloud storage credentials).
"""

from __future__ import annotations

from ..concerns import container, environment, labels, metadata, names, podspec, volumes
from ..concerns.jobplan import JobPlan
from ..inputs.problems import Problem
from ..inputs.trainingjob import TrainingJob
from ..shared import contract

PORT = 6006  # TensorBoard's own default
COMPONENT = "tensorboard"
POD_LABEL = "tfjobgen.dev/tensorboard"  # the job's name, on the TensorBoard pod (not tfjobgen.dev/job)


def log_dir(job: TrainingJob) -> str | None:
    """What TensorBoard reads: spec.tensorboard.logDir, else the runtime's modelDir."""
    if job.tensorboard_log_dir:
        return job.tensorboard_log_dir
    return job.training["modelDir"] if job.uses_runtime else None


def check(job: TrainingJob, profile) -> list[Problem]:
    if not job.tensorboard:
        return []
    directory = log_dir(job)
    if directory is None:
        return [Problem("a program of your own says where it writes summaries: set spec.tensorboard.logDir",
                        "spec.tensorboard.logDir")]
    at = "spec.tensorboard.logDir" if job.tensorboard_log_dir else "spec.training.modelDir"
    wrong = container.string_problem(directory, at)  # TensorBoard's --logdir
    if wrong:
        return [wrong]
    if directory.startswith("-"):  # before the storage rule: this is no path at all, to TensorBoard
        return [Problem(f"'{directory}' starts with '-', so TensorBoard reads it as an option of its own, not as "
                        "the directory after --logdir (which is then left without one, and TensorBoard does not "
                        "start): give the directory its summaries are in, such as gs://bucket/runs/job", at)]
    if not contract.is_shared_storage(directory) and _claim(job, directory) is None:
        return [Problem(f"'{directory}' is inside the training pods' own storage, which TensorBoard's pod cannot "
                        "read: use storage every pod reaches (gs://, s3://, hdfs://), or a path on a "
                        "persistentVolumeClaim the job mounts (spec.volumes), which TensorBoard's pod then mounts "
                        "read-only", at)]
    return []


def _claim(job: TrainingJob, directory: str) -> tuple[dict, dict] | None:
    """The claim a training container holds the log directory on (volume, mount), the chief's first: the runtime's
    chief writes the summaries; a program of your own may write them from any role."""
    for role in sorted(job.roles, key=contract.ROLES.index):
        found = volumes.on_claim(job, directory, role)
        if found:
            return found
    return None


def _claim_mount(job: TrainingJob, directory: str) -> tuple[list[dict], list[dict]]:
    """The volume and mount TensorBoard's pod reads the log directory through: the training pods' claim, at the
    same path, read-only (TensorBoard only reads). Nothing when the directory is a URL (no claim holds one)."""
    found = _claim(job, directory)
    if found is None:
        return [], []
    volume, mount = found
    claim = {"claimName": volume["persistentVolumeClaim"]["claimName"], "readOnly": True}
    read_only = {"mountPath": mount["mountPath"], "name": volume["name"], "readOnly": True}
    if "subPath" in mount:
        read_only["subPath"] = mount["subPath"]
    return [{"name": volume["name"], "persistentVolumeClaim": claim}], [read_only]


def _selector(job: TrainingJob) -> dict[str, str]:
    return {POD_LABEL: job.name}


def _pod_labels(job: TrainingJob) -> dict[str, str]:
    own = {k: v for k, v in labels.recommended(job, COMPONENT).items() if k != labels.JOB}
    return {**own, **_selector(job)}


def objects(plan: JobPlan) -> list[dict]:
    """The job's TensorBoard objects; none unless spec.tensorboard.enabled."""
    job, profile = plan.job, plan.profile
    if not job.tensorboard:
        return []
    name = names.tensorboard(job)
    object_labels = labels.recommended(job, COMPONENT)
    env = [{"name": "HOME", "value": contract.SCRATCH_DIR}]
    if job.hadoop:
        env += environment.hadoop_env(job.hadoop)
    env += [e for e in job.env if e["name"] not in {v["name"] for v in env}]
    claim_volumes, claim_mounts = _claim_mount(job, log_dir(job))
    pod_spec = {
        # No Kubernetes API token: cloud storage credentials come with the account through the cloud's
        # own mechanism (a metadata server, or a token volume its webhook projects), as for the training.
        "automountServiceAccountToken": False,
        "containers": [{
            "args": ["--logdir", log_dir(job), "--bind_all", "--port", str(PORT)],
            "command": ["tensorboard"],
            "env": env,
            "image": container.image(job, profile),
            "imagePullPolicy": container.PULL_POLICY,
            # A TensorBoard that stops answering (a stuck read of a remote log directory) gets restarted.
            "livenessProbe": {"initialDelaySeconds": 30, "periodSeconds": 30, "tcpSocket": {"port": "http"}},
            "name": COMPONENT,
            "ports": [{"containerPort": PORT, "name": "http", "protocol": "TCP"}],
            "readinessProbe": {"tcpSocket": {"port": "http"}},
            "resources": {"limits": {"cpu": "1", "memory": "2Gi"}, "requests": {"cpu": "500m", "memory": "2Gi"}},
            "securityContext": {**container.security_context(job), "readOnlyRootFilesystem": True},
            "volumeMounts": [{"mountPath": contract.SCRATCH_DIR, "name": volumes.SCRATCH_VOLUME}] + claim_mounts,
        }],
        "enableServiceLinks": False,
        "securityContext": container.pod_security_context(profile),
        "volumes": [{"emptyDir": {}, "name": volumes.SCRATCH_VOLUME}] + claim_volumes,
    }
    if job.service_account:
        pod_spec["serviceAccountName"] = job.service_account
    if job.image_pull_secrets:  # it pulls the job's image
        pod_spec["imagePullSecrets"] = podspec.pull_secrets(job)
    return [{
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata.of(job, name, object_labels),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": _selector(job)},
            "template": {"metadata": {"labels": _pod_labels(job)}, "spec": pod_spec},
        },
    }, {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata.of(job, name, object_labels),
        "spec": {"ports": [{"name": "http", "port": PORT, "protocol": "TCP", "targetPort": "http"}],
                 "selector": _selector(job)},
    }, {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": metadata.of(job, name, object_labels),
        "spec": {"ingress": [], "podSelector": {"matchLabels": _selector(job)}, "policyTypes": ["Ingress"]},
    }]

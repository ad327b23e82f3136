"""Helpers for the node tier: a cluster whose nodes run containers, and what tests do in its pods.

The tier needs root, the programs `make cluster-tools` builds (the kubelet, CNI plugins, CoreDNS,
kube-router, the registry), the images `make images` builds, and Debian's containerd, runc,
iptables, ipset, socat and skopeo (.ci/run installs them). Without them each test says what is
missing and is skipped (a failure under TFJOBGEN_REQUIRE_TOOLS=1, as in CI).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from cluster import cluster_support
from conftest import need, uses

from tfjobgen.cluster.nodes import bring_up
from tfjobgen.harness.pods import container_pid  # noqa: F401 - the node tests import it from here

HERE = Path(__file__).parent
PROFILE = HERE / "profiles" / "real-nodes.yaml"
RUNTIME_IMAGE = "registry.example.com/ml/tfjobgen-runtime:0.1.0"
# The restricted security context the generator gives every container, for the tier's own probe pods.
RESTRICTED = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "readOnlyRootFilesystem": True,
              "runAsNonRoot": True, "runAsUser": 10000, "seccompProfile": {"type": "RuntimeDefault"}}


@uses("nodes")
def need_real_nodes() -> None:
    """Skip (fail under CI) unless this machine can run real nodes."""
    cluster_support.need_cluster_tools(*bring_up.NODE_PROGRAMS)
    need("root", "root" if os.geteuid() == 0 else None, "real nodes need root")
    lacking = [p for p in bring_up.MACHINE_PROGRAMS if shutil.which(p) is None]
    need("Debian's node programs", None if lacking else "installed",
         f"{', '.join(lacking)} missing: .ci/run installs them with apt-get")
    from tfjobgen.artifacts.images import catalog, store

    unbuilt = [name for name in catalog.FOR_NODES if store.built(name) is None]
    need("the images", None if unbuilt else "built", f"{', '.join(unbuilt)} not built: run `make images`")


def probe_pod(name: str, namespace: str, program: str, node: str | None = None, labels: dict | None = None) -> dict:
    """A restricted pod of the runtime image running `python -c program` once. BestEffort (no requests): a
    node whose one allocatable CPU a Guaranteed pod holds still admits it, into the shared CPU pool."""
    spec = {"restartPolicy": "Never", "automountServiceAccountToken": False,
            "containers": [{"name": "probe", "image": RUNTIME_IMAGE, "command": ["python", "-c", program],
                            "securityContext": RESTRICTED, "env": [{"name": "HOME", "value": "/tmp"}],
                            "resources": {}}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}}, "spec": spec}


def run_probe(cluster, pod: dict, timeout: float = 90) -> tuple[str, str]:
    """Create a probe pod, wait until it ends; its phase and its output."""
    namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    cluster.objects.create(pod)

    def ended():
        found = cluster.objects.get("v1", "Pod", name, namespace)
        return found if (found.get("status") or {}).get("phase") in ("Succeeded", "Failed") else None

    ended_pod = cluster.wait(ended, f"probe {namespace}/{name} to end", timeout)
    logs = cluster.kubectl("logs", "-n", namespace, name, check=False)
    if logs.returncode:  # it never ran: the kubelet refused it
        status = ended_pod["status"]
        return status["phase"], f"{status.get('reason', '')}: {status.get('message', '')} ({logs.stderr.strip()})"
    return ended_pod["status"]["phase"], logs.stdout


def exec_in(cluster, namespace: str, pod: str, program: str) -> str:
    """`kubectl exec` (the API server, the pod network, the kubelet's API, containerd) running python in a pod."""
    return cluster.kubectl("exec", "-n", namespace, pod, "--", "python", "-c", program).stdout


def running_pods(cluster, namespace: str, count: int, timeout: float = 120) -> list[dict]:
    def all_running():
        pods = cluster.pods(namespace)
        running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
        return running if len(running) >= count else None

    return cluster.wait(all_running, f"{count} pods Running in {namespace}", timeout)




def job_objects(rendered: list[dict]) -> list[dict]:
    """What the tier applies of a rendered job: all but Prometheus Operator's kinds (no such CRDs here)."""
    return [o for o in rendered if o["apiVersion"].split("/")[0] != "monitoring.coreos.com"]


def apply(cluster, objects: list[dict]) -> None:
    cluster.apply(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))


def remove_namespace(cluster, namespace: str, timeout: float = 90) -> None:
    """Delete the namespace's jobs, then the namespace, and wait until no pod of it is left (their CPUs free).

    The jobs go first: deleting only the namespace left Jobs behind on Kubernetes 1.34, their failed pods
    held by the job-tracking finalizer (the Job controller could not replace them in a terminating namespace).
    """
    cluster.kubectl("delete", "-n", namespace, "--wait=false", "--ignore-not-found",
                    "jobs.batch,jobsets.jobset.x-k8s.io,tfjobs.kubeflow.org", "--all")
    cluster.objects.delete("v1", "Namespace", namespace)
    cluster.wait(lambda: not cluster.pods(namespace), f"every pod of {namespace} gone", timeout)


# Each backend's top object and the condition it reaches when the job completes.
COMPLETED = {"native": ("batch/v1", "Job", "Complete"), "jobset": ("jobset.x-k8s.io/v1alpha2", "JobSet", "Completed"),
             "tfjob": ("kubeflow.org/v1", "TFJob", "Succeeded")}


def wait_complete(cluster, backend: str, namespace: str, timeout: float = 120) -> None:
    """Until every top object of the namespace's job (Jobs, the JobSet, the TFJob) has completed; a TimeoutError
    that describes each of them and every pod otherwise."""
    api_version, kind, condition = COMPLETED[backend]

    def complete():
        found = cluster.objects.list(api_version, kind, namespace)
        return found and all(any(c["type"] == condition and c["status"] == "True"
                                 for c in (o.get("status") or {}).get("conditions") or []) for o in found)

    try:
        cluster.wait(complete, f"every {kind} of {namespace} {condition}", timeout)
    except TimeoutError as err:
        jobs = "; ".join(f"{o['metadata']['name']}: {(o.get('status') or {}).get('conditions')}"
                         for o in cluster.objects.list(api_version, kind, namespace))
        raise TimeoutError(f"{err}\n{kind}s: {jobs}\n{describe_namespace(cluster, namespace)}") from None


def describe_namespace(cluster, namespace: str, log_lines: int = 8) -> str:
    """What a failed wait needs to say: each pod's node, phase, restarts and container state, the last lines of
    its log, and the namespace's warning events (a wait that timed out says nothing of why)."""
    lines = []
    for pod in sorted(cluster.pods(namespace), key=lambda p: p["metadata"]["name"]):
        status = pod.get("status") or {}
        containers = status.get("containerStatuses") or [{}]
        state = containers[0].get("state") or {}
        shown = ", ".join(f"{k} {v.get('reason', '')} {v.get('exitCode', '')}".strip() for k, v in state.items())
        lines.append(f"pod {pod['metadata']['name']} on {pod['spec'].get('nodeName', '-')}: {status.get('phase')}, "
                     f"{containers[0].get('restartCount', 0)} restart(s), {shown or 'no container state'}"
                     + (" (being deleted)" if pod["metadata"].get("deletionTimestamp") else ""))
        logs = cluster.kubectl("logs", "-n", namespace, pod["metadata"]["name"], f"--tail={log_lines}", check=False)
        lines += [f"    | {line}" for line in (logs.stdout or logs.stderr).splitlines()[-log_lines:]]
    for event in cluster.objects.list("v1", "Event", namespace):
        if event.get("type") == "Warning":
            lines.append(f"event {event['involvedObject'].get('name')}: {event.get('reason')}: {event.get('message')}")
    return "\n".join(lines)


def terminated(pod: dict) -> dict:
    """The last termination of the pod's first container ({} while it runs)."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
    state = statuses[0].get("state") or {}
    return state.get("terminated") or (statuses[0].get("lastState") or {}).get("terminated") or {}

"""Secure by default: restricted pods, no API token, a NetworkPolicy that admits only the job itself."""

from __future__ import annotations

import copy

import pss
from conftest import REPO, SAMPLE, render

from tfjobgen import backends
from tfjobgen.concerns import labels
from tfjobgen.concerns.pods import Pod
from tfjobgen.shared import contract

GOLDEN = sorted((REPO / "tests" / "golden").glob("*/job.yaml"))


def _all_objects(overlay_objects) -> list[dict]:
    objects = [o for group in overlay_objects.values() for o in group]
    for job in GOLDEN:
        profile = job.parent / "profile.yaml"
        objects += render(job, profile=profile if profile.exists() else None)
    return objects


def test_every_pod_meets_the_restricted_pod_security_standard(overlay_objects):
    failures = {}
    for obj in _all_objects(overlay_objects):
        if obj["kind"] in ("Job", "Deployment"):  # the training pods, and TensorBoard's
            found = pss.violations(obj["spec"]["template"]["spec"])
            if found:
                failures[obj["metadata"]["name"]] = found
    assert not failures


def test_the_checker_catches_what_it_should():
    job = render(SAMPLE / "jobs" / "wide-deep.yaml")
    spec = next(o for o in job if o["kind"] == "Job")["spec"]["template"]["spec"]
    assert pss.violations(spec) == []
    for breakage in (lambda s: s.update(hostNetwork=True),
                     lambda s: s["containers"][0]["securityContext"].update(allowPrivilegeEscalation=True),
                     lambda s: s["containers"][0]["securityContext"]["capabilities"].update(add=["SYS_ADMIN"]),
                     lambda s: s["securityContext"].update(runAsUser=0),
                     lambda s: s["volumes"].append({"name": "h", "hostPath": {"path": "/"}}),
                     lambda s: s["securityContext"].pop("runAsNonRoot") and
                     s["containers"][0]["securityContext"].pop("runAsNonRoot")):
        broken = copy.deepcopy(spec)
        breakage(broken)
        assert pss.violations(broken), "the checker must flag a broken pod"


def test_pods_mount_no_service_account_token_and_no_rbac_is_generated(overlay_objects):
    objects = _all_objects(overlay_objects)
    assert not {"Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "ServiceAccount"} & {o["kind"] for o in objects}
    for obj in objects:
        if obj["kind"] == "Job":
            assert obj["spec"]["template"]["spec"]["automountServiceAccountToken"] is False


def test_root_filesystem_is_read_only_unless_the_intent_opts_out(overlay_objects):
    for obj in _all_objects(overlay_objects):
        if obj["kind"] == "Job":
            container = obj["spec"]["template"]["spec"]["containers"][0]
            expected = obj["metadata"]["labels"][labels.JOB] != "small-shared"  # golden shared-qos opts out
            assert container["securityContext"]["readOnlyRootFilesystem"] is expected
            assert {"mountPath": "/tmp", "name": "scratch"} in container["volumeMounts"], "TF needs a writable /tmp"


def _admits(policy: dict, source: Pod, target: Pod, port: int) -> bool:
    """Does `policy` let `source` reach `target` on `port`? (pod selectors with matchLabels only.)"""
    def selects(selector, pod):
        return all(pod.labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())

    if not selects(policy["spec"]["podSelector"], target):
        return True  # not governed by this policy
    return any(any(selects(peer["podSelector"], source) for peer in rule["from"])
               and any(p["port"] == port for p in rule["ports"]) for rule in policy["spec"]["ingress"])


def test_network_policy_admits_only_the_jobs_own_pods_on_its_own_ports(overlay_objects):
    objects = overlay_objects["seed-80c"]
    all_pods = backends.pods_of(objects)
    policies = {o["metadata"]["labels"][labels.JOB]: o for o in objects if o["kind"] == "NetworkPolicy"
                and o["metadata"]["name"] == o["metadata"]["labels"][labels.JOB]}  # not TensorBoard's own
    by_job: dict[str, list[Pod]] = {}
    for pod in all_pods:
        by_job.setdefault(pod.labels[labels.JOB], []).append(pod)
    assert set(policies) == set(by_job)
    stranger = Pod("x", "ml-training", "x", "", {"app": "web"}, {}, {"containers": []})
    for job, job_pods in by_job.items():
        policy = policies[job]
        assert policy["spec"]["policyTypes"] == ["Ingress"]
        target = job_pods[0]
        ports = [p["containerPort"] for p in target.container["ports"] if p["name"] != contract.METRICS_PORT_NAME]
        metrics = [p["containerPort"] for p in target.container["ports"] if p["name"] == contract.METRICS_PORT_NAME]
        other_job = next(p for name, group in by_job.items() if name != job for p in group)
        for port in ports:
            assert all(_admits(policy, peer, target, port) for peer in job_pods)
            assert not _admits(policy, stranger, target, port)
            assert not _admits(policy, other_job, target, port), f"{other_job.hostname} must not reach {job}"
        assert not _admits(policy, job_pods[-1], target, 22), "other ports stay closed"
        # Only the monitoring namespace scrapes, and only where the profile turns monitoring on (not here).
        assert metrics and not any(_admits(policy, peer, target, metrics[0]) for peer in job_pods + [stranger])

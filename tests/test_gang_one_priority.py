"""Under Kubernetes' own gang scheduling every pod of a job runs at one priority, the PS's class
(concerns/topology.priority_class: kube-scheduler refuses a PodGroup whose pods' priorities differ), so a
profile's priorityClasses.worker is not used there: validate says so on the profile, and so does the
reference (the schema's description)."""

from __future__ import annotations

import json

from conftest import REPO, run_tfjobgen
from jobs import SMALL_JOB

PROFILE = """\
apiVersion: tfjobgen.dev/v1alpha1
kind: ClusterProfile
metadata:
  name: gang-kubernetes
spec:
  kubernetesVersion: "1.37"
  node: {cpu: 9, reservedCpus: 1, memory: 32Gi}
  cpuManager: {nodeSelector: {kubernetes.io/os: linux}}
  gang: {scheduler: kubernetes}
  priorityClasses:
    ps: training-ps
    worker: training-worker
"""
WARNING = ("cluster-profile.yaml:12: warning: spec.priorityClasses.worker: under spec.gang.scheduler kubernetes "
           "every pod of a job runs at the PS's class, training-ps")


def validate(tmp_path, profile: str):
    (tmp_path / "job.yaml").write_text(SMALL_JOB)
    (tmp_path / "cluster-profile.yaml").write_text(profile)
    return run_tfjobgen("validate", "job.yaml", "--profile", "cluster-profile.yaml", cwd=tmp_path)


def test_the_unused_worker_class_is_a_warning_on_the_profile(tmp_path):
    proc = validate(tmp_path, PROFILE)
    assert WARNING in proc.stderr, proc.stderr


def test_no_warning_where_worker_pods_get_their_class(tmp_path):
    proc = validate(tmp_path, PROFILE.replace("gang: {scheduler: kubernetes}", "gang: {scheduler: volcano}"))
    assert "spec.priorityClasses.worker" not in proc.stderr, proc.stderr
    proc = validate(tmp_path, PROFILE.replace("    ps: training-ps\n", ""))  # worker's is then every pod's class
    assert "every pod of a job runs at the PS's class" not in proc.stderr, proc.stderr


def test_the_reference_says_so():
    schema = json.loads((REPO / "schemas" / "clusterprofile.schema.json").read_text())
    worker = schema["properties"]["spec"]["properties"]["priorityClasses"]["properties"]["worker"]["description"]
    assert "gang.scheduler kubernetes" in worker and "not used" in worker.lower()
    assert worker in (REPO / "docs" / "reference.md").read_text()

"""`tfjobgen place` of a job whose controller cannot create its pods ends at once, naming why.

A pod the API server refuses (here: its ServiceAccount does not exist) is never created, so the scheduler
has nothing to settle: the controller's FailedCreate event (the Job controller's, JobSet's, the
training-operator's) is the answer, said as soon as it appears, not after SETTLE_TIMEOUT.
"""

from __future__ import annotations

import time

import pytest
from cluster_support import need_cluster_tools, tfjobgen

from tfjobgen.place import place

JOB = """\
apiVersion: tfjobgen.dev/v1alpha1
kind: TrainingJob
metadata: {{name: lost-account, namespace: ml}}
spec:
  image: registry.example.com/x:1
  backend: {backend}
  serviceAccountName: no-such-account
  roles:
    ps: {{replicas: 1, cpu: 1, memory: 1Gi}}
    worker: {{replicas: 2, cpu: 1, memory: 1Gi}}
"""
# What each controller calls a pod (or a Job) it could not create, and the object it says it of.
SAID = {"native": ("Job", "FailedCreate"), "jobset": ("Job", "FailedCreate"), "tfjob": ("TFJob", "FailedCreatePod")}


@pytest.mark.parametrize("backend", ["native", "jobset", "tfjob"])
def test_a_pod_the_api_server_refuses_ends_place_with_the_controllers_event(tmp_path, backend):
    need_cluster_tools()
    (tmp_path / "job.yaml").write_text(JOB.format(backend=backend))
    begun = time.monotonic()
    proc = tfjobgen("place", str(tmp_path / "job.yaml"), "--orders", "1", timeout=place.SETTLE_TIMEOUT + 120)
    took = time.monotonic() - begun
    kind, reason = SAID[backend]
    lines = [line for line in proc.stderr.splitlines() if line.startswith("tfjobgen place: ")]
    assert proc.returncode == 1 and len(lines) == 1, proc.stderr
    assert f": {kind} ml/lost-account" in lines[0] and f"({reason})" in lines[0], lines[0]
    assert 'serviceaccount "no-such-account" not found' in lines[0], lines[0]
    assert "did not settle" not in proc.stderr and "Traceback" not in proc.stderr
    assert took < place.SETTLE_TIMEOUT / 2, f"{took:.0f} s: place waited for pods that were never created"

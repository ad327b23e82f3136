"""The backend boundary: every registered backend encodes a plan and decodes it back to the same tasks.

These tests run for each backend in `backends.BACKENDS` and each example job it
can express, so a new backend is held to the same contract by being registered:
one pod per planned task, named as the plan's naming says, whose TF_CONFIG (as
the backend's controller would give it) names that very pod.
"""

from __future__ import annotations

import json

import pytest
from conftest import REPO

from jobs import JOB_FILES, example
from tfjobgen import backends
from tfjobgen.concerns import jobplan
from tfjobgen.expand import pipeline, summary
from tfjobgen.inputs.problems import has_errors
from tfjobgen.shared import contract


def _expressible(backend: str) -> list:
    """(job file, plan, objects) for every example job `backend` can express, with spec.backend set to it."""
    profile = pipeline.load_profile(None)
    found = []
    for path in JOB_FILES:
        job, problems = pipeline.validate(example(path, backend=backend), profile)
        if job is None or has_errors(problems):
            continue  # refused, with a clear error (tests/test_errors.py checks the wording)
        chosen = backends.get(backend)
        found.append((path.name, jobplan.build(job, profile, chosen.naming), chosen.encode(
            jobplan.build(job, profile, chosen.naming))))
    return found


@pytest.mark.parametrize("backend", sorted(backends.BACKENDS))
def test_decode_gives_back_one_pod_per_planned_task(backend):
    cases = _expressible(backend)
    assert cases, f"backend {backend} expresses none of the example jobs"
    for name, job_plan, objects in cases:
        decoded = backends.decode(objects)
        assert [job.name for job in decoded] == [job_plan.job.name], name
        job = decoded[0]
        assert job.backend == backend
        planned = {(t.role, t.index): t for t in job_plan.tasks}
        assert [(p.role, p.index) for p in job.pods] == list(planned), f"{name}: tasks in role and index order"
        for pod in job.pods:
            task = planned[(pod.role, pod.index)]
            assert pod.hostname == task.hostname, f"{name}: {pod.task} is named as the plan says"
            config = json.loads(pod.env[contract.TF_CONFIG])
            assert config["task"] == {"type": pod.role, "index": pod.index}, f"{name}: {pod.task}"
            if pod.role in config["cluster"]:
                address = config["cluster"][pod.role][pod.index]
                assert address == task.address, f"{name}: TF_CONFIG lists {pod.task} at its planned address"
                assert address.split(".")[0] == pod.hostname, f"{name}: the address names the pod's own host"
                assert address.split(":")[0].split(".")[1] == pod.subdomain or pod.subdomain == ""


@pytest.mark.parametrize("backend", sorted(backends.BACKENDS))
def test_summary_reads_every_backend_alike(backend):
    for name, job_plan, objects in _expressible(backend):
        (job,) = summary.jobs(objects)
        assert job.backend == backend
        assert {role: s.replicas for role, s in job.roles.items()} == \
            {role: spec.replicas for role, spec in job_plan.job.roles.items()}, name
        assert job.topology == job_plan.job.topology.mode
        assert job.qos == job_plan.job.qos


def _without_pod_templates(objects: list[dict]) -> list[dict]:
    """The objects with every pod template cut out of the object that carries the job's pods."""
    objects = json.loads(json.dumps(objects))
    for obj in objects:
        spec = obj.get("spec", {})
        if obj["kind"] == "Job":
            del spec["template"]
        for replicated in spec.get("replicatedJobs", []):
            del replicated["template"]["spec"]["template"]
        for replica in spec.get("tfReplicaSpecs", {}).values():
            del replica["template"]
    return objects


@pytest.mark.parametrize("backend", sorted(backends.BACKENDS))
def test_objects_without_pod_templates_are_described_as_far_as_they_go(backend, capsys, tmp_path):
    """`tfjobgen summary` of objects edited by hand: never a traceback; the jobs it can read, and a line
    for each it cannot."""
    from tfjobgen import cli
    from tfjobgen.expand import emit

    _, _, objects = _expressible(backend)[0]
    (job,) = summary.jobs(_without_pod_templates(objects))
    assert job.backend == backend and job.roles == {} and job.topology == "?"
    assert job.unreadable
    path = tmp_path / "rendered.yaml"
    path.write_text(emit.to_yaml(_without_pod_templates(objects)))
    assert cli.main(["summary", str(path)]) == 0
    out, err = capsys.readouterr()
    assert job.key in out and "internal error" not in err
    assert f"{path}: warning: {job.key}: " in err and "no 'template'" in err


def test_decode_ignores_objects_of_no_job_and_keeps_jobs_apart():
    cases = _expressible("native")
    objects = [obj for _, _, group in cases for obj in group]
    stranger = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x", "namespace": "y"},
                "spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}}
    decoded = backends.decode(objects + [stranger])
    assert [(job.namespace, job.name) for job in decoded] == \
        sorted((p.job.namespace, p.job.name) for _, p, _ in cases)
    assert sum(len(job.pods) for job in decoded) == sum(len(p.tasks) for _, p, _ in cases)


def test_the_add_ons_are_the_pipelines_and_the_same_on_every_backend():
    """Monitoring and TensorBoard come from the render step, after the backend's objects: no backend's
    encode emits them, and every backend's job gets the same ones."""
    golden = REPO / "tests" / "golden" / "gpu-monitoring"  # monitoring on, a TensorBoard
    profile = pipeline.load_profile(str(golden / "profile.yaml"))
    added = {}
    for backend in sorted(backends.BACKENDS):
        job, problems = pipeline.validate(example(golden / "job.yaml", backend=backend), profile)
        assert job is not None, problems
        chosen = backends.get(backend)
        encoded = chosen.encode(jobplan.build(job, profile, chosen.naming))
        rendered = pipeline.render(job, profile)
        assert rendered[:len(encoded)] == encoded, backend
        added[backend] = rendered[len(encoded):]
        assert not {o["kind"] for o in encoded} & {"PodMonitor", "PrometheusRule", "Deployment"}, backend
    kinds = [o["kind"] for o in added["native"]]
    assert kinds == ["Deployment", "Service", "NetworkPolicy", "PodMonitor", "PrometheusRule"]
    assert added["jobset"] == added["native"] == added["tfjob"]

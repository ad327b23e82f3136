"""How tasks end: one meaning for every Job shape, the Job controller's documented decisions, and jobs that end.

The Job controller cannot run here, so its decision for a failed pod is a model
(lifecycle.after_failure) checked on the cases Kubernetes documents; the Jobs we
emit are checked against the API server's documented validation rules that an
OpenAPI schema cannot express (kubernetes-validate, in test_kustomize_e2e.py,
checks the fields themselves for 1.30, 1.33 and 1.37).
"""

from __future__ import annotations

import pytest
from conftest import JOBS, REPO, SAMPLE, problems_of, render

from tfjobgen import backends
from tfjobgen.backends import jobset as jobset_backend
from tfjobgen.concerns import lifecycle
from tfjobgen.concerns.lifecycle import Lifecycle
from tfjobgen.expand import pipeline
from tfjobgen.shared import contract

GOLDEN = REPO / "tests" / "golden"
EXAMPLES = [p for p in sorted(JOBS.glob("*.yaml")) if p.name != "kustomization.yaml"] + \
    [case / "job.yaml" for case in sorted(GOLDEN.iterdir()) if (case / "job.yaml").exists()]
STAR = GOLDEN / "star-server" / "job.yaml"  # a program of its own, no failurePolicy
PROFILES = {case.name: case / "profile.yaml" for case in GOLDEN.iterdir() if (case / "profile.yaml").exists()}


def _objects(path):
    return render(path, profile=PROFILES.get(path.parent.name))


def _validated(path):
    intents, _ = pipeline.load_intents([str(path)])
    profile = pipeline.load_profile(str(PROFILES[path.parent.name]) if path.parent.name in PROFILES else None)
    job, problems = pipeline.validate(intents[0], profile)
    return job, profile


# ---- the Jobs we emit ----------------------------------------------------------------------

def _api_server_problems(job: dict) -> list[str]:
    """The API server's rules for these fields (ValidateJobSpec), which no OpenAPI schema expresses."""
    spec, problems = job["spec"], []
    pod = spec["template"]["spec"]
    indexed = spec.get("completionMode") == "Indexed"
    if ("backoffLimitPerIndex" in spec or "maxFailedIndexes" in spec) and not indexed:
        problems.append("backoffLimitPerIndex and maxFailedIndexes need completionMode Indexed")
    if "maxFailedIndexes" in spec and not 0 <= spec["maxFailedIndexes"] <= spec.get("completions", 1):
        problems.append("maxFailedIndexes must be within 0..completions")
    if "podFailurePolicy" in spec:
        if pod.get("restartPolicy") != "Never":
            problems.append("podFailurePolicy needs restartPolicy Never")
        if spec.get("podReplacementPolicy", "Failed") != "Failed":
            problems.append("with podFailurePolicy, podReplacementPolicy may only be Failed")
        names = {c["name"] for c in pod.get("containers", []) + pod.get("initContainers", [])}
        for rule in spec["podFailurePolicy"]["rules"]:
            codes = rule.get("onExitCodes")
            if codes:
                values = codes["values"]
                if not values or len(values) > 255 or values != sorted(set(values)):
                    problems.append(f"exit codes must be 1-255 unique ordered values: {values}")
                if codes["operator"] == "In" and 0 in values:
                    problems.append("0 is not allowed with In")
                if codes.get("containerName") not in names | {None}:
                    problems.append(f"no container {codes['containerName']}")
            for condition in rule.get("onPodConditions", []):
                if condition.get("status") not in ("True", "False", "Unknown"):
                    problems.append("a pod condition pattern needs a status")
    return problems


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_job_fails_a_task_by_its_exit_code_with_its_own_budget(path):
    objects = _objects(path)
    job, profile = _validated(path)
    expected = lifecycle.of(job, profile)
    decoded = backends.decode(objects)[0]
    if decoded.backend == "tfjob":  # no batch/v1 fields: exit codes 1-127 fail it (backends/tfjob.py)
        assert (decoded.lifecycle.retries_per_task, decoded.lifecycle.deadline_seconds) == \
            (expected.retries_per_task, expected.deadline_seconds)
        assert set(expected.permanent_exit_codes) <= set(decoded.lifecycle.permanent_exit_codes)
        return
    # native's Jobs, or the child Jobs a JobSet's controller creates
    jobs = [o for o in objects if o["kind"] == "Job"] + \
        [child for o in objects if o["kind"] == "JobSet" for child, _ in jobset_backend._child_jobs(o)]
    for obj in jobs:
        spec = obj["spec"]
        assert _api_server_problems(obj) == [], obj["metadata"]["name"]
        assert spec["template"]["spec"]["restartPolicy"] == "Never", "a failed task gets a new pod, by the Job's rules"
        assert spec["podReplacementPolicy"] == "Failed", "never a new pod beside a terminating one"
        if spec.get("completionMode") == "Indexed":
            assert (spec["backoffLimitPerIndex"], spec["maxFailedIndexes"]) == (expected.retries_per_task, 0)
            assert "backoffLimit" not in spec, "no pool shared by the role's tasks"
        else:
            assert spec["backoffLimit"] == expected.retries_per_task and spec.get("completions", 1) == 1
        rules = spec["podFailurePolicy"]["rules"]
        assert rules[0] == {"action": "Ignore", "onPodConditions": [{"status": "True", "type": "DisruptionTarget"}]}
    # One meaning whatever the Job shape: every Job reads back as the same rules.
    assert {lifecycle.from_batch_job_spec(o["spec"]) for o in jobs} == {expected}
    assert backends.decode(objects)[0].lifecycle == expected


def test_indexed_and_per_task_jobs_mean_the_same():
    indexed = render(GOLDEN / "spread-tf2" / "job.yaml")
    per_task = render(GOLDEN / "spread-tf2" / "job.yaml", profile=GOLDEN / "per-task-objects" / "profile.yaml")
    kinds = {o["spec"].get("completionMode", "NonIndexed") for o in per_task if o["kind"] == "Job"}
    assert kinds == {"NonIndexed"} and backends.decode(indexed)[0].lifecycle == backends.decode(per_task)[0].lifecycle


def test_the_runtime_fails_the_job_on_its_permanent_codes_and_a_program_on_those_it_declares(tmp_path):
    [runtime] = [o for o in render(JOBS / "wide-deep.yaml") if o["metadata"]["name"] == "wide-deep-ps"]
    [fail] = [r for r in runtime["spec"]["podFailurePolicy"]["rules"] if r["action"] == "FailJob"]
    assert fail["onExitCodes"] == {"containerName": contract.CONTAINER_NAME, "operator": "In",
                                   "values": list(contract.PERMANENT_EXIT_CODES)}
    own = tmp_path / "own.yaml"
    own.write_text(STAR.read_text() + "  failurePolicy: {permanentExitCodes: [42, 3], activeDeadlineSeconds: 600}\n")
    jobs = [o for o in render(own) if o["kind"] == "Job"]
    # The entrypoint's own exits (refused, chief gone, stopped) are permanent too, beside the declared ones.
    assert all(lifecycle.from_batch_job_spec(j["spec"]) == Lifecycle(3, (2, 3, 4, 42), 600) for j in jobs)
    default = [o for o in render(STAR) if o["kind"] == "Job"]
    assert all(lifecycle.from_batch_job_spec(j["spec"]).permanent_exit_codes == contract.PERMANENT_EXIT_CODES
               for j in default), "none declared: the entrypoint's"


def test_the_runtime_reads_its_budget_and_failure_count():
    pods = backends.pods_of(render(JOBS / "wide-deep.yaml"))
    assert {(p.env[contract.RETRIES_ENV], p.env[contract.FAILURES_ENV]) for p in pods} == {("3", "0")}
    per_task = backends.pods_of(render(JOBS / "scene1-case1.yaml"))  # colocated: a Job per task
    assert {p.env[contract.RETRIES_ENV] for p in per_task} == {"3"}
    assert all(contract.FAILURES_ENV not in p.env for p in per_task), "a one-task Job's pods are not counted"


# ---- the Job controller's decisions, on Kubernetes' documented cases -------------------------

def test_a_failed_task_gets_new_pods_while_its_budget_lasts():
    """The docs' backoffLimitPerIndex: 1 example: an index failing with exit 1 is retried once, then fails."""
    rules = Lifecycle(1, (), None)
    first = lifecycle.after_failure(rules, 1, disrupted=False, counted=0, ignored=0)
    assert (first.fails_job, first.counted, first.delay) == (False, True, 10.0)
    second = lifecycle.after_failure(rules, 1, disrupted=False, counted=1, ignored=0)
    assert second.fails_job and "no retry left of 1" in second.reason


def test_a_permanent_exit_code_fails_the_job_at_once_and_a_disruption_is_never_counted():
    """The docs' podFailurePolicy example: FailJob on exit code 42, Ignore on DisruptionTarget."""
    rules = Lifecycle(6, (42,), None)
    assert lifecycle.after_failure(rules, 42, disrupted=False, counted=0, ignored=0).fails_job
    evicted = lifecycle.after_failure(rules, 42, disrupted=True, counted=0, ignored=0)
    assert not evicted.fails_job and not evicted.counted, "the Ignore rule comes first"
    assert not lifecycle.after_failure(Lifecycle(0, (), None), 137, disrupted=True, counted=0, ignored=5).fails_job


def test_new_pods_wait_ten_seconds_doubling_to_ten_minutes_per_failure_of_the_task():
    """The Job controller's delay per index: 10 s x 2^(failures - 1), counted or not, at most 10 min."""
    assert [lifecycle.replacement_delay(n) for n in (1, 2, 3, 4, 7, 50)] == [10, 20, 40, 80, 600, 600]
    rules = Lifecycle(9, (), None)
    assert lifecycle.after_failure(rules, 1, disrupted=False, counted=1, ignored=1).delay == 40.0


# ---- every job ends ---------------------------------------------------------------------------

def _warnings(text, tmp_path, profile=None):
    return [p for p in problems_of(text, tmp_path, profile=profile) if not p.is_error]


@pytest.mark.parametrize("backend", ["native", "jobset", "tfjob"])
def test_a_program_of_ones_own_runs_under_the_entrypoint_which_ends_its_ps_on_every_backend(backend, tmp_path):
    """Issue 32: validate warned 'nothing ends this job's PS' (also on jobset, whose successPolicy ends it), and
    on native nothing did. Now every backend's pods run the program under the entrypoint, which ends them."""
    text = STAR.read_text().replace("spec:\n", f"spec:\n  backend: {backend}\n", 1)
    assert not [w for w in _warnings(text, tmp_path) if "nothing ends" in w.message]
    job = tmp_path / "job.yaml"
    job.write_text(text)
    pods = backends.pods_of(render(job))
    assert pods and all(p.container["command"][:2] == [contract.ENTRY_PROGRAM, "--"] for p in pods)
    assert all([c["name"] for c in p.spec["initContainers"]] == [contract.ENTRY_CONTAINER] for p in pods)
    assert all(p.env[contract.CONTROL_ADDRESS_ENV] and p.env[contract.CHIEF_ABSENCE_ENV] == "600" for p in pods)


def test_a_program_of_ones_own_keeps_the_profiles_deadline(tmp_path):
    seed = SAMPLE / "overlays" / "seed-80c" / "cluster-profile.yaml"  # sets ownProgramDeadlineSeconds
    jobs = [o for o in render(STAR, profile=seed) if o["kind"] == "Job"]
    assert {j["spec"]["activeDeadlineSeconds"] for j in jobs} == {259200}
    own = [o for o in render(JOBS / "deeprec-starserver.yaml", profile=seed) if o["kind"] == "Job"]
    assert {j["spec"]["activeDeadlineSeconds"] for j in own} == {172800}, "the job's own deadline wins"
    runtime = [o for o in render(JOBS / "wide-deep.yaml", profile=seed) if o["kind"] == "Job"]
    assert all("activeDeadlineSeconds" not in j["spec"] for j in runtime), "the runtime ends its own PS"


def test_without_a_chief_the_job_is_tf1_and_worker_0_is_the_chief(tmp_path):
    text = (JOBS / "scene2-case1.yaml").read_text().replace("  api: tf1\n", "")  # the seed's shape, no api
    assert not [p for p in problems_of(text, tmp_path) if p.is_error]
    path = tmp_path / "job.yaml"
    path.write_text(text)
    pods = backends.pods_of(render(path))
    assert {p.env[contract.API_ENV] for p in pods} == {"tf1"}
    assert {p.env[contract.CONTROL_ADDRESS_ENV] for p in pods} == {"scene2-case1-worker-0.scene2-case1:2224"}

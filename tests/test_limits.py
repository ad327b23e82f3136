"""Big jobs: what fits in one environment string, checked against this machine's own kernel.

The issue's case, 250 PS + 2,500 workers, did not start: its TF_CONFIG was longer than
Linux lets one environment string be. Namespace-relative addresses make it fit; what
still does not fit is refused at validation, naming the limit and the workers that fit.
"""

from __future__ import annotations

import copy
import dataclasses
import errno
import subprocess

import pytest
from conftest import JOBS, problems_of

from tfjobgen import backends
from tfjobgen.concerns import jobplan, limits, names
from tfjobgen.expand import pipeline
from tfjobgen.inputs import schema, trainingjob
from tfjobgen.inputs.problems import WARNING

PROFILE = pipeline.load_profile(None)
NATIVE = backends.get("native").naming
# The addresses tfjobgen wrote before: fully qualified, `<pod>.<service>.<namespace>.svc.<domain>:<port>`.
FULLY_QUALIFIED = dataclasses.replace(NATIVE, address=lambda job, profile, role, index: (
    f"{names.fully_qualified(job, profile, names.task(job, role, index) + '.' + names.service(job))}:"
    f"{profile.grpc_port}"))


def _wide_deep_data(ps: int, workers: int, star_server: bool = False) -> dict:
    data = pipeline.load_intents([str(JOBS / "wide-deep.yaml")])[0][0].data
    data = copy.deepcopy(data)
    data["spec"]["roles"]["ps"]["replicas"], data["spec"]["roles"]["worker"]["replicas"] = ps, workers
    if star_server:
        data["spec"].update(protocol="star_server", api="tf1")
        del data["spec"]["roles"]["chief"], data["spec"]["roles"]["evaluator"]
    return data


def _wide_deep(ps: int, workers: int, star_server: bool = False) -> trainingjob.TrainingJob:
    return trainingjob.training_job(schema.with_defaults(_wide_deep_data(ps, workers, star_server), schema.TRAINING_JOB))


def test_the_issues_job_fits_with_namespace_relative_addresses_and_did_not_without():
    job = _wide_deep(250, 2500)
    assert limits.sizes(job, PROFILE, NATIVE).env_string <= limits.ENV_STRING_MAX < \
        limits.sizes(job, PROFILE, FULLY_QUALIFIED).env_string
    assert limits.check(job, PROFILE, NATIVE) == []


def test_what_does_not_fit_is_refused_naming_the_limit_and_the_workers_that_fit():
    [problem] = limits.check(_wide_deep(250, 5000), PROFILE, NATIVE)
    assert problem.field == "spec.roles.worker.replicas" and problem.is_error
    assert "Linux refuses one environment string over 131,072 bytes (MAX_ARG_STRLEN)" in problem.message
    fits = int(problem.message.split("at most ")[1].split(" workers")[0].replace(",", ""))
    assert limits.check(_wide_deep(250, fits), PROFILE, NATIVE) == []
    assert limits.check(_wide_deep(250, fits + 1), PROFILE, NATIVE), "the count named is the largest that fits"


def _exec_with(env: dict[str, str]) -> int:
    """0 when this kernel runs a program with exactly this environment, else the errno of execve."""
    try:
        return subprocess.run(["/bin/true"], env=env, timeout=30).returncode
    except OSError as err:
        return err.errno


def test_the_limit_is_this_kernels():
    """MAX_ARG_STRLEN counts NAME=value and its NUL: 131,072 bytes run, one more does not."""
    name = "TF_CONFIG"
    value = "x" * (limits.ENV_STRING_MAX - len(name) - 2)  # '=' and the NUL
    assert _exec_with({name: value}) == 0
    assert _exec_with({name: value + "x"}) == errno.E2BIG


@pytest.mark.slow  # seconds of CPU: the largest accepted environment, built and started
def test_the_pod_environment_of_the_largest_accepted_job_starts_and_one_more_worker_does_not():
    """The real env a kubelet would give the last worker (pods.py resolves it), exec'd by the kernel."""
    [problem] = limits.check(_wide_deep(250, 5000), PROFILE, NATIVE)
    fits = int(problem.message.split("at most ")[1].split(" workers")[0].replace(",", ""))
    for workers, starts in ((fits, True), (fits + 1, False)):
        objects = backends.get("native").encode(jobplan.build(_wide_deep(250, workers), PROFILE, NATIVE))
        last = backends.pods_of(objects)[-1]
        assert (last.role, last.index) == ("worker", workers - 1)
        assert (_exec_with(last.env) == 0) is starts, f"{workers} workers"


def test_a_big_star_server_config_map_warns_that_argo_cd_needs_server_side_apply(tmp_path):
    job = _wide_deep(200, 1800, star_server=True)
    found = limits.sizes(job, PROFILE, NATIVE)
    assert limits.ANNOTATIONS_MAX < found.last_applied and found.config_map < limits.CONFIG_MAP_MAX
    [warning] = limits.check(job, PROFILE, NATIVE)
    assert warning.severity == WARNING and "ServerSideApply=true" in warning.message


@pytest.mark.parametrize("star_server", [False, True])
def test_the_config_map_limit_follows_from_the_environment_limit(star_server):
    """The ConfigMap holds the cluster spec once (twice with the endpoint map): any job whose TF_CONFIG
    fits one environment string fits the API server's 1 MiB."""
    [problem] = limits.check(_wide_deep(250, 5000, star_server), PROFILE, NATIVE)
    fits = int(problem.message.split("at most ")[1].split(" workers")[0].replace(",", ""))
    assert limits.sizes(_wide_deep(250, fits, star_server), PROFILE, NATIVE).config_map < limits.CONFIG_MAP_MAX


def test_validate_names_the_line_of_the_field(tmp_path):
    text = (JOBS / "wide-deep.yaml").read_text().replace("worker: {replicas: 32", "worker: {replicas: 5000")
    text = text.replace("ps: {replicas: 4", "ps: {replicas: 300")
    [problem] = [p for p in problems_of(text, tmp_path) if p.is_error]
    assert (problem.file.endswith("job.yaml"), problem.field) == (True, "spec.roles.worker.replicas")
    assert problem.line == next(i for i, line in enumerate(text.splitlines(), 1) if "worker: {replicas" in line)

"""Bad input gets one clear line per problem (file:line: field: message), exit code 1, no traceback.

The catalogue of single bad inputs is tests/refusals/ (one folder per case, run by
tests/test_refusals.py); the tests here are about several files at once, warnings and usage.
"""

from __future__ import annotations

import textwrap

from conftest import SAMPLE, run_tfjobgen
from jobs import SMALL_JOB as GOOD



def job(**replace: str) -> str:
    """GOOD with lines replaced: job(**{"    ps: {...}": "    ps: {...}"})."""
    text = GOOD
    for old, new in replace.items():
        assert old in text, old
        text = text.replace(old, new)
    return text


PS = "    ps: {replicas: 2, cpu: 4, memory: 8Gi}"
WORKER = "    worker: {replicas: 4, cpu: 2, memory: 4Gi}"
NAME = "  name: ok"
IMAGE = "  image: registry.example.com/x:1"


def test_the_good_job_is_valid(tmp_path):
    (tmp_path / "job.yaml").write_text(GOOD)
    proc = run_tfjobgen("validate", "job.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_render_emits_nothing_when_any_job_is_bad(tmp_path):
    (tmp_path / "good.yaml").write_text(GOOD)
    (tmp_path / "bad.yaml").write_text(job(**{NAME: "  name: bad", WORKER: "    worker: {replicas: 0, cpu: 2, memory: 4Gi}"}))
    proc = run_tfjobgen("render", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 1 and proc.stdout == ""
    assert "bad.yaml:10: spec.roles.worker.replicas" in proc.stderr


def test_duplicate_job_names_name_both_files(tmp_path):
    (tmp_path / "a.yaml").write_text(GOOD)
    (tmp_path / "b.yaml").write_text(GOOD)
    proc = run_tfjobgen("validate", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 1
    assert "b.yaml:4: metadata.name: job name 'ok' is already used by" in proc.stderr
    assert "a.yaml:4 (in the same namespace)" in proc.stderr
    (tmp_path / "b.yaml").write_text(GOOD.replace("namespace: ml", "namespace: other"))
    proc = run_tfjobgen("validate", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 1 and "(in namespace ml): job names must be unique in the repository" in proc.stderr


def test_warnings_do_not_fail(tmp_path):
    (tmp_path / "job.yaml").write_text(job(**{IMAGE: IMAGE + "\n  starServer: {psPolling: true}"}))
    proc = run_tfjobgen("validate", "job.yaml", cwd=tmp_path)
    assert proc.returncode == 0
    assert "job.yaml:8: warning: spec.starServer: starServer settings only apply" in proc.stderr


def test_documents_beside_a_job_in_a_named_file_are_said_not_dropped(tmp_path):
    """A named job file also holding a ConfigMap (or a profile): tfjobgen reads only the job, and says so."""
    profile = "apiVersion: tfjobgen.dev/v1alpha1\nkind: ClusterProfile\nmetadata: {name: p}\nspec: {}\n"
    (tmp_path / "job.yaml").write_text(GOOD + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\n---\n"
                                       + profile)
    proc = run_tfjobgen("validate", "job.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "job.yaml:14: warning: ConfigMap extra is not a TrainingJob: tfjobgen reads only the jobs of this file and " \
           "passes over it" in proc.stderr
    assert "job.yaml:18: warning: ClusterProfile p is not a TrainingJob" in proc.stderr and "name it with --profile" \
        in proc.stderr


def test_training_settings_beside_a_command_of_ones_own_are_said_to_do_nothing(tmp_path):
    (tmp_path / "job.yaml").write_text(job(**{IMAGE: IMAGE + "\n  command: [python, train.py]\n  training: {steps: 10}"}))
    proc = run_tfjobgen("validate", "job.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "job.yaml:9: warning: spec.training: spec.training configures tfjobgen's own runtime, which does not " \
           "run when spec.command is set" in proc.stderr
    (tmp_path / "job.yaml").write_text(job(**{IMAGE: IMAGE + "\n  command: [python, train.py]"}))
    assert "spec.training" not in run_tfjobgen("validate", "job.yaml", cwd=tmp_path).stderr


def test_usage_errors_exit_2(tmp_path):
    assert run_tfjobgen("validate", "missing.yaml", cwd=tmp_path).returncode == 2
    assert run_tfjobgen("frobnicate", cwd=tmp_path).returncode == 2
    assert run_tfjobgen("validate", cwd=tmp_path).returncode == 2


def test_a_job_file_missing_from_the_kustomization_is_reported(tmp_path):
    (tmp_path / "listed.yaml").write_text(GOOD)
    (tmp_path / "forgotten.yaml").write_text(job(**{NAME: "  name: forgotten"}))
    (tmp_path / "kustomization.yaml").write_text("resources:\n- listed.yaml\n")
    proc = run_tfjobgen("validate", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 1
    assert "forgotten.yaml:1: not listed in" in proc.stderr and "add '- forgotten.yaml' under resources" in proc.stderr


def test_a_bad_profile_is_named_too(tmp_path):
    (tmp_path / "job.yaml").write_text(GOOD)
    (tmp_path / "profile.yaml").write_text(textwrap.dedent("""\
        apiVersion: tfjobgen.dev/v1alpha1
        kind: ClusterProfile
        metadata: {name: p}
        spec:
          ports: {grpc: 80}
        """))
    proc = run_tfjobgen("validate", "job.yaml", "--profile", "profile.yaml", cwd=tmp_path)
    assert proc.returncode == 1
    assert "profile.yaml:5: spec.ports.grpc: 80 is out of range: must be at least 1024" in proc.stderr


def test_profile_rules_are_reported_once_per_build_at_the_profile(tmp_path):
    (tmp_path / "a.yaml").write_text(GOOD)
    (tmp_path / "b.yaml").write_text(job(**{NAME: "  name: other"}))
    proc = run_tfjobgen("validate", str(tmp_path), cwd=tmp_path)  # the embedded profile names no CPU-manager nodes
    assert proc.returncode == 0
    lines = [line for line in proc.stderr.splitlines() if "names no CPU-manager nodes" in line]
    assert len(lines) == 1 and lines[0].startswith("ClusterProfile default: warning: spec.cpuManager.nodeSelector:")
    (tmp_path / "profile.yaml").write_text(textwrap.dedent("""\
        apiVersion: tfjobgen.dev/v1alpha1
        kind: ClusterProfile
        metadata: {name: p}
        spec:
          node: {cpu: 80, memory: 256Gi}
          cpuManager: {nodeSelector: {cpu-manager-policy: static}}
        """))
    proc = run_tfjobgen("validate", str(tmp_path / "a.yaml"), "--profile", "profile.yaml", cwd=tmp_path)
    assert proc.returncode == 0
    assert ("profile.yaml:5: warning: spec.node.reservedCpus: spec.node.cpu (80) is taken as what pods get, but the "
            "static CPU manager needs the kubelet to reserve at least one CPU") in proc.stderr
    (tmp_path / "profile.yaml").write_text((tmp_path / "profile.yaml").read_text().replace(
        "cpu: 80,", "cpu: 80, reservedCpus: 0,"))
    proc = run_tfjobgen("render", str(tmp_path / "a.yaml"), "--profile", "profile.yaml", cwd=tmp_path)
    assert proc.returncode == 1 and proc.stdout == ""
    assert "profile.yaml:5: spec.node.reservedCpus: the kubelet refuses the static CPU manager policy without a " \
           "CPU reservation" in proc.stderr


def test_the_cpu_manager_warning_is_for_cpuset_jobs_and_said_once(tmp_path):
    (tmp_path / "a.yaml").write_text(job(**{IMAGE: IMAGE + "\n  qos: shared"}))
    (tmp_path / "b.yaml").write_text(job(**{NAME: "  name: other", IMAGE: IMAGE + "\n  qos: shared"}))
    for command in ("validate", "render", "plan"):
        proc = run_tfjobgen(command, str(tmp_path), cwd=tmp_path)
        assert proc.returncode == 0 and "CPU-manager" not in proc.stderr, (command, proc.stderr)
    (tmp_path / "b.yaml").write_text(job(**{NAME: "  name: other"}))  # cpuset: the warning matters now
    for command in ("validate", "render", "plan"):
        proc = run_tfjobgen(command, str(tmp_path), cwd=tmp_path)
        assert proc.returncode == 0 and proc.stderr.count("names no CPU-manager nodes") == 1, (command, proc.stderr)


def test_capacity_is_what_pods_get_after_the_reserved_cpus(tmp_path):
    (tmp_path / "job.yaml").write_text(job(**{PS: "    ps: {replicas: 2, cpu: 80, memory: 8Gi}"}))
    seed = str(SAMPLE / "overlays" / "seed-80c" / "cluster-profile.yaml")  # 80 cores, 1 reserved
    proc = run_tfjobgen("validate", "job.yaml", "--profile", seed, cwd=tmp_path)
    assert proc.returncode == 1
    assert "spec.roles.ps: one ps (80 CPU, 8Gi) does not fit on a node (79 CPU, 256Gi in profile 'seed-80c')" \
        in proc.stderr


def test_a_warning_about_the_embedded_profile_says_it_is_the_embedded_one(capsys):
    """run-local (and validate, render, plan) of a repository job without --profile use the embedded default: its
    CPU-manager warning named "profile 'default'" as if the user had written one. It says where the value is from."""
    from tfjobgen import cli
    from tfjobgen.local import run
    from tfjobgen.local.shape import LocalError

    args = cli._parser().parse_args(["run-local", str(SAMPLE / "jobs" / "wide-deep.yaml")])  # qos cpuset
    try:
        run.prepare(args)
    except LocalError:  # no TensorFlow here (test.yml's fast job): it stops after the job's warnings
        pass
    [line] = [line for line in capsys.readouterr().err.splitlines() if "CPU-manager nodes" in line]
    assert line.startswith("ClusterProfile default: warning: spec.cpuManager.nodeSelector: the embedded default "
                           "profile (no --profile was given) names no CPU-manager nodes"), line
    assert "profile 'default'" not in line and "--profile FILE" in line, line

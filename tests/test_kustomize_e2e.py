"""Every overlay, built the way CI and Argo CD build it, and what comes out.

Real tools only: kubectl's embedded kustomize (v5.5) running the tfjobgen
plugin, kubernetes-validate's strict schemas, and a standalone `kustomize`
when one is on PATH.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from collections import Counter

import pytest
from cluster_dns import ClusterDNS
from conftest import OVERLAYS, REPO, SAMPLE, kubectl, kustomize_build, load_yaml_stream, need

from jobs import JOB_FILES
from tfjobgen import backends
from tfjobgen.concerns import labels
from tfjobgen.expand import summary

# Kubernetes versions the output is validated against: the oldest supported and the newest bundled.
SUPPORTED = ["1.30", "1.33", "1.37"]


@functools.cache
def _validator():
    import kubernetes_validate.utils as kv

    # kubernetes-validate re-reads its large _definitions.json for every object; cache the file reads
    # (the validation itself is untouched) so that a full build validates in seconds.
    kv.schema_contents = functools.lru_cache(maxsize=None)(kv.schema_contents)
    return kv


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_overlay_builds_and_no_intent_survives(overlay_objects, overlay):
    objects = overlay_objects[overlay]
    kinds = Counter(o["kind"] for o in objects)
    assert "TrainingJob" not in kinds and "ClusterProfile" not in kinds
    monitoring = {"PodMonitor", "PrometheusRule"} if overlay == "prod-96c" else set()  # its profile turns it on
    assert set(kinds) == {"ConfigMap", "Service", "NetworkPolicy", "Job", "JobSet"} | monitoring  # jobs/ctr-jobset.yaml
    assert len(summary.jobs(objects)) == len(JOB_FILES), "every intent in jobs/ became a job"


@pytest.mark.parametrize("overlay", OVERLAYS)
@pytest.mark.parametrize("version", SUPPORTED)
def test_overlay_output_passes_kubernetes_validate_strict(overlay_objects, overlay, version):
    kv = _validator()
    failures = []
    for obj in overlay_objects[overlay]:
        if "." in obj["apiVersion"].split("/")[0] and not obj["apiVersion"].endswith(".k8s.io/v1"):
            continue  # a custom resource: test_backend_objects.py and test_monitoring.py check it (CRDs)
        try:
            kv.validate(obj, version, strict=True)
        except kv.ValidationError as err:
            failures.append(f"{obj['kind']} {obj['metadata']['name']}: {err.message} at {list(err.path)}")
    assert not failures, "\n".join(failures[:10])


def test_strict_validation_can_fail():
    """The validator really is strict: an unknown field in a pod spec is rejected."""
    kv = _validator()
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x"}, "spec": {"template": {
        "spec": {"containers": [{"name": "c", "image": "i", "cpus": 2}], "restartPolicy": "Never"}}}}
    with pytest.raises(kv.ValidationError):
        kv.validate(job, SUPPORTED[0], strict=True)


def test_every_tf_config_names_the_pod_it_runs_in(overlay_objects):
    """After the kubelet expands the env, each pod's TF_CONFIG points `task` at itself, and its own address
    reaches it through the pod's DNS search path (tests/test_tf_config.py checks every address)."""
    for overlay, objects in overlay_objects.items():
        decoded = backends.decode(objects)
        pods = [pod for job in decoded for pod in job.pods]
        dns = ClusterDNS(objects + [o for job in decoded for o in job.created], pods)
        for pod in pods:
            tf_config = json.loads(pod.env["TF_CONFIG"])
            task = tf_config["task"]
            assert (task["type"], task["index"]) == (pod.role, pod.index)
            if pod.role != "evaluator":  # outside the training cluster, as TensorFlow wants it
                own = tf_config["cluster"][task["type"]][task["index"]]
                assert dns.resolve(own.rsplit(":", 1)[0], pod.namespace) is pod, f"{overlay}: {pod.task} dials {own}"
            assert pod.unresolved == []


def test_build_is_deterministic(built_overlays):
    overlay = OVERLAYS[0]
    again = kustomize_build(SAMPLE / "overlays" / overlay, env={"PYTHONHASHSEED": "4242"})
    assert again.returncode == 0 and again.stdout == built_overlays[overlay]


def test_overlays_patch_intents_before_expansion(overlay_objects):
    """prod-96c patches replicas and pins an image tag with the standard `images:` field; its profile's
    isolatedPools give the isolated deeprec-ctr its node pools."""
    prod = {s.name: s for s in summary.jobs(overlay_objects["prod-96c"])}
    seed = {s.name: s for s in summary.jobs(overlay_objects["seed-80c"])}
    assert seed["wide-deep"].roles["worker"].replicas == 32 and prod["wide-deep"].roles["worker"].replicas == 48
    images = {o["spec"]["template"]["spec"]["containers"][0]["image"]
              for o in overlay_objects["prod-96c"]
              if o["kind"] == "Job" and o["metadata"]["labels"][labels.JOB] == "wide-deep"}
    assert images == {"mirror.prod.example.com/ml/tfjobgen-runtime:0.1.0-prod"}, "the profile's mirror, same path"
    deeprec_ps = next(o for o in overlay_objects["prod-96c"] if o["metadata"]["name"] == "deeprec-ctr-ps")
    assert deeprec_ps["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "ps-highmem", "cpu-manager-policy": "static"}


def _copy_overlay(tmp_path, profile_text: str | None = None):
    """A throwaway copy of the sample's jobs, bases and one overlay to break things in."""
    for folder in ("jobs", "bases"):
        shutil.copytree(SAMPLE / folder, tmp_path / folder)
    overlay = tmp_path / "overlays" / "x"
    shutil.copytree(SAMPLE / "overlays" / "seed-80c", overlay)
    if profile_text is not None:
        (overlay / "cluster-profile.yaml").write_text(profile_text)
    return overlay


def test_without_the_plugin_the_build_fails_loudly(tmp_path):
    overlay = _copy_overlay(tmp_path)
    proc = subprocess.run([kubectl(), "kustomize", str(overlay)], capture_output=True, text=True)
    assert proc.returncode != 0 and "plugins" in proc.stderr and proc.stdout == ""


def test_if_the_function_is_skipped_the_intents_come_out_unchanged(tmp_path):
    """An exec KRM function that kustomize skips (kubectl has no --enable-exec) leaves the intents in
    the output, so `kubectl apply` fails on the unknown kind instead of pruning running jobs."""
    profile = (SAMPLE / "overlays" / "seed-80c" / "cluster-profile.yaml").read_text().replace(
        "metadata:\n  name: seed-80c\n",
        "metadata:\n  name: seed-80c\n  annotations:\n    config.kubernetes.io/function: |\n"
        "      exec:\n        path: tfjobgen-krm\n")
    overlay = _copy_overlay(tmp_path, profile)
    proc = kustomize_build(overlay)
    assert proc.returncode == 0
    objects = load_yaml_stream(proc.stdout)
    assert {o["kind"] for o in objects} == {"TrainingJob"}
    assert len(objects) == len(JOB_FILES)


def test_a_profile_rule_names_the_line_of_the_users_profile_not_kustomizes_copy(tmp_path):
    """kustomize hands the plugin a temporary copy of the profile; the error points at the user's file."""
    profile = (SAMPLE / "overlays" / "seed-80c" / "cluster-profile.yaml").read_text()
    overlay = _copy_overlay(tmp_path, profile.replace("reservedCpus: 1", "reservedCpus: 0"))
    line = next(i for i, text in enumerate(profile.splitlines(), 1) if "reservedCpus" in text)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    proc = kustomize_build(overlay)
    assert proc.returncode != 0 and proc.stdout == ""
    assert f"overlays/x/cluster-profile.yaml:{line}: spec.node.reservedCpus: the kubelet refuses the static CPU " \
           "manager policy without a CPU reservation" in proc.stderr, proc.stderr


def test_an_invalid_job_stops_the_whole_build_with_its_file_and_line(tmp_path):
    overlay = _copy_overlay(tmp_path)
    job = tmp_path / "jobs" / "wide-deep.yaml"
    job.write_text(job.read_text().replace("worker: {replicas: 32, cpu: 4,", "worker: {replicas: 32, cpu: 4.5,"))
    line = job.read_text().splitlines().index("    worker: {replicas: 32, cpu: 4.5, memory: 8Gi}") + 1
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    proc = kustomize_build(overlay)
    assert proc.returncode != 0 and proc.stdout == ""
    assert f"jobs/wide-deep.yaml:{line}: spec.roles.worker.cpu: qos cpuset needs whole CPUs" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_value_an_overlay_patch_wrote_is_reported_at_the_patch(tmp_path):
    """The job file still says 32 workers; the overlay's patch says 0: the line to fix is the patch's."""
    overlay = _copy_overlay(tmp_path)
    prod = (SAMPLE / "overlays" / "prod-96c" / "kustomization.yaml").read_text()
    (overlay / "kustomization.yaml").write_text(prod.replace("value: 48", "value: 0"))
    line = next(i for i, text in enumerate(prod.splitlines(), 1) if "path: /spec/roles/worker/replicas" in text)
    job_line = next(i for i, text in enumerate((SAMPLE / "jobs" / "wide-deep.yaml").read_text().splitlines(), 1)
                    if "worker: {replicas: 32" in text)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    proc = kustomize_build(overlay)
    assert proc.returncode != 0 and proc.stdout == ""
    assert (f"overlays/x/kustomization.yaml:{line}: spec.roles.worker.replicas: 0 is out of range: must be at "
            f"least 1 (set by this overlay's patch; jobs/wide-deep.yaml:{job_line} has 32)") in proc.stderr, proc.stderr


def test_a_build_without_jobs_is_refused(tmp_path):
    overlay = _copy_overlay(tmp_path)
    (tmp_path / "jobs" / "kustomization.yaml").write_text("resources: []\n")
    (tmp_path / "bases" / "extra.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: unrelated, namespace: x}\n")
    bases = tmp_path / "bases" / "kustomization.yaml"
    bases.write_text(bases.read_text().replace("- ../jobs\n", "- ../jobs\n- extra.yaml\n"))
    proc = kustomize_build(overlay)
    assert proc.returncode != 0 and "no TrainingJob among the 1 objects of this build" in proc.stderr


def test_standalone_kustomize_gives_the_same_bytes(built_overlays):
    """The kustomize Argo CD's repo-server runs (make cluster-tools builds Argo CD 3.2's, v5.7) gives the
    bytes kubectl's embedded v5.5 gives."""
    from tfjobgen.artifacts import programs

    built = None if programs.missing(["kustomize"]) else str(programs.program("kustomize"))
    kustomize = need("kustomize (standalone)", built, "run `make cluster-tools`")
    env = {**os.environ, "KUSTOMIZE_PLUGIN_HOME": str(REPO / "plugins")}
    for overlay in OVERLAYS:
        proc = subprocess.run([kustomize, "build", "--enable-alpha-plugins", "--enable-exec",
                               str(SAMPLE / "overlays" / overlay)], capture_output=True, text=True, env=env)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == built_overlays[overlay]

"""Monitoring (profile spec.monitoring) and GPUs (roles' gpu, profile spec.gpu).

The monitoring objects are read from a real kustomize build of overlays/prod-96c, which turns
monitoring on; PodMonitor and PrometheusRule are validated with the upstream CRDs' openAPIV3Schema
(../shared/crds), and the PodMonitor is checked against the pods the Job controller would create
(backends.pods_of), not against strings.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pss
import pytest
from conftest import REPO, SAMPLE, crd_dir, need, problems_of, render, uses

from jobs import job_yaml
from tfjobgen import backends
from tfjobgen.concerns import capacity, labels, qos
from tfjobgen.expand import pipeline
from tfjobgen.gitops import crds
from tfjobgen.shared import contract

PROD = "prod-96c"
GOLDEN_GPU = REPO / "tests" / "golden" / "gpu-monitoring"
PROD_PROFILE = SAMPLE / "overlays" / PROD / "cluster-profile.yaml"


def _of_kind(objects, kind):
    return [o for o in objects if o.get("kind") == kind]


def _matches(selector: dict, pod_labels: dict) -> bool:
    """A labelSelector's matchLabels and matchExpressions (In, NotIn, Exists, DoesNotExist), as Kubernetes reads it."""
    if any(pod_labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for term in selector.get("matchExpressions", []):
        key, op, values = term["key"], term["operator"], term.get("values", [])
        if (op == "In" and pod_labels.get(key) not in values) or (op == "NotIn" and pod_labels.get(key) in values) \
                or (op == "Exists" and key not in pod_labels) or (op == "DoesNotExist" and key in pod_labels):
            return False
    return True


def test_prod_overlay_monitoring_objects_are_valid_against_the_upstream_crds(overlay_objects):
    schemas = crds.load(crd_dir())
    objects = overlay_objects[PROD]
    monitors, rules = _of_kind(objects, "PodMonitor"), _of_kind(objects, "PrometheusRule")
    jobs = backends.decode(objects)
    assert len(monitors) == len(rules) == len(jobs) > 0, "one PodMonitor and one PrometheusRule per job"
    for obj in monitors + rules:
        errors = crds.crd_errors(obj, schemas)
        assert errors is not None, f"no CRD for {obj['kind']} in {crd_dir()}"
        assert errors == [], f"{obj['kind']} {obj['metadata']['name']}: {errors}"


def test_each_pod_monitor_selects_exactly_its_jobs_pods_on_a_port_they_expose(overlay_objects):
    objects = overlay_objects[PROD]
    pods = backends.pods_of(objects)
    for monitor in _of_kind(objects, "PodMonitor"):
        namespace = monitor["metadata"]["namespace"]
        selected = [p for p in pods if p.namespace == namespace and _matches(monitor["spec"]["selector"], p.labels)]
        own = [p for p in pods if p.namespace == namespace and p.labels[labels.JOB] == monitor["metadata"]["name"]]
        assert selected == own and selected, monitor["metadata"]["name"]
        for endpoint in monitor["spec"]["podMetricsEndpoints"]:
            for pod in selected:
                names = {port["name"] for port in pod.container.get("ports", [])}
                assert endpoint["port"] in names, f"{pod.task} of {monitor['metadata']['name']} has no port " \
                                                  f"{endpoint['port']} (ports: {sorted(names)})"
                assert pod.env[contract.METRICS_PORT_ENV] == str(
                    next(p["containerPort"] for p in pod.container["ports"] if p["name"] == endpoint["port"]))


def test_network_policy_admits_only_the_monitoring_namespace_and_only_on_the_metrics_port(overlay_objects):
    for overlay, objects in overlay_objects.items():
        for policy in _of_kind(objects, "NetworkPolicy"):
            if policy["metadata"]["name"].endswith("-tensorboard"):
                continue  # TensorBoard's admits nothing (test_tensorboard_...)
            job_ports = {p["port"] for p in policy["spec"]["ingress"][0]["ports"]}
            scrape = policy["spec"]["ingress"][1:]
            if overlay == PROD:
                assert scrape == [{"from": [{"namespaceSelector": {"matchLabels": {
                    "kubernetes.io/metadata.name": "monitoring"}}}], "ports": [{"port": 2225, "protocol": "TCP"}]}]
                assert 2225 not in job_ports, "the job's own pods need not reach each other's metrics"
            else:
                assert scrape == [], f"{overlay} does not turn monitoring on: no scrape rule"


def test_prod_dashboard_is_loadable_json_with_a_row_per_ps(overlay_objects):
    objects = overlay_objects[PROD]
    boards = [o for o in _of_kind(objects, "ConfigMap") if o["metadata"]["labels"].get("grafana_dashboard") == "1"]
    assert len(boards) == len(backends.decode(objects))
    for board in boards:
        (text,) = board["data"].values()
        model = json.loads(text)
        assert text == json.dumps(model, separators=(",", ":"), sort_keys=True), "sorted keys: the same bytes each build"
        repeated = [p for p in model["panels"] if p.get("type") == "row" and p.get("repeat")]
        assert [r["repeat"] for r in repeated] == ["ps"]
        variable = next(v for v in model["templating"]["list"] if v["name"] == "ps")
        assert "tfjobgen_ps_variable_bytes" in variable["query"]["query"]
        exprs = " ".join(t["expr"] for p in model["panels"] for t in p.get("targets", []))
        for metric in ("container_cpu_usage_seconds_total", "container_memory_working_set_bytes",
                       "container_network_receive_bytes_total", "container_network_transmit_bytes_total",
                       "tfjobgen_steps_total", "tfjobgen_loss", "tfjobgen_step_duration_seconds_bucket"):
            assert metric in exprs, metric


# Grafana's published dashboard schema, as data: @grafana/schema's TypeScript types (the `Dashboard` of its
# v1 "raw" schema, Grafana's own JSON model), checked by TypeScript's compiler. npm installs both; no Grafana.
GRAFANA_SCHEMA = Path(os.environ.get("TFJOBGEN_GRAFANA_SCHEMA") or Path.home() / ".cache/tfjobgen/grafana-schema")
GRAFANA_PACKAGES = ("typescript@5.9.3", "@grafana/schema@13.2.3")


@uses("slow")
def _tsc() -> str:
    found = GRAFANA_SCHEMA / "node_modules" / ".bin" / "tsc"
    return need("Grafana's schema (TypeScript's compiler and @grafana/schema)",
                str(found) if found.is_file() and (GRAFANA_SCHEMA / "node_modules/@grafana/schema").is_dir() else None,
                f"npm install --prefix {GRAFANA_SCHEMA} {' '.join(GRAFANA_PACKAGES)}")


def _type_check(tsc: str, board: dict, folder: Path) -> list[str]:
    """tsc's errors for the dashboard JSON as an object literal typed Dashboard: an unknown field (excess
    property), a wrong type or a missing required field is an error."""
    source = folder / "board.ts"
    source.write_text('import type { Dashboard } from "@grafana/schema";\n'
                      f"const board: Dashboard = {json.dumps(board, indent=1)};\nexport default board;\n")
    (folder / "node_modules").symlink_to(GRAFANA_SCHEMA / "node_modules")
    done = subprocess.run([tsc, "--noEmit", "--strict", "--skipLibCheck", "--module", "esnext", "--moduleResolution",
                           "bundler", "--target", "es2020", str(source)], capture_output=True, text=True, timeout=120,
                          cwd=folder)
    return [line for line in done.stdout.splitlines() if "error" in line]


def test_the_dashboard_type_checks_against_grafanas_published_dashboard_schema(tmp_path):
    """What is checked: every field name and value type of the dashboard, its panels, rows, grid positions,
    field config and templating against Grafana's Dashboard model. Not checked: the Prometheus queries' own
    fields (a panel's targets are DataQuery, which any data source extends) and what Grafana does on load."""
    tsc = _tsc()
    objects = render(SAMPLE / "jobs" / "wide-deep.yaml", profile=PROD_PROFILE)
    (board,) = [json.loads(next(iter(o["data"].values()))) for o in _of_kind(objects, "ConfigMap")
                if o["metadata"]["name"].endswith("-dashboard")]
    assert _type_check(tsc, board, tmp_path) == []
    # and it can fail: a field Grafana does not know, a value of the wrong type
    broken = tmp_path / "broken"
    broken.mkdir()
    wrong = dict(board, refresh=30, panels=[dict(board["panels"][1], gridPos={"h": 8, "w": 8, "x": 0, "y": 1, "z": 2})])
    errors = _type_check(tsc, wrong, broken)
    assert len(errors) == 2 and "'number' is not assignable to type 'string'" in " ".join(errors) \
        and "'\"z\"' does not exist in type 'GridPos'" in " ".join(errors), errors


def test_the_panels_that_need_the_runtimes_metrics_say_so(tmp_path):
    """A program of your own shows cAdvisor's panels whatever it serves; the others need tfjobgen_* metrics."""
    from tfjobgen.addons import dashboard

    own = tmp_path / "own.yaml"
    own.write_text((SAMPLE / "jobs" / "wide-deep.yaml").read_text().replace(
        "spec:\n", "spec:\n  command: [python, train.py]\n", 1))
    for job, mark in ((SAMPLE / "jobs" / "wide-deep.yaml", ""), (own, dashboard.RUNTIME_MARK)):
        objects = render(job, profile=PROD_PROFILE)
        (board,) = [json.loads(next(iter(o["data"].values()))) for o in _of_kind(objects, "ConfigMap")
                    if o["metadata"]["name"].endswith("-dashboard")]
        panels = [p for p in board["panels"] if p["type"] != "row"]
        for panel in panels:
            runtime = any("tfjobgen_" in t["expr"] for t in panel["targets"])
            assert ("tfjobgen's runtime metrics" in panel["description"]) == runtime, panel["title"]
            assert panel["title"].endswith(mark) if runtime and mark else not panel["title"].endswith(
                dashboard.RUNTIME_MARK), panel["title"]
        assert {p["title"] for p in panels if "kubelet" in p["description"]} >= {"CPU (cores)", "Memory (working set)"}


def test_monitoring_off_emits_no_monitoring_objects():
    objects = render(SAMPLE / "jobs" / "wide-deep.yaml")
    assert not _of_kind(objects, "PodMonitor") and not _of_kind(objects, "PrometheusRule")
    pod = backends.pods_of(objects)[0]
    assert {"name": "metrics", "containerPort": 2225, "protocol": "TCP"} in pod.container["ports"], \
        "a program of your own can always serve metrics on the documented port"


# ---- GPUs -----------------------------------------------------------------------------------

def test_gpu_workers_get_the_device_in_limits_and_requests_and_the_gpu_pool():
    objects = render(GOLDEN_GPU / "job.yaml", profile=GOLDEN_GPU / "profile.yaml")
    for pod in backends.pods_of(objects):
        resources = pod.container["resources"]
        if pod.role == "worker":
            assert resources["limits"]["nvidia.com/gpu"] == resources["requests"]["nvidia.com/gpu"] == "1"
            assert pod.spec["nodeSelector"]["accelerator"] == "nvidia-a100"
            assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod.spec["tolerations"]
            assert pod.env[contract.INTRA_OP_ENV] == "2", "the GPU does the math: a small intra-op pool"
            assert pod.env[contract.INTER_OP_ENV] == "8", "inter-op keeps the CPUs"
            assert resources["limits"]["cpu"] == resources["requests"]["cpu"] == "8", "cpuset rules unchanged"
        else:
            assert "nvidia.com/gpu" not in resources["limits"]
            assert "accelerator" not in pod.spec.get("nodeSelector", {})


def gpu_job(workers: int, gpus: int, **topology) -> str:
    """A spread job of `workers` workers that want `gpus` GPUs each; the worker's role is on line 10."""
    return job_yaml("gpu", namespace="ml", topology={"mode": "spread", **topology},
                    roles={"chief": {"cpu": 2, "memory": "4Gi"},
                           "worker": {"replicas": workers, "cpu": 4, "memory": "8Gi", "gpu": gpus}})


def test_a_gpu_job_on_a_profile_without_gpus_is_refused(tmp_path):
    (problem,) = [p for p in problems_of(gpu_job(workers=2, gpus=1), tmp_path, SAMPLE / "overlays" / "seed-80c" /
                                         "cluster-profile.yaml") if p.is_error]
    assert problem.field == "spec.roles.worker.gpu" and problem.line == 10
    assert "has no GPU nodes (spec.gpu)" in problem.message


def test_the_embedded_default_lets_gpu_jobs_ask_for_the_device_alone(tmp_path):
    """Kubernetes sends a pod that requests nvidia.com/gpu to a node that has one, with no selector:
    the default profile, which knows no cluster, does not refuse what any cluster would place."""
    assert not [p for p in problems_of(gpu_job(workers=2, gpus=1), tmp_path) if p.is_error]
    (tmp_path / "job.yaml").write_text(gpu_job(workers=2, gpus=1))
    for pod in backends.pods_of(render(tmp_path / "job.yaml")):
        limits = pod.container["resources"]["limits"]
        assert limits.get("nvidia.com/gpu") == ("1" if pod.role == "worker" else None)
        assert "nodeSelector" not in pod.spec or "accelerator" not in pod.spec["nodeSelector"]


def test_gpu_roles_may_not_name_another_pool_nor_more_gpus_than_a_node_has(tmp_path):
    profile = GOLDEN_GPU / "profile.yaml"
    (pool,) = [p for p in problems_of(gpu_job(workers=2, gpus=1, nodePools={"worker": "cpu"}), tmp_path, profile)
               if p.is_error]
    assert pool.field == "spec.topology.nodePools.worker" and "only pool 'gpu' has" in pool.message
    (too_many,) = [p for p in problems_of(gpu_job(workers=2, gpus=5), tmp_path, profile) if p.is_error]
    assert too_many.field == "spec.roles.worker.gpu" and "has 4" in too_many.message


def test_capacity_packs_gpus_per_node(tmp_path):
    """4 GPUs per node, 3 per worker: CPU and memory would fit 7 workers on a node, GPUs fit 1."""
    path = tmp_path / "job.yaml"
    path.write_text(gpu_job(workers=3, gpus=3))
    profile = pipeline.load_profile(str(GOLDEN_GPU / "profile.yaml"))
    intents, _ = pipeline.load_intents([str(path)])
    job, problems = pipeline.validate(intents[0], profile)
    assert job is not None, problems
    fit = capacity.capacity(job, profile)
    worker = next(r for r in fit.roles if r.role == "worker")
    assert worker.pool == "gpu" and worker.per_node == 1
    assert fit.own.nodes["gpu"] == 3
    one_gpu = gpu_job(workers=3, gpus=1)
    path.write_text(one_gpu)
    job, _ = pipeline.validate(pipeline.load_intents([str(path)])[0][0], profile)
    assert capacity.capacity(job, profile).own.nodes["gpu"] == 1, "4 GPUs per node hold 3 one-GPU workers"


def test_a_profile_whose_gpu_pool_does_not_exist_is_refused():
    data = {"apiVersion": "tfjobgen.dev/v1alpha1", "kind": "ClusterProfile", "metadata": {"name": "p"},
            "spec": {"gpu": {"nodePool": "gpus"}, "cpuManager": {"nodeSelector": {"a": "b"}}}}
    problems = pipeline.check_profile(pipeline.profile_from(data))
    assert [p.field for p in problems if p.is_error] == ["spec.gpu.nodePool"]


@pytest.mark.parametrize("gpu, expected", [(0, None), (2, "2")])
def test_gpus_go_to_the_training_container_only(gpu, expected):
    """Every container is sized for the pod's QoS class; GPUs do not count there and only TensorFlow uses them."""
    profile = pipeline.load_profile(str(GOLDEN_GPU / "profile.yaml"))
    intents, _ = pipeline.load_intents([str(GOLDEN_GPU / "job.yaml")])
    job, _ = pipeline.validate(intents[0], profile)
    job = replace(job, roles={**job.roles, "worker": replace(job.roles["worker"], gpu=gpu)})
    spec = {"containers": [{"name": contract.CONTAINER_NAME}, {"name": "sidecar"}]}
    qos.apply(spec, job, profile, "worker")
    assert spec["containers"][0]["resources"]["limits"].get("nvidia.com/gpu") == expected
    assert spec["containers"][1]["resources"]["limits"] == {"cpu": "8", "memory": "32Gi"}


# ---- TensorBoard ----------------------------------------------------------------------------

def test_tensorboard_reads_the_model_dir_and_is_reached_by_nothing_of_the_job():
    objects = render(GOLDEN_GPU / "job.yaml", profile=GOLDEN_GPU / "profile.yaml")
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    assert deployment["metadata"]["name"] == "gpu-ranker-tensorboard"
    pod = deployment["spec"]["template"]
    assert _matches(deployment["spec"]["selector"], pod["metadata"]["labels"])
    (board,) = pod["spec"]["containers"]
    assert board["command"] + board["args"] == ["tensorboard", "--logdir", "gs://ml-checkpoints/gpu-ranker",
                                                "--bind_all", "--port", "6006"]
    assert pss.violations(pod["spec"]) == [] and board["securityContext"]["readOnlyRootFilesystem"] is True
    services = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Service"}
    assert _matches({"matchLabels": services["gpu-ranker-tensorboard"]["spec"]["selector"]}, pod["metadata"]["labels"])
    assert not _matches({"matchLabels": services["gpu-ranker"]["spec"]["selector"]}, pod["metadata"]["labels"]), \
        "the job's headless Service (TF_CONFIG's DNS) must not list TensorBoard"
    policies = {o["metadata"]["name"]: o for o in objects if o["kind"] == "NetworkPolicy"}
    own = policies["gpu-ranker-tensorboard"]["spec"]
    assert _matches(own["podSelector"], pod["metadata"]["labels"]) and own["ingress"] == []
    assert not _matches(policies["gpu-ranker"]["spec"]["podSelector"], pod["metadata"]["labels"])
    (monitor,) = _of_kind(objects, "PodMonitor")
    assert not _matches(monitor["spec"]["selector"], pod["metadata"]["labels"])


TENSORBOARD_JOB = """\
apiVersion: tfjobgen.dev/v1alpha1
kind: TrainingJob
metadata: {name: tb, namespace: ml}
spec:
  image: registry.example.com/tf:1
%s  roles:
    ps: {replicas: 1, cpu: 1, memory: 2Gi}
    worker: {replicas: 1, cpu: 1, memory: 2Gi}
  tensorboard: {enabled: true}
"""


def test_tensorboard_needs_storage_its_own_pod_can_read(tmp_path):
    (local,) = [p for p in problems_of(TENSORBOARD_JOB % "", tmp_path) if p.is_error]
    assert local.field == "spec.training.modelDir" and "gs://" in local.message
    (own,) = [p for p in problems_of(TENSORBOARD_JOB % "  command: [python, train.py]\n", tmp_path) if p.is_error]
    assert own.field == "spec.tensorboard.logDir"


CLAIMS = """\
  volumes:
  - {name: runs, persistentVolumeClaim: {claimName: ctr-runs}}
  - {name: cache, emptyDir: {}}
  volumeMounts:
  - {name: runs, mountPath: /runs, subPath: ctr}
  - {name: cache, mountPath: /runs/cache}
"""


def test_tensorboard_reads_a_log_dir_on_the_jobs_claim_through_that_claim_read_only(tmp_path):
    """A log directory on a claim the training pods mount: TensorBoard's pod mounts the same claim at the same path
    (and subPath), read-only; under an emptyDir mounted inside that claim's path it is the pod's own, refused."""
    job = tmp_path / "tb.yaml"
    job.write_text(TENSORBOARD_JOB % (CLAIMS + "  training: {modelDir: /runs/model}\n"))
    objects = render(job)
    (deployment,) = _of_kind(objects, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["volumes"][1:] == [{"name": "runs", "persistentVolumeClaim": {"claimName": "ctr-runs", "readOnly": True}}]
    assert pod["containers"][0]["volumeMounts"][1:] == [
        {"mountPath": "/runs", "name": "runs", "readOnly": True, "subPath": "ctr"}]
    assert pod["containers"][0]["args"][:2] == ["--logdir", "/runs/model"]
    (refused,) = [p for p in problems_of(TENSORBOARD_JOB % (CLAIMS + "  training: {modelDir: /runs/cache/model}\n"),
                                         tmp_path) if p.is_error]
    assert refused.field == "spec.training.modelDir" and "persistentVolumeClaim the job mounts" in refused.message


@pytest.mark.parametrize("backend", sorted(backends.BACKENDS))
def test_the_pod_alerts_select_the_pods_each_controller_names(backend, tmp_path):
    """kube-state-metrics knows pods by name: the Pending and Failed alerts must match the names the
    Job controller (`<job>-<index>-<random>`, also under JobSet) and the TFJob operator
    (`<tfjob>-<type>-<index>`, no suffix) give the job's pods, and no other job's."""
    import re

    job = tmp_path / "job.yaml"
    job.write_text((SAMPLE / "jobs" / "wide-deep.yaml").read_text().replace(
        "spec:\n", f"spec:\n  backend: {backend}\n", 1))
    objects = render(job, profile=GOLDEN_GPU / "profile.yaml")
    [rule] = _of_kind(objects, "PrometheusRule")
    patterns = {m for r in rule["spec"]["groups"][0]["rules"] for m in re.findall(r'pod=~"([^"]+)"', r["expr"])}
    ps_only = {p for p in patterns if "(ps)" in p}  # TFJobGenPSDown's
    assert len(patterns - ps_only) == 1 and len(ps_only) == 1, patterns
    pods = backends.pods_of(objects)
    names = {(p.hostname if backend == "tfjob" else f"{p.owner}-{p.index}-x7k2p"): p.role for p in pods}
    for pattern, roles in ((patterns - ps_only).pop(), set(names.values())), (ps_only.pop(), {"ps"}):
        pattern = re.compile(pattern)  # PromQL anchors =~ at both ends: fullmatch
        assert {n for n in names if pattern.fullmatch(n)} == {n for n, role in names.items() if role in roles}
        assert not pattern.fullmatch("wide-deep-eval-0-x7k2p") and not pattern.fullmatch("other-ps-0-x7k2p")


def test_what_cluster_up_monitoring_makes_is_valid_against_the_operators_own_crds():
    """The Prometheus, ServiceMonitor and ScrapeConfig `cluster up --monitoring` applies, against the CRDs of the
    operator release it runs (cluster-tools' build; the node tier applies them for real)."""
    from tfjobgen.artifacts import programs
    from tfjobgen.cluster.controllers import kube_state_metrics, prometheus_operator

    family = programs.family_of("prometheus-operator")
    folder = family.asset("example/prometheus-operator-crd")
    schemas = crds.load(Path(need("the prometheus-operator family's CRDs (make cluster-tools)",
                                  str(folder) if folder.is_dir() else None)))
    monitoring = pipeline.load_profile(str(REPO / "tests/nodes/profiles/monitoring.yaml")).monitoring
    made = prometheus_operator.objects(monitoring) + [kube_state_metrics.scrape_config(monitoring, 8080)]
    custom = [o for o in made if o["apiVersion"].startswith("monitoring.coreos.com/")]
    assert {o["kind"] for o in custom} == {"Prometheus", "ServiceMonitor", "ScrapeConfig"}
    for obj in custom:
        assert crds.crd_errors(obj, schemas) == [], obj["kind"]
    prometheus = next(o for o in custom if o["kind"] == "Prometheus")["spec"]
    assert prometheus["podMonitorSelector"] == {"matchLabels": {"release": "kps"}}
    assert prometheus["ruleSelector"] == {"matchLabels": {"release": "kps"}}
    broken = dict(custom[0], spec={**custom[0]["spec"], "scrapeIntervall": "5s"})  # and a typo is caught
    assert crds.crd_errors(broken, schemas)

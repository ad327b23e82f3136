"""The monitoring node tier: a job training in pods, scraped by the Prometheus that `cluster up --monitoring`
runs as a pod of the profile's monitoring namespace, configured by the Prometheus Operator from the job's own
PodMonitor and PrometheusRule.

One cluster of two real nodes (tests/nodes/profiles/monitoring.yaml: scrapes and rule evaluations every 5 s)
serves the module, with one job (tests/nodes/jobs/watched.yaml) training throughout:

- Prometheus runs from the images `make images` built, restricted, in the monitoring namespace;
- the operator's config scrapes every task's metrics port through the job's NetworkPolicy, and the same
  Prometheus in another namespace is refused by it;
- the series the dashboard and `tfjobgen status` read exist for every task, with its role and index:
  the runtime's (steps/s, PS bytes) and cAdvisor's (CPU, memory, network, from the kubelets);
- every PromQL expression of the job's dashboard and rules runs on the real Prometheus HTTP API and finds
  series (none is a typo);
- a PS killed by SIGKILL fires TFJobGenPSDown within its `for` and one evaluation (plus the seconds the
  kubelet and kube-state-metrics take to see it), and it clears once its new pod is scraped;
- a worker over its memory limit fires TFJobGenTaskOOMKilled.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import time
import urllib.parse
import urllib.request

import pytest
from cluster import cluster_support
from conftest import need
from nodes_support import (
    PROFILE,
    apply,
    container_pid,
    need_real_nodes,
    remove_namespace,
    running_pods,
)

from tfjobgen.cluster.controllers import prometheus_operator
from tfjobgen.concerns import labels
from tfjobgen.harness import conformance
from tfjobgen.shared import contract

pytestmark = pytest.mark.xdist_group("real-nodes")  # one cluster with real nodes per machine at a time

MONITORING_PROFILE = PROFILE.parent / "monitoring.yaml"
JOBS = PROFILE.parent.parent / "jobs"
JOB, NAMESPACE = "watched", "watched"
INTERVAL = 5.0  # the profile's spec.monitoring.interval: scrapes and evaluations
SEEING = 10.0  # the kubelet's report of a dead container on this busy machine (5 s measured), Prometheus' alert API


def _monitoring():
    from tfjobgen.expand import pipeline

    return pipeline.load_profile(str(MONITORING_PROFILE)).monitoring


@pytest.fixture(scope="module")
def cluster():
    need_real_nodes()
    from tfjobgen.artifacts import programs
    from tfjobgen.artifacts.images import catalog, store

    cluster_support.need_cluster_tools("prometheus-operator", "kube-state-metrics")
    unbuilt = [name for name in catalog.FOR_MONITORING if store.built(name) is None]
    need("the monitoring images", None if unbuilt else "built", f"{', '.join(unbuilt)} not built: run `make images`")
    assert programs.family_of("prometheus-operator").version == catalog.tag(catalog.RELOADER)
    with cluster_support.local_cluster(MONITORING_PROFILE, 2, "--real-nodes", "2", "--monitoring") as up:
        yield up


@pytest.fixture(scope="module")
def job(cluster):
    """The job, all of it (its PodMonitor, PrometheusRule and dashboard too), training on both nodes."""
    cluster.restricted_namespace(NAMESPACE)
    rendered = conformance.render(JOBS / f"{JOB}.yaml", MONITORING_PROFILE, "native", NAMESPACE)
    apply(cluster, rendered)
    pods = running_pods(cluster, NAMESPACE, 4, timeout=240)
    yield {"objects": rendered, "pods": pods}
    remove_namespace(cluster, NAMESPACE)


def _url(cluster, namespace: str = "monitoring") -> str:
    """Prometheus' API in its pod: the host routes to every real node's pods (docs/nodes.md)."""
    pod = cluster.objects.get("v1", "Pod", prometheus_operator.POD, namespace)
    return f"http://{pod['status']['podIP']}:{prometheus_operator.PORT}"


def _api(cluster, path: str, namespace: str = "monitoring", **query) -> dict:
    url = f"{_url(cluster, namespace)}/api/v1/{path}"
    if query:
        url += "?" + urllib.parse.urlencode(query, doseq=True)
    with urllib.request.urlopen(url, timeout=10) as response:
        body = json.loads(response.read())
    assert body["status"] == "success", body
    return body["data"]


def query(cluster, expr: str) -> list[dict]:
    """An instant query: its series (an error, such as a typo in the expression, fails the test)."""
    return _api(cluster, "query", query=expr)["result"]


def _targets(cluster, pool: str, namespace: str = "monitoring") -> list[dict]:
    return [t for t in _api(cluster, "targets", namespace, state="active")["activeTargets"] if t["scrapePool"] == pool]


def _pool() -> str:
    return f"podMonitor/{NAMESPACE}/{JOB}/0"  # the operator's name for the PodMonitor's first endpoint


def _tasks(job) -> dict[str, dict]:
    """role:index -> the task's pod."""
    return {f"{p['metadata']['labels'][labels.ROLE]}:{p['metadata']['labels'].get(labels.JOB_COMPLETION_INDEX, '0')}": p
            for p in job["pods"]}


def test_prometheus_runs_restricted_in_the_monitoring_namespace_from_the_built_images(cluster):
    pod = cluster.objects.get("v1", "Pod", prometheus_operator.POD, "monitoring")
    namespace = cluster.objects.get("v1", "Namespace", "monitoring")
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    images = {c["name"]: c["image"] for c in pod["spec"]["containers"]}
    from tfjobgen.artifacts.images import catalog

    assert images == {"prometheus": prometheus_operator.image(catalog.PROMETHEUS),
                      "config-reloader": prometheus_operator.image(catalog.RELOADER)}
    assert pod["spec"]["nodeName"] in {"node-000", "node-001"}
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    for container in pod["spec"]["containers"]:
        assert container["securityContext"]["allowPrivilegeEscalation"] is False
        assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert "v" + _api(cluster, "status/buildinfo")["version"] == catalog.tag(catalog.PROMETHEUS)


def test_the_operators_config_scrapes_every_task_through_the_network_policy(cluster, job):
    def all_up():
        targets = _targets(cluster, _pool())
        return targets if len(targets) == 4 and all(t["health"] == "up" for t in targets) else None

    targets = cluster.wait(all_up, "the job's 4 tasks scraped, every target up", 90)
    assert {t["labels"]["pod"] for t in targets} == {p["metadata"]["name"] for p in job["pods"]}
    assert {t["discoveredLabels"]["__meta_kubernetes_pod_container_port_name"] for t in targets} == {
        contract.METRICS_PORT_NAME}


def test_the_same_prometheus_in_another_namespace_is_refused_by_the_jobs_network_policy(cluster, job):
    """A second Prometheus object, the same in all but its namespace: the operator's config is the same, and
    the job's NetworkPolicy drops its scrapes (kube-router), while the monitoring namespace's go through."""
    other = dataclasses.replace(_monitoring(), namespace="elsewhere")
    from tfjobgen.cluster.controllers.base import install

    install(cluster.objects, prometheus_operator.objects(other)[:-1])  # all but a second kubelet ServiceMonitor
    try:
        cluster.wait(lambda: cluster.objects.get("v1", "Pod", prometheus_operator.POD, "elsewhere"),
                     "the second Prometheus pod", 60)

        def all_down():
            try:
                targets = _targets(cluster, _pool(), "elsewhere")
            except (OSError, KeyError):  # no address yet, or not serving yet
                return None
            return targets if len(targets) == 4 and all(t["health"] == "down" for t in targets) else None

        refused = cluster.wait(all_down, "the other namespace's Prometheus: every task's target down", 150)
        assert all(t["lastError"] for t in refused), refused
        assert all(t["health"] == "up" for t in _targets(cluster, _pool()))
    finally:
        cluster.objects.delete("v1", "Namespace", "elsewhere")


def test_the_series_the_dashboard_and_status_read_exist_for_every_task(cluster, job):
    ours = f'namespace="{NAMESPACE}", training_job="{JOB}"'
    tasks = _tasks(job)

    def by_task(expr: str) -> dict[str, float]:
        return {f"{s['metric']['role']}:{s['metric']['index']}": float(s["value"][1]) for s in query(cluster, expr)}

    def seen():
        found = {
            "steps": by_task(f"rate(tfjobgen_steps_total{{{ours}}}[1m])"),
            "ps bytes": by_task(f"tfjobgen_ps_variable_bytes{{{ours}}}"),
            "startup": by_task(f"tfjobgen_startup_seconds{{{ours}}}"),  # every task serves it
        }
        for what, metric, training_only in (("cpu", "container_cpu_usage_seconds_total", True),
                                            ("memory", "container_memory_working_set_bytes", True),
                                            ("network", "container_network_receive_bytes_total", False)):
            selector = f'namespace="{NAMESPACE}"' + (f', container="{contract.CONTAINER_NAME}"' if training_only else "")
            found[what] = {s["metric"]["pod"] for s in query(cluster, f"{metric}{{{selector}}}")}
        complete = (found["steps"].keys() == {"chief:0"} and found["ps bytes"].keys() == {"ps:0", "ps:1"}
                    and found["startup"].keys() == tasks.keys()
                    and all(found[w] >= {p["metadata"]["name"] for p in job["pods"]} for w in ("cpu", "memory", "network")))
        return found if complete else None

    found = cluster.wait(seen, "every task's series: the runtime's and cAdvisor's", 120)
    assert found["steps"]["chief:0"] > 0  # training: steps per second
    assert all(v > 0 for v in found["ps bytes"].values())


# Grafana's variables, as the dashboard uses them, for a query outside Grafana.
VARIABLES = {"$ps": "0", "${datasource}": ""}
SELECTOR = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^{}]*)\}")
# Series that exist only once something has gone wrong: the OOM test below shows its selector finds one.
AFTER_A_FAULT = ("kube_pod_container_status_terminated_reason",)


def _expressions(job) -> dict[str, str]:
    """Every PromQL expression of the job's dashboard (panels, the ps variable's query) and rules."""
    found = {}
    for obj in job["objects"]:
        if obj["kind"] == "ConfigMap" and obj["metadata"]["name"].endswith("-dashboard"):
            board = json.loads(next(iter(obj["data"].values())))
            for panel in board["panels"]:
                for target in panel.get("targets", []):
                    found[f"panel {panel['title']!r} {target['refId']}"] = target["expr"]
            for variable in board["templating"]["list"]:
                if variable["type"] == "query":  # label_values(SELECTOR, LABEL) is Grafana's: its selector is PromQL
                    found[f"variable {variable['name']}"] = re.fullmatch(
                        r"label_values\((.*), *\w+\)", variable["query"]["query"]).group(1)
        if obj["kind"] == "PrometheusRule":
            for group in obj["spec"]["groups"]:
                for rule in group["rules"]:
                    found[f"rule {rule['alert']}"] = rule["expr"]
    for name, expr in found.items():
        for variable, value in VARIABLES.items():
            expr = expr.replace(variable, value)
        found[name] = expr
    return found


def test_every_promql_of_the_dashboard_and_the_rules_finds_series_for_the_running_job(cluster, job):
    """Panels and the variable must return series as they are; a rule's condition holds only when it fires,
    so each vector selector in it must (its metric name and every label matcher right)."""
    expressions = _expressions(job)
    assert {n for n in expressions if n.startswith("rule ")} == {
        "rule TFJobGenNoProgress", "rule TFJobGenHotPS", "rule TFJobGenTaskPending", "rule TFJobGenTasksFailing",
        "rule TFJobGenTaskOOMKilled", "rule TFJobGenPSDown"}
    selectors = sorted({m.group(0) for n, e in expressions.items() if n.startswith("rule ") for m in SELECTOR.finditer(e)
                        if m.group(1) not in AFTER_A_FAULT})
    panels = {n: e for n, e in expressions.items() if not n.startswith("rule ")}

    def empty():
        for expr in expressions.values():
            query(cluster, expr)  # every one parses and runs: the API answers an error otherwise
        missing = [f"{n}: {e}" for n, e in panels.items() if not query(cluster, e)]
        missing += [f"selector {s}" for s in selectors if not query(cluster, s)]
        return missing

    missing = empty()
    deadline = time.monotonic() + 180  # rates over 5m need two samples; the first checkpoint takes a while
    while missing and time.monotonic() < deadline:
        time.sleep(INTERVAL)
        missing = empty()
    assert missing == [], "\n".join(missing)
    assert len(selectors) >= 4


def _timestamp(rfc3339: str) -> float:
    """Prometheus' RFC 3339 time (nanoseconds) as Unix seconds."""
    import datetime

    whole, _, fraction = rfc3339.rstrip("Z").partition(".")
    moment = datetime.datetime.fromisoformat(whole).replace(tzinfo=datetime.timezone.utc)
    return moment.timestamp() + float(f"0.{fraction or 0}")


def _alerts(cluster, name: str) -> list[dict]:
    return [a for a in _api(cluster, "alerts")["alerts"] if a["labels"]["alertname"] == name]


def test_a_ps_killed_by_sigkill_fires_ps_down_and_it_clears_once_replaced(cluster, job):
    rule = next(r for o in job["objects"] if o["kind"] == "PrometheusRule" for r in o["spec"]["groups"][0]["rules"]
                if r["alert"] == "TFJobGenPSDown")
    assert rule["for"] == "0m"
    cluster.wait(lambda: _targets(cluster, _pool()) and not _alerts(cluster, "TFJobGenPSDown"),
                 "no PS down before the kill", 60)
    ps = next(p for p in cluster.pods(NAMESPACE, f"{labels.ROLE}=ps")
              if p["status"].get("phase") == "Running" and p["metadata"]["labels"][labels.JOB_COMPLETION_INDEX] == "0")
    killed = time.monotonic()
    os.kill(container_pid(ps), signal.SIGKILL)

    def firing():
        return [a for a in _alerts(cluster, "TFJobGenPSDown") if a["state"] == "firing"] or None

    alert = cluster.wait(firing, "TFJobGenPSDown firing", 60)[0]
    fired = time.monotonic() - killed
    assert alert["labels"]["task"] == "ps-0" and alert["labels"]["training_job"] == JOB
    # On Prometheus' own clock: from the first sample that says the PS's pod Failed (kube-state-metrics' scrape)
    # to the alert active, at most its `for` (0m) and one evaluation interval.
    samples = query(cluster, f'kube_pod_status_phase{{namespace="{NAMESPACE}", pod="{ps["metadata"]["name"]}", '
                             f'phase="Failed"}}[2m]')[0]["values"]
    failed_at = min(float(t) for t, v in samples if float(v) == 1)
    active_at = _timestamp(alert["activeAt"])
    assert 0 <= active_at - failed_at <= 0 + INTERVAL + 0.5, (failed_at, active_at)  # 0.5: evaluation jitter
    # From the kill: the kubelet's report, kube-state-metrics' next scrape, then the above.
    assert fired <= INTERVAL + INTERVAL + SEEING, fired
    cluster.wait(lambda: not _alerts(cluster, "TFJobGenPSDown"), "TFJobGenPSDown cleared", 120)
    cleared = time.monotonic() - killed
    new = [p for p in cluster.pods(NAMESPACE, f"{labels.ROLE}=ps") if p["metadata"]["uid"] != ps["metadata"]["uid"]
           and p["metadata"]["labels"][labels.JOB_COMPLETION_INDEX] == "0"]
    assert new and new[0]["status"]["phase"] == "Running"
    up = query(cluster, f'up{{namespace="{NAMESPACE}", pod="{new[0]["metadata"]["name"]}"}} == 1')
    assert up, "cleared without the new PS being scraped"
    print(f"PS SIGKILL: TFJobGenPSDown firing after {fired:.1f}s, cleared after {cleared:.1f}s")


def test_a_worker_out_of_memory_fires_task_oomkilled(cluster):
    namespace = "oom"
    cluster.restricted_namespace(namespace)
    rendered = conformance.render(JOBS / "tiny.yaml", MONITORING_PROFILE, "native", namespace)
    for obj in rendered:  # TensorFlow alone needs more than 200 MiB: the worker dies as it imports it
        if obj["kind"] == "Job" and obj["metadata"]["name"].endswith("-worker"):
            for container in obj["spec"]["template"]["spec"]["containers"]:
                container["resources"]["limits"]["memory"] = "200Mi"
                container["resources"]["requests"]["memory"] = "200Mi"
    apply(cluster, rendered)
    try:
        def firing():
            return [a for a in _alerts(cluster, "TFJobGenTaskOOMKilled")
                    if a["state"] == "firing" and a["labels"]["namespace"] == namespace] or None

        alert = cluster.wait(firing, "TFJobGenTaskOOMKilled firing", 240)[0]
        assert re.fullmatch(r"tiny-worker-[0-9]+-.+", alert["labels"]["pod"]), alert
        pod = cluster.objects.get("v1", "Pod", alert["labels"]["pod"], namespace)
        assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] == "OOMKilled"
    finally:
        remove_namespace(cluster, namespace)

"""The Prometheus Operator (github.com/prometheus-operator/prometheus-operator), for `cluster up --monitoring`:
a Prometheus running as a pod of the profile's monitoring namespace, on a real node, configured by the operator
from the PodMonitors and PrometheusRules the profile's jobs render.

The operator runs out of cluster as the other controllers do; what it makes runs in the cluster: a
StatefulSet of one Prometheus pod (Prometheus and its config reloader, images of `make images` pulled
through the cluster's registry under the names below). The pod must be in the monitoring namespace:
each job's NetworkPolicy admits that namespace, and only it, to the metrics port.

What the Prometheus object selects, and why:
  PodMonitors and PrometheusRules of every namespace with the profile's podMonitorLabels / ruleLabels
      (`release: kps` and the like): exactly what monitoring.py renders for each job;
  the kubelets' cAdvisor (CPU, memory, network of every container) through the operator's own kubelet
      Endpoints (`--kubelet-service`, real nodes only) and one ServiceMonitor, as kube-prometheus-stack
      does: the dashboard's per-role panels read it.
Pods reach the API server only through the bridge's relay (no kube-proxy here), whose certificate names
localhost: `apiserverConfig` says so, with the pod's own service-account token.
"""

from __future__ import annotations

from ...artifacts import programs
from ...artifacts.images import catalog
from ...kube import api
from ..context import Context
from ..nodes.bring_up import DEFAULT_REGISTRY_HOSTS
from ..nodes.network import API_RELAY_PORT, BRIDGE_ADDRESS
from ..processes import Component
from .base import install, load_yaml_files, wait_healthy

NAME = "prometheus-operator"
PROGRAMS = ["prometheus-operator"]
ASKED = "--monitoring"  # started only when `cluster up` is asked for it, whatever the profile
PROMETHEUS = "tfjobgen"  # the Prometheus object's name
POD = f"prometheus-{PROMETHEUS}-0"  # the one pod of the operator's StatefulSet
PORT = 9090  # Prometheus' web port in the pod (the operator's)
READY_TIMEOUT = 180.0
SERVICE_ACCOUNT = "prometheus"
KUBELET_SERVICE = "kube-system/kubelet"  # the Endpoints the operator keeps of the real nodes' kubelets
REAL_NODE = {"type": "real"}  # bring_up.real_node_object's label: only those nodes run containers
USER = 65534  # nobody, as upstream's images
TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount"  # the pod's projected token and CA


def wanted(profile) -> bool:
    return profile.monitoring.enabled


def image(name: str) -> str:
    """The name the cluster's nodes pull an image of catalog.FOR_MONITORING by (any mapped registry works)."""
    return f"{DEFAULT_REGISTRY_HOSTS[0]}/{catalog.path_in_registry(name)}:{catalog.tag(name)}"


def start(context: Context) -> None:
    family = programs.family_of("prometheus-operator")
    install(context.objects, load_yaml_files(family.asset("example/prometheus-operator-crd")))
    install(context.objects, objects(context.profile.monitoring))
    (web_port,) = context.ports("web")
    process = context.launch(Component(NAME, [
        str(programs.program("prometheus-operator")), f"--web.listen-address=127.0.0.1:{web_port}",
        f"--prometheus-config-reloader={image(catalog.RELOADER)}",
        f"--kubelet-service={KUBELET_SERVICE}", "--kubelet-selector=" + ",".join(f"{k}={v}" for k, v in REAL_NODE.items()),
        "--log-level=info",
    ], env={"KUBECONFIG": str(context.files.kubeconfig)}))
    wait_healthy(process, web_port)
    namespace = context.profile.monitoring.namespace
    api.wait_until(lambda: _ready(context.objects.get("v1", "Pod", POD, namespace)), READY_TIMEOUT,
                   f"pod {namespace}/{POD} Ready (its images pulled from the cluster's registry, Prometheus serving)")


def _ready(pod: dict | None) -> bool:
    conditions = ((pod or {}).get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def objects(monitoring) -> list[dict]:
    """The namespace, Prometheus' identity and rights, the Prometheus object and the kubelets' ServiceMonitor."""
    namespace = monitoring.namespace
    restricted = {f"pod-security.kubernetes.io/{mode}": "restricted" for mode in ("enforce", "warn")}
    name = f"tfjobgen-{SERVICE_ACCOUNT}-{namespace}"  # one per namespace: a second Prometheus has its own
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": restricted}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": SERVICE_ACCOUNT, "namespace": namespace}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name}, "rules": [
            # what its kubernetes_sd reads, and the kubelets' /metrics/cadvisor (the kubelet asks the API server)
            {"apiGroups": [""], "resources": ["pods", "services", "endpoints", "nodes"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": [""], "resources": ["nodes/metrics"], "verbs": ["get"]},
        ]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
         "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": namespace}]},
        prometheus(monitoring),
        kubelet_monitor(monitoring),
    ]


def prometheus(monitoring) -> dict:
    everywhere = {}  # an empty namespace selector: every namespace
    return {
        "apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
        "metadata": {"name": PROMETHEUS, "namespace": monitoring.namespace},
        "spec": {
            "version": catalog.tag(catalog.PROMETHEUS),  # what the operator writes the config and flags for
            "image": image(catalog.PROMETHEUS),
            "replicas": 1,
            "serviceAccountName": SERVICE_ACCOUNT,
            "nodeSelector": REAL_NODE,
            "podMonitorSelector": {"matchLabels": dict(monitoring.pod_monitor_labels)},
            "podMonitorNamespaceSelector": everywhere,
            "ruleSelector": {"matchLabels": dict(monitoring.rule_labels)},
            "ruleNamespaceSelector": everywhere,
            "serviceMonitorSelector": {"matchLabels": dict(monitoring.pod_monitor_labels)},
            "serviceMonitorNamespaceSelector": everywhere,
            "scrapeConfigSelector": {"matchLabels": dict(monitoring.pod_monitor_labels)},  # kube-state-metrics'
            "scrapeConfigNamespaceSelector": everywhere,
            "scrapeInterval": monitoring.interval, "evaluationInterval": monitoring.interval,
            "retention": "1d",
            "apiserverConfig": {
                "host": f"https://{BRIDGE_ADDRESS}:{API_RELAY_PORT}",
                "tlsConfig": {"caFile": f"{TOKEN}/ca.crt", "serverName": "localhost"},
                "authorization": {"credentialsFile": f"{TOKEN}/token"},
            },
            # Restricted Pod Security: the operator gives its containers no privilege escalation, every
            # capability dropped and a read-only root; the pod's part is said here.
            "securityContext": {"runAsNonRoot": True, "runAsUser": USER, "runAsGroup": USER, "fsGroup": USER,
                                "seccompProfile": {"type": "RuntimeDefault"}},
            "resources": {"requests": {"cpu": "100m", "memory": "200Mi"}, "limits": {"memory": "1Gi"}},
        },
    }


def kubelet_monitor(monitoring) -> dict:
    """cAdvisor of every real node's kubelet, with the pod's token; the labels it serves (namespace, pod,
    container) kept, as kube-prometheus-stack's kubelet ServiceMonitor does."""
    namespace, name = KUBELET_SERVICE.split("/")
    return {
        "apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
        "metadata": {"name": "tfjobgen-kubelet", "namespace": monitoring.namespace,
                     "labels": dict(monitoring.pod_monitor_labels)},
        "spec": {
            "namespaceSelector": {"matchNames": [namespace]},
            "selector": {"matchLabels": {"app.kubernetes.io/name": "kubelet"}},
            "endpoints": [{
                "port": "https-metrics", "scheme": "https", "path": "/metrics/cadvisor", "honorLabels": True,
                "interval": monitoring.interval,
                "bearerTokenFile": f"{TOKEN}/token",
                # each kubelet's serving certificate is its own self-signed one (no serverTLSBootstrap here)
                "tlsConfig": {"insecureSkipVerify": True},
                "relabelings": [{"sourceLabels": ["__metrics_path__"], "targetLabel": "metrics_path"}],
            }],
        },
    }

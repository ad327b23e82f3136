"""env `valueFrom` entries, each with the API server's verdict as k8s.io/kubernetes reads them
(pkg/apis/core/validation: validateEnvVarValueFrom and what it calls), for tests/test_env_rules.py; and
sent to a real kube-apiserver by tests/cluster/test_api_server_agrees.py, which holds tfjobgen's verdict
to the server's, so that the two cannot drift.

Each case: (what it tries, the valueFrom entry, whether the API server admits it).
"""

from __future__ import annotations

CASES: list[tuple[str, dict, bool]] = [
    # fieldRef: the downward API's paths that env supports (validEnvDownwardAPIFieldPathExpressions)
    ("pod name", {"fieldRef": {"fieldPath": "metadata.name"}}, True),
    ("pod name, apiVersion v1", {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}, True),
    ("host IPs", {"fieldRef": {"fieldPath": "status.hostIPs"}}, True),
    ("service account", {"fieldRef": {"fieldPath": "spec.serviceAccountName"}}, True),
    ("spec.host, the old name of spec.nodeName", {"fieldRef": {"fieldPath": "spec.host"}}, True),
    ("a label by key", {"fieldRef": {"fieldPath": "metadata.labels['app.kubernetes.io/name']"}}, True),
    ("an annotation by key", {"fieldRef": {
        "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}, True),
    ("an annotation key with an upper-case prefix", {"fieldRef": {
        "fieldPath": "metadata.annotations['Example.COM/x']"}}, True),
    ("an unknown metadata field", {"fieldRef": {"fieldPath": "metadata.nosuch"}}, False),
    ("status.phase (volumes only)", {"fieldRef": {"fieldPath": "status.phase"}}, False),
    ("spec.schedulerName (volumes only)", {"fieldRef": {"fieldPath": "spec.schedulerName"}}, False),
    ("all labels (volumes only)", {"fieldRef": {"fieldPath": "metadata.labels"}}, False),
    ("a subscript of the name", {"fieldRef": {"fieldPath": "metadata.name['x']"}}, False),
    ("a label key with two slashes", {"fieldRef": {"fieldPath": "metadata.labels['a/b/c']"}}, False),
    ("an empty label key", {"fieldRef": {"fieldPath": "metadata.labels['']"}}, False),
    ("apiVersion v2", {"fieldRef": {"apiVersion": "v2", "fieldPath": "metadata.name"}}, False),
    ("no fieldPath", {"fieldRef": {}}, False),
    # resourceFieldRef: the container's own resources (validContainerResourceFieldPathExpressions, hugepages)
    ("the CPU limit", {"resourceFieldRef": {"resource": "limits.cpu"}}, True),
    ("the CPU limit in millicores", {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1m"}}, True),
    ("the CPU limit, divisor 1000m (is 1)", {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1000m"}}, True),
    ("the memory request in Mi", {"resourceFieldRef": {"resource": "requests.memory", "divisor": "1Mi"}}, True),
    ("the memory request, divisor the number 1", {"resourceFieldRef": {"resource": "requests.memory",
                                                                       "divisor": 1}}, True),
    ("the memory limit, divisor 1000 (is 1k)", {"resourceFieldRef": {"resource": "limits.memory",
                                                                     "divisor": "1000"}}, True),
    ("ephemeral storage", {"resourceFieldRef": {"resource": "limits.ephemeral-storage", "divisor": "1Gi"}}, True),
    ("hugepages", {"resourceFieldRef": {"resource": "limits.hugepages-2Mi"}}, True),
    ("the memory limit, divisor 1e3 in YAML 1.2 (a number: 1000)", {"resourceFieldRef": {
        "resource": "limits.memory", "divisor": 1e3}}, True),
    ("divisor 0 (the default)", {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "0"}}, True),
    ("a GPU limit", {"resourceFieldRef": {"resource": "limits.nvidia.com/gpu"}}, False),
    ("cpu without limits. or requests.", {"resourceFieldRef": {"resource": "cpu"}}, False),
    ("no resource", {"resourceFieldRef": {"containerName": "x"}}, False),
    ("the CPU limit in Mi", {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1Mi"}}, False),
    ("the memory limit, divisor 1024 (not 1Ki)", {"resourceFieldRef": {"resource": "limits.memory",
                                                                       "divisor": "1024"}}, False),
    ("the memory limit, divisor 1e3", {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1e3"}}, False),
    ("the CPU limit, divisor 2", {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "2"}}, False),
    # configMapKeyRef and secretKeyRef: DNS-1123 subdomain names, IsConfigMapKey keys
    ("a ConfigMap key", {"configMapKeyRef": {"name": "settings", "key": "batch.size"}}, True),
    ("an optional Secret key", {"secretKeyRef": {"name": "s3-credentials", "key": "AWS_SECRET_ACCESS_KEY",
                                                  "optional": True}}, True),
    ("a key starting with one dot", {"secretKeyRef": {"name": "s", "key": ".hidden"}}, True),
    ("a Secret name with '_' and upper case", {"secretKeyRef": {"name": "Bad_Name", "key": "k"}}, False),
    ("a Secret key that climbs", {"secretKeyRef": {"name": "s", "key": "k/../x"}}, False),
    ("a Secret key '..'", {"secretKeyRef": {"name": "s", "key": ".."}}, False),
    ("a Secret key starting with '..'", {"secretKeyRef": {"name": "s", "key": "..data"}}, False),
    ("a Secret without a key", {"secretKeyRef": {"name": "s"}}, False),
    ("a misspelt field of a Secret's", {"secretKeyRef": {"name": "s", "key": "k", "nme": "x"}}, False),
    ("an empty ConfigMap name", {"configMapKeyRef": {"name": "", "key": "k"}}, False),
    ("a ConfigMap without a name", {"configMapKeyRef": {"key": "k"}}, False),
    ("an empty ConfigMap key", {"configMapKeyRef": {"name": "settings", "key": ""}}, False),
    ("a ConfigMap key of 254 characters", {"configMapKeyRef": {"name": "settings", "key": "k" * 254}}, False),
    ("a ConfigMap name of 254 characters", {"configMapKeyRef": {"name": "a" * 254, "key": "k"}}, False),
]

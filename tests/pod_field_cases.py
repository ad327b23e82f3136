"""The pod fields of an intent (issue 32), each with the API server's verdict on what it becomes, for
tests/test_pod_fields.py; tests/cluster/test_api_server_agrees.py sends each to a real kube-apiserver
(server-side dry run, strict field validation) and holds tfjobgen's verdict to the server's.

Each case: (what it tries, the intent's spec fields, whether the API server admits what they become).
What the server is asked is `server_objects`: the objects the fields name (a pull secret's Secret, a
volume's claim, ConfigMap or Secret with the keys it reads: a name or key no object can have leaves the pod
without credentials or never started, though the server admits the pod), then a Pod carrying the fields as
tfjobgen renders them, in a namespace that enforces Pod Security "restricted" (the Pod meets it but for the case's
fields). Refusals that are tfjobgen's own policy, not the server's syntax (reserved keys, a
toleration of every taint), are not here: tests/refusals holds them.
"""

from __future__ import annotations

_LONG = "a" * 64


def _mounted(volume: dict, **mount) -> dict:
    """Spec fields defining one volume and mounting it at /data."""
    return {"volumes": [volume], "volumeMounts": [{"name": volume["name"], "mountPath": "/data", **mount}]}


CASES: list[tuple[str, dict, bool]] = [
    # imagePullSecrets: Secret names, DNS subdomains (validation.ValidateSecretName)
    ("a pull secret", {"imagePullSecrets": ["registry-cred"]}, True),
    ("a pull secret with dots", {"imagePullSecrets": ["registry.example.com"]}, True),
    ("a pull secret in capitals", {"imagePullSecrets": ["Registry_Cred"]}, False),
    ("a pull secret with an empty label", {"imagePullSecrets": ["a..b"]}, False),
    ("a pull secret of 254 characters", {"imagePullSecrets": ["a" * 254]}, False),
    # podMetadata: label keys and values, annotation keys (ValidateLabels, ValidateAnnotations)
    ("a pod label", {"podMetadata": {"labels": {"example.com/team": "ads"}}}, True),
    ("an empty pod label value", {"podMetadata": {"labels": {"team": ""}}}, True),
    ("a pod label value with a space", {"podMetadata": {"labels": {"team": "ads ml"}}}, False),
    ("a pod label value of 64 characters", {"podMetadata": {"labels": {"team": _LONG}}}, False),
    ("a pod label key with an upper-case prefix", {"podMetadata": {"labels": {"Example.com/team": "ads"}}}, False),
    ("a pod annotation", {"podMetadata": {"annotations": {"sidecar.istio.io/inject": "false"}}}, True),
    ("a pod annotation key with an upper-case prefix",
     {"podMetadata": {"annotations": {"Example.COM/owner": "x"}}}, True),
    ("a pod annotation value with spaces", {"podMetadata": {"annotations": {"example.com/note": "a b: c"}}}, True),
    ("a pod annotation key with a space", {"podMetadata": {"annotations": {"sidecar inject": "x"}}}, False),
    ("a pod annotation key of 64 characters", {"podMetadata": {"annotations": {_LONG: "x"}}}, False),
    # nodeSelector: label keys and values
    ("a node selector", {"nodeSelector": {"example.com/zone-class": "training"}}, True),
    ("a node selector value with a slash", {"nodeSelector": {"example.com/zone": "a/b"}}, False),
    ("a node selector key with two slashes", {"nodeSelector": {"a/b/c": "x"}}, False),
    # tolerations (ValidateTolerations)
    ("a toleration", {"tolerations": [{"key": "example.com/dedicated", "operator": "Equal", "value": "training",
                                       "effect": "NoSchedule"}]}, True),
    ("a toleration of any value", {"tolerations": [{"key": "example.com/dedicated", "operator": "Exists"}]}, True),
    ("a toleration for 60 s", {"tolerations": [{"key": "example.com/drain", "operator": "Exists", "effect": "NoExecute",
                                                "tolerationSeconds": 60}]}, True),
    ("a toleration without key nor Exists", {"tolerations": [{"operator": "Equal", "value": "x"}]}, False),
    ("a toleration with Exists and a value", {"tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]},
     False),
    ("tolerationSeconds without NoExecute", {"tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule",
                                                              "tolerationSeconds": 5}]}, False),
    ("a toleration key with a space", {"tolerations": [{"key": "a b", "operator": "Exists"}]}, False),
    # volumes and mounts (validateVolumes, validateVolumeMounts; restricted Pod Security's volume types)
    ("a claim", _mounted({"name": "data", "persistentVolumeClaim": {"claimName": "ctr-data", "readOnly": True}}), True),
    ("a ConfigMap's key as a file", _mounted({"name": "conf", "configMap": {
        "name": "feature-spec", "items": [{"key": "columns.json", "path": "etc/columns.json", "mode": 256}]}}), True),
    ("a Secret, mode 0777", _mounted({"name": "key", "secret": {"secretName": "gcs-key", "defaultMode": 511}}), True),
    ("a memory emptyDir", _mounted({"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}), True),
    ("an ephemeral CSI volume", _mounted({"name": "blobs", "csi": {"driver": "blob.csi.azure.com",
                                                                  "volumeAttributes": {"containerName": "c"}}}), True),
    ("a mount of a folder inside the volume", _mounted({"name": "data", "emptyDir": {}}, subPath="a/b"), True),
    ("two mounts of one volume", {"volumes": [{"name": "data", "emptyDir": {}}], "volumeMounts": [
        {"name": "data", "mountPath": "/a"}, {"name": "data", "mountPath": "/b"}]}, True),
    ("a hostPath volume", _mounted({"name": "data", "hostPath": {"path": "/mnt/data"}}), False),
    ("an nfs volume", _mounted({"name": "data", "nfs": {"server": "nfs.example.com", "path": "/exports"}}), False),
    ("a volume name in capitals", _mounted({"name": "Data", "emptyDir": {}}), False),
    ("a volume name with a dot", _mounted({"name": "my.data", "emptyDir": {}}), False),
    ("a claim name in capitals", _mounted({"name": "data", "persistentVolumeClaim": {"claimName": "Ctr"}}), False),
    ("two volumes of one name", {"volumes": [{"name": "data", "emptyDir": {}}, {"name": "data", "emptyDir": {}}],
                                 "volumeMounts": [{"name": "data", "mountPath": "/data"}]}, False),
    ("a mount of no volume", {"volumes": [{"name": "data", "emptyDir": {}}], "volumeMounts": [
        {"name": "data", "mountPath": "/data"}, {"name": "nosuch", "mountPath": "/other"}]}, False),
    ("two mounts at one path", {"volumes": [{"name": "a", "emptyDir": {}}, {"name": "b", "emptyDir": {}}],
                                "volumeMounts": [{"name": "a", "mountPath": "/data"},
                                                 {"name": "b", "mountPath": "/data"}]}, False),
    ("a subPath climbing out", _mounted({"name": "data", "emptyDir": {}}, subPath="../x"), False),
    ("an absolute subPath", _mounted({"name": "data", "emptyDir": {}}, subPath="/x"), False),
    ("a ConfigMap key with a slash", _mounted({"name": "conf", "configMap": {
        "name": "c", "items": [{"key": "a/b", "path": "b"}]}}), False),
    ("a ConfigMap item path climbing out", _mounted({"name": "conf", "configMap": {
        "name": "c", "items": [{"key": "a", "path": "../b"}]}}), False),
    ("a CSI driver name with a space", _mounted({"name": "blobs", "csi": {"driver": "blob driver"}}), False),
    ("a CSI driver name of 64 characters", _mounted({"name": "blobs", "csi": {"driver": _LONG}}), False),
]


def named_objects(fields: dict, namespace: str) -> list[dict]:
    """The objects a case's fields name, with the keys they read: the API server admits a pod naming a Secret,
    claim or ConfigMap (or a ConfigMap's key) that no object could have, which then never starts; its verdict on
    the name is its verdict on that object."""
    def meta(name: str) -> dict:
        return {"name": name, "namespace": namespace}

    found = [{"apiVersion": "v1", "kind": "Secret", "metadata": meta(name), "type": "kubernetes.io/dockerconfigjson",
              "data": {".dockerconfigjson": "e30="}} for name in fields.get("imagePullSecrets", [])]
    for volume in fields.get("volumes", []):
        if "persistentVolumeClaim" in volume:
            found.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                          "metadata": meta(volume["persistentVolumeClaim"]["claimName"]),
                          "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
        for kind, key in (("configMap", "name"), ("secret", "secretName")):
            if kind in volume:
                data = {item["key"]: "" for item in volume[kind].get("items", [])}
                found.append({"apiVersion": "v1", "kind": "ConfigMap" if kind == "configMap" else "Secret",
                              "metadata": meta(volume[kind][key]), "data": data})
    return found


def server_objects(fields: dict, namespace: str) -> list[dict]:
    """What the API server is asked to create for a case's fields: what they name, then a Pod carrying them."""
    objects = named_objects(fields, namespace)
    pod_fields = {k: v for k, v in fields.items() if k != "imagePullSecrets"}
    if pod_fields or not objects:
        meta = pod_fields.get("podMetadata", {})
        spec: dict = {"containers": [{"name": "c", "image": "registry.example.com/x:1", "securityContext": {
            "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "runAsNonRoot": True,
            "seccompProfile": {"type": "RuntimeDefault"}}}]}
        for key in ("nodeSelector", "tolerations", "volumes"):
            if key in pod_fields:
                spec[key] = pod_fields[key]
        if "volumeMounts" in pod_fields:
            spec["containers"][0]["volumeMounts"] = pod_fields["volumeMounts"]
        objects.append({"apiVersion": "v1", "kind": "Pod",
                        "metadata": {"name": "pod-field-case", "namespace": namespace, **meta}, "spec": spec})
    return objects

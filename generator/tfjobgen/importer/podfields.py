"""The pod fields of every role carried to the TrainingJob's: pull secrets, the pod template's labels and
annotations (spec.podMetadata), nodeSelector, tolerations, and the volumes the training container mounts
(spec.volumes; a mount every role has alike in spec.volumeMounts, a role's own in its volumeMounts).

A TrainingJob holds each once for every role, so a value is carried when every role's pods had it alike;
one that only some roles had (or whose value differs between them) needs a decision, since carrying it
would change the other roles' pods. Pull secrets are the exception: every role gets all of them, which
changes no pod but the credentials it may pull with. Keys tfjobgen and the controllers set on pods
themselves (concerns/podspec.py) are dropped, saying why.
"""

from __future__ import annotations

import json

from ..concerns import podspec, volumes
from ..inputs.problems import field_path
from .builder import Builder
from .report import CARRIED, DECIDE, DROPPED
from .sources import Source

GROUP_ANNOTATION = "scheduling.k8s.io/group-name"


def carry(b: Builder, source: Source, containers: dict[str, tuple[int, dict]]) -> None:
    """`containers`: each role's training container (its index, itself)."""
    replicas = list(source.replicas.values())
    _volumes(b, replicas, containers)
    _pull_secrets(b, replicas)
    _metadata(b, replicas)
    _node_selector(b, replicas)
    _tolerations(b, replicas)
    for replica in replicas:
        if "affinity" in replica.pod:
            b.row(field_path(replica.pod_path, "affinity"), DECIDE, "spec.topology.mode",
                  "tfjobgen writes the affinity of the topology it is given (colocated, isolated, spread); "
                  "pick the one this affinity meant")


def _pull_secrets(b: Builder, replicas: list) -> None:
    names: list[str] = []
    having = [r for r in replicas if isinstance(r.pod.get("imagePullSecrets"), list)]
    for replica in having:
        for i, entry in enumerate(replica.pod["imagePullSecrets"]):
            where = field_path(replica.pod_path, "imagePullSecrets", i)
            name = entry.get("name") if isinstance(entry, dict) else None
            if not isinstance(name, str) or not name:
                b.row(where, DROPPED, "", "names no Secret")
                continue
            if name not in names:
                names.append(name)
                b.provenance.setdefault(f"spec.imagePullSecrets[{len(names) - 1}]", f"{where}.name")
            why = "" if len(having) == len(replicas) else "every role's pods get every pull secret"
            b.row(f"{where}.name", CARRIED, f"spec.imagePullSecrets[{names.index(name)}]", why)
    for replica in replicas:
        if "imagePullSecrets" in replica.pod and replica not in having:
            b.row(field_path(replica.pod_path, "imagePullSecrets"), DROPPED, "", "not a list of Secrets")
    if names:
        b.put("spec.imagePullSecrets", names)


def _same_everywhere(replicas: list, values: dict[str, object]) -> bool:
    """Whether every role had the value, alike."""
    return len(values) == len(replicas) and len({json.dumps(v, sort_keys=True) for v in values.values()}) == 1


def _metadata(b: Builder, replicas: list) -> None:
    carried: dict[str, dict[str, str]] = {"labels": {}, "annotations": {}}
    for kind, noun in (("labels", "label"), ("annotations", "annotation")):
        keys = sorted({k for r in replicas for k in ((r.pod_metadata or {}).get(kind) or {})})
        for key in keys:
            values = {r.role: ((r.pod_metadata or {}).get(kind) or {})[key] for r in replicas
                      if key in ((r.pod_metadata or {}).get(kind) or {})}
            target = f"spec.podMetadata.{kind}.{key}"
            same = _same_everywhere(replicas, values)
            for replica in replicas:
                if replica.role not in values:
                    continue
                where = field_path(replica.path, "template", "metadata", kind, key)
                if key == GROUP_ANNOTATION:
                    b.row(where, DROPPED, "", "the gang's PodGroup: tfjobgen's gang admission is the cluster "
                                              "profile's spec.gang")
                elif podspec.reserved(key):
                    b.row(where, DROPPED, "", f"tfjobgen or the pods' controller sets this {noun} itself")
                elif same:
                    b.row(where, CARRIED, target, "on the pods only" + ("" if len(replicas) == 1 else
                                                                        ", every role's alike"))
                    b.provenance.setdefault(target, where)
                else:
                    b.row(where, DECIDE, f"spec.podMetadata.{kind}",
                          f"only some roles' pods have it, or their values differ: a TrainingJob's pod {kind} are "
                          "the same for every role; add it for all, or leave it out")
            if same and key != GROUP_ANNOTATION and not podspec.reserved(key):
                value = next(iter(values.values()))
                carried[kind][str(key)] = "" if value is None else str(value)
    for replica in replicas:
        meta = replica.pod_metadata or {}
        for key in sorted(set(meta) - {"annotations", "labels"}):
            b.row(field_path(replica.path, "template", "metadata", key), DROPPED, "",
                  "set by the API server or the operator")
    if carried["labels"] or carried["annotations"]:
        b.put("spec.podMetadata", {k: v for k, v in carried.items() if v})


def _node_selector(b: Builder, replicas: list) -> None:
    selectors = {r.role: r.pod.get("nodeSelector") or {} for r in replicas}
    carried = {}
    for key in sorted({k for s in selectors.values() for k in s}):
        values = {role: s[key] for role, s in selectors.items() if key in s}
        same = _same_everywhere(replicas, values)
        for replica in replicas:
            if replica.role not in values:
                continue
            where = field_path(replica.pod_path, "nodeSelector", key)
            if same:
                b.row(where, CARRIED, f"spec.nodeSelector.{key}", "beside the profile's placement")
                b.provenance.setdefault(f"spec.nodeSelector.{key}", where)
            else:
                b.row(where, DECIDE, "spec.topology.nodePools",
                      "only some roles select it, or their values differ: a TrainingJob's nodeSelector is every "
                      "role's; a role's own nodes are a node pool of the cluster profile (spec.topology.nodePools)")
        if same:
            carried[str(key)] = str(next(iter(values.values())))
    if carried:
        b.put("spec.nodeSelector", carried)


def _tolerations(b: Builder, replicas: list) -> None:
    lists = {r.role: r.pod.get("tolerations") if isinstance(r.pod.get("tolerations"), list) else []
             for r in replicas}
    carried: list[dict] = []
    for replica in replicas:
        for i, toleration in enumerate(lists[replica.role]):
            where = field_path(replica.pod_path, "tolerations", i)
            everywhere = all(toleration in others for others in lists.values())
            if everywhere and isinstance(toleration, dict):
                if toleration not in carried:
                    carried.append(toleration)
                    b.provenance.setdefault(f"spec.tolerations[{len(carried) - 1}]", where)
                b.row(where, CARRIED, f"spec.tolerations[{carried.index(toleration)}]", "beside the profile's")
            else:
                b.row(where, DECIDE, "spec.topology.nodePools",
                      "only some roles tolerate it: a TrainingJob's tolerations are every role's; a role's own "
                      "tainted nodes are a node pool of the cluster profile (spec.topology.nodePools)")
    if carried:
        b.put("spec.tolerations", carried)


_MOUNT_FIELDS = ("name", "mountPath", "readOnly", "subPath")


def _volumes(b: Builder, replicas: list, containers: dict[str, tuple[int, dict]]) -> None:
    """Volumes the training containers mount, each defined once; mounts every role has alike for the job."""
    defined: dict[str, dict] = {}  # name -> the volume carried
    carried_mounts: dict[str, list[tuple[str, dict]]] = {}  # role -> (where, mount)
    for replica in replicas:
        index, container = containers[replica.role]
        path = field_path(replica.pod_path, "containers", index)
        pod_volumes = {v.get("name"): (i, v) for i, v in enumerate(replica.pod.get("volumes") or [])}
        mounted = set()
        for i, mount in enumerate(container.get("volumeMounts") or []):
            where = field_path(f"{path}.volumeMounts", i)
            name = mount.get("name") if isinstance(mount, dict) else None
            if name not in pod_volumes:
                b.row(where, DROPPED, "", "mounts a volume the pod does not define (the API server would refuse it)")
                continue
            j, volume = pod_volumes[name]
            why = _volume_problem(volume, defined)
            if why:
                b.row(where, DECIDE, "spec.volumes", f"its volume {name}: {why}")
                continue
            mounted.add(name)
            defined.setdefault(name, volume)
            kept = {k: mount[k] for k in _MOUNT_FIELDS if k in mount}
            carried_mounts.setdefault(replica.role, []).append((where, kept))
            for key in sorted(set(mount) - set(_MOUNT_FIELDS)):
                b.row(f"{where}.{key}", DECIDE, "spec.volumeMounts",
                      f"a TrainingJob's mounts have {', '.join(_MOUNT_FIELDS)} only")
        for name, (j, volume) in pod_volumes.items():
            where = field_path(replica.pod_path, "volumes", j)
            kind = next((k for k in volume if k != "name"), "?")
            if kind in volumes.REFUSED_SOURCES:
                b.row(where, DROPPED, "", f"{kind}: {volumes.REFUSED_SOURCES[kind]}")
            elif name in mounted:
                target = f"spec.volumes[{list(defined).index(name)}]"
                b.row(where, CARRIED, target, "" if kind in volumes.SOURCES else kind)
                b.provenance.setdefault(target, where)
            elif kind in volumes.SOURCES and not _volume_problem(volume, defined):
                b.row(where, DROPPED, "", "the training container does not mount it")
            else:
                b.row(where, DECIDE, "spec.volumes", _volume_problem(volume, defined) or
                      "the training container does not mount it")
    if defined:
        b.put("spec.volumes", list(defined.values()))
    _place_mounts(b, replicas, carried_mounts)


def _volume_problem(volume: dict, defined: dict[str, dict]) -> str:
    """Why a source's volume cannot be carried as it is, "" when it can."""
    kinds = [k for k in volume if k != "name"]
    if len(kinds) != 1:
        return "a volume has one source"
    if kinds[0] in volumes.REFUSED_SOURCES:
        return volumes.REFUSED_SOURCES[kinds[0]]
    if kinds[0] not in volumes.SOURCES:
        return (f"{kinds[0]} volumes are not among a TrainingJob's ({', '.join(volumes.SOURCES)}); a "
                "persistentVolumeClaim or a csi volume may hold the same data")
    name = volume.get("name")
    if name in defined and defined[name] != volume:
        return f"roles define volume {name} differently: a TrainingJob's volumes are every role's; rename one"
    return ""


def _place_mounts(b: Builder, replicas: list, carried: dict[str, list[tuple[str, dict]]]) -> None:
    every = [m for _, m in carried.get(replicas[0].role, [])
             if all(any(m == other for _, other in carried.get(r.role, [])) for r in replicas)] \
        if len(carried) == len(replicas) else []
    job_wide: list[dict] = []
    for replica in replicas:
        own = []
        for where, mount in carried.get(replica.role, []):
            if mount in every:
                if mount not in job_wide:
                    job_wide.append(mount)
                target, why = f"spec.volumeMounts[{job_wide.index(mount)}]", "every role mounts it alike"
            else:
                own.append(mount)
                target = f"spec.roles.{replica.role}.volumeMounts[{len(own) - 1}]"
                why = f"only the {replica.role} mounts it"
            b.row(where, CARRIED, target, why)
            b.provenance.setdefault(target, where)
        if own:
            b.put(f"spec.roles.{replica.role}.volumeMounts", own)
    if job_wide:
        b.put("spec.volumeMounts", job_wide)

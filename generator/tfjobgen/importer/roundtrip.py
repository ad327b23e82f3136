"""The round-trip check: the imported job, rendered by tfjobgen, runs what the source ran.

For each role, the rendered pod's training container is compared field by field with the source
replica's: the image, the command and args (as import's argument lists read them), CPU, memory and
GPUs, every env entry the source set (but those tfjobgen owns), and the pod's mounts and their volumes,
pull secrets, labels and annotations, nodeSelector and tolerations (each of the source's must be on the
rendered pod, as it was). A field the report says needs a
decision was not carried, so it is not compared: the report names it. What tfjobgen adds of its own
(TF_CONFIG, thread counts, the security context, placement, ports) is listed, for the report to name.
Pure: a Source and rendered objects in, differences and additions out.
"""

from __future__ import annotations

from ..inputs import quantity
from ..inputs.problems import field_path
from ..shared import contract
from .containers import GPU_RESOURCES, OWNED_ENV, THREAD_ENV, argv
from .report import CARRIED, Row
from .sources import Refusal, Source, main_container


def templates(objects: list[dict]) -> dict[str, dict]:
    """The pod template (metadata and spec) of each role's tasks, from rendered objects of any backend."""
    found = {}
    for obj in objects:
        for template in _templates(obj):
            role = (template.get("metadata") or {}).get("labels", {}).get("tfjobgen.dev/role")
            if role and role not in found:
                found[role] = template
    return found


def pods(objects: list[dict]) -> dict[str, dict]:
    """The pod spec of each role's tasks, from rendered objects of any backend."""
    return {role: template.get("spec") or {} for role, template in templates(objects).items()}


def _templates(obj: dict):
    spec = obj.get("spec") or {}
    if obj.get("kind") == "Job":
        yield spec.get("template") or {}
    for replicated in spec.get("replicatedJobs") or []:  # JobSet
        yield ((replicated.get("template") or {}).get("spec") or {}).get("template") or {}
    for replica in (spec.get("tfReplicaSpecs") or {}).values():  # TFJob
        yield replica.get("template") or {}


def _training(pod: dict) -> dict:
    return next((c for c in pod.get("containers") or [] if c.get("name") == "tensorflow"), {})


def _same_quantity(a, b) -> bool:
    return a is not None and b is not None and quantity.parse(a) == quantity.parse(b)


def compare(source: Source, rows: list[Row], objects: list[dict]) -> list[str]:
    """Every difference between what the source's containers ran and what the rendered pods run, one line
    each ('' when none), for the fields the report says were carried."""
    carried = {r.field for r in rows if r.outcome == CARRIED}
    rendered = pods(objects)
    differences = []
    for role, template in templates(objects).items():
        if role in source.replicas:
            differences += _pod_fields(role, source.replicas[role], template, carried)
    for role, replica in source.replicas.items():
        found = main_container(replica)
        if isinstance(found, Refusal) or role not in rendered:
            differences.append(f"{role}: no rendered pod")
            continue
        index, container = found
        path = field_path(replica.pod_path, "containers", index)
        mine = _training(rendered[role])

        def differ(what: str, theirs, ours) -> None:
            differences.append(f"{role} {what}: the source ran {theirs!r}, tfjobgen renders {ours!r}")

        if f"{path}.image" in carried and container.get("image") != mine.get("image"):
            differ("image", container.get("image"), mine.get("image"))
        got = argv(container, path)
        if f"{path}.command" in carried and not isinstance(got, Refusal):
            runs = contract.own_program(mine.get("command") or []) + list(mine.get("args") or [])  # as the entry's child
            if list(got[0]) + list(got[1]) != runs:
                differ("command and args", got[0] + got[1], runs)
        resources, ours = container.get("resources") or {}, mine.get("resources") or {}
        requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
        for kind, values in (("requests", requests), ("limits", limits)):
            for resource, value in values.items():
                field = f"{path}.resources.{kind}.{resource}"
                if field not in carried:
                    continue
                if resource in GPU_RESOURCES:
                    rendered_gpus = [v for k, v in (ours.get(kind) or ours.get("limits") or {}).items()
                                     if k.endswith("/gpu")]
                    if [int(str(value))] != [int(str(v)) for v in rendered_gpus]:
                        differ(f"{resource} {kind}", value, rendered_gpus)
                    continue
                side = kind
                if resource == "cpu" and kind == "limits" and "cpu" not in requests:
                    side = "requests"  # a CPU limit alone was the request too, and is now both
                if resource == "memory" and kind == "requests" and "memory" in limits:
                    continue  # the memory limit was taken for both: compared as a limit
                if not _same_quantity(value, (ours.get(side) or {}).get(resource)):
                    differ(f"{resource} {side}", value, (ours.get(side) or {}).get(resource))
                if resource == "memory" and not _same_quantity(value, (ours.get("requests") or {}).get("memory")):
                    differ("memory request", value, (ours.get("requests") or {}).get("memory"))
        env = {e.get("name"): e for e in mine.get("env") or []}
        for i, entry in enumerate(container.get("env") or []):
            if field_path(f"{path}.env", i) not in carried or entry.get("name") in THREAD_ENV:
                continue
            theirs = {k: ("" if v is None else str(v)) if k == "value" else v for k, v in entry.items()}
            if env.get(entry.get("name")) != theirs:
                differ(f"env {entry.get('name')}", theirs, env.get(entry.get("name")))
        for name, key in THREAD_ENV.items():
            written = next((e for i, e in enumerate(container.get("env") or [])
                            if e.get("name") == name and field_path(f"{path}.env", i) in carried), None)
            if written and (env.get(name) or {}).get("value") != str(written.get("value")):
                differ(f"env {name}", written.get("value"), (env.get(name) or {}).get("value"))
    return differences


def _pod_fields(role: str, replica, template: dict, carried: set[str]) -> list[str]:
    """The carried pod fields a rendered pod lacks: mounts and their volumes, pull secrets, pod labels and
    annotations, nodeSelector, tolerations (tfjobgen adds its own beside them, so each of the source's must
    be there, as it was)."""
    pod, ours, meta = replica.pod, template.get("spec") or {}, template.get("metadata") or {}
    differences = []
    names = [s.get("name") for s in ours.get("imagePullSecrets") or []]
    for i, entry in enumerate(pod.get("imagePullSecrets") or []):
        if field_path(replica.pod_path, "imagePullSecrets", i, "name") in carried and entry.get("name") not in names:
            differences.append(f"{role} imagePullSecrets: the source pulled with {entry.get('name')!r}, "
                               f"tfjobgen renders {names!r}")
    for kind in ("labels", "annotations"):
        for key, value in ((replica.pod_metadata or {}).get(kind) or {}).items():
            if field_path(replica.path, "template", "metadata", kind, key) in carried and \
                    (meta.get(kind) or {}).get(key) != str(value):
                differences.append(f"{role} pod {kind} {key}: the source had {value!r}, tfjobgen renders "
                                   f"{(meta.get(kind) or {}).get(key)!r}")
    for key, value in (pod.get("nodeSelector") or {}).items():
        if field_path(replica.pod_path, "nodeSelector", key) in carried and \
                (ours.get("nodeSelector") or {}).get(key) != str(value):
            differences.append(f"{role} nodeSelector {key}: the source had {value!r}, tfjobgen renders "
                               f"{(ours.get('nodeSelector') or {}).get(key)!r}")
    found = main_container(replica)
    if not isinstance(found, Refusal):
        index, container = found
        path = field_path(replica.pod_path, "containers", index)
        mine = _training(ours)
        rendered_volumes = {v.get("name"): v for v in ours.get("volumes") or []}
        source_volumes = {v.get("name"): v for v in pod.get("volumes") or []}
        for i, mount in enumerate(container.get("volumeMounts") or []):
            if field_path(f"{path}.volumeMounts", i) not in carried:
                continue
            want = {k: v for k, v in mount.items() if not (k == "readOnly" and v is False)}
            if want not in (mine.get("volumeMounts") or []):
                differences.append(f"{role} volumeMounts: the source mounted {want!r}, tfjobgen's pods do not")
            name = mount.get("name")
            if rendered_volumes.get(name) != source_volumes.get(name):
                differences.append(f"{role} volume {name}: the source had {source_volumes.get(name)!r}, tfjobgen "
                                   f"renders {rendered_volumes.get(name)!r}")
    for i, toleration in enumerate(pod.get("tolerations") or []):
        if field_path(replica.pod_path, "tolerations", i) in carried and \
                toleration not in (ours.get("tolerations") or []):
            differences.append(f"{role} tolerations: the source tolerated {toleration!r}, tfjobgen's pods do not")
    return differences


def additions(source: Source, objects: list[dict]) -> list[str]:
    """What tfjobgen's pods carry that the source's did not: its own env, security context, placement, ports."""
    rendered = pods(objects)
    found: dict[str, None] = {}
    for role, pod in sorted(rendered.items()):
        replica = source.replicas.get(role)
        theirs = set()
        if replica is not None:
            got = main_container(replica)
            if not isinstance(got, Refusal):
                theirs = {e.get("name") for e in got[1].get("env") or []} - set(OWNED_ENV) - set(THREAD_ENV)
        mine = _training(pod)
        names = [e.get("name") for e in mine.get("env") or [] if e.get("name") not in theirs]
        generated = [n for n in names if n in OWNED_ENV or n in THREAD_ENV or n.startswith(contract.GENERATED_PREFIX)]
        other = [n for n in names if n not in generated]
        if generated:
            found[f"env {', '.join(generated)}: TF_CONFIG names the cluster and the task; thread pools sized to the "
                  f"CPU limit; TFJOBGEN_* for tfjobgen's runtime and metrics"] = None
        if other:
            found[f"env {', '.join(other)}: set by tfjobgen (HOME is /tmp, writable whatever the image)"] = None
        if mine.get("securityContext") or pod.get("securityContext"):
            found["restricted security context: user 10000 (runAsNonRoot), no privilege escalation, every capability "
                  "dropped, RuntimeDefault seccomp; an image that must run as root needs a USER"] = None
        if pod.get("affinity") or pod.get("nodeSelector") or pod.get("tolerations"):
            found["placement: the topology's affinity and the profile's node pools"] = None
        if mine.get("ports"):
            found["ports: " + ", ".join(f"{p.get('name')} {p.get('containerPort')}" for p in mine["ports"])] = None
        if pod.get("automountServiceAccountToken") is False:
            found["no API token mounted (automountServiceAccountToken: false)"] = None
        if any(v.get("name") == "scratch" for v in pod.get("volumes") or []):
            found["a writable /tmp (emptyDir)"] = None
        if contract.own_program(mine.get("command") or []) != list(mine.get("command") or []):
            found[f"the program runs under tfjobgen's entrypoint ({contract.ENTRY_PROGRAM}, copied in by an init "
                  "container): it ends the PS and workers when the chief's program ends"] = None
    return list(found)

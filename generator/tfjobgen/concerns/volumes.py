"""The intent's volumes and mounts (spec.volumes, spec.volumeMounts, spec.roles.<role>.volumeMounts), as the
API server, restricted Pod Security and tfjobgen's own paths allow them.

A pod gets the job's mounts, then its role's, after tfjobgen's own (the scratch /tmp, StarServer's endpoint
map), and only the volumes those mounts name, in spec.volumes' order. Refused, each at its field:

- a source restricted Pod Security refuses (hostPath, nfs), a volume with no source or two;
- names the API server refuses: two volumes of one name (or of tfjobgen's own, scratch and cluster), a
  mount of a volume not defined, two mounts at one path in one container, a subPath or item path that is
  absolute or climbs out with '..', a ConfigMap or Secret key it would not take, a CSI driver name;
- a volume no role mounts (it would be defined for nothing: a typo in a mount, most likely);
- a mount at, above or inside a path tfjobgen's pods use (OWNED_PATHS, and the runtime's default modelDir),
  which it would hide, or at /tmp's own path (its scratch is there); inside /tmp is fine.
"""

from __future__ import annotations

import posixpath

from ..inputs.kubernetes_syntax import config_map_key_problem, dns_subdomain_problem
from ..inputs.problems import Problem, field_path
from ..inputs.trainingjob import TrainingJob
from ..shared import contract

SCRATCH_VOLUME = "scratch"
CLUSTER_VOLUME = "cluster"
OWN_VOLUMES = (SCRATCH_VOLUME, CLUSTER_VOLUME)
# Sources restricted Pod Security admits (the kinds the schema offers) and refuses (with why).
SOURCES = ("persistentVolumeClaim", "configMap", "secret", "emptyDir", "csi")
REFUSED_SOURCES = {
    "hostPath": "restricted Pod Security admits no hostPath volume (it reaches the node's own files): make a "
                "PersistentVolume of the node's folder (a local one) and mount its claim (persistentVolumeClaim)",
    "nfs": "restricted Pod Security admits no nfs volume: make a PersistentVolume of the NFS export and mount "
           "its claim (persistentVolumeClaim)",
}
# Folders tfjobgen's pods use: a mount at or above one hides it, and one inside the last two replaces part of it.
# (/tmp itself takes mounts inside it: a folder of the scratch emptyDir.)
SCRATCH = contract.SCRATCH_DIR
# StarServer's endpoint map (contract.ENDPOINT_MAP_DIR), the entrypoint's folder (contract.ENTRY_DIR: a program of
# your own runs from it), and whatever tfjobgen adds
OWNED_FOR = {"/etc/tfjobgen": "StarServer's endpoint map", contract.ENTRY_DIR: "the entrypoint a program of your own runs under"}
OWN_TREES = tuple(OWNED_FOR)
DEFAULT_MODEL_DIR = "/tmp/tfjobgen/model"  # the runtime's, in the chief's scratch (schema: spec.training.modelDir)
CSI_DRIVER_MAX = 63


def mounts(job: TrainingJob, role: str) -> list[dict]:
    """The intent's mounts of a role's training container, after tfjobgen's own (readOnly only when true:
    false is Kubernetes' default)."""
    return [{k: v for k, v in m.items() if not (k == "readOnly" and v is False)}
            for m in job.volume_mounts + job.roles[role].volume_mounts]


def pod_volumes(job: TrainingJob, role: str) -> list[dict]:
    """The volumes of spec.volumes a role's pods mount, in spec.volumes' order."""
    used = {m["name"] for m in mounts(job, role)}
    return [dict(v) for v in job.volumes if v["name"] in used]


def on_claim(job: TrainingJob, path: str, role: str) -> tuple[dict, dict] | None:
    """The persistentVolumeClaim volume and its mount that hold `path` in `role`'s training container, or None.
    The deepest mount holding the path decides (an emptyDir at /data/cache under a claim at /data holds
    /data/cache/x); a claim outlives every pod, and any pod that mounts it reads the same files."""
    path = _normal(path)
    if not path.startswith("/") or role not in job.roles:
        return None
    holding = [m for m in mounts(job, role) if _inside(path, _normal(m["mountPath"]))]
    if not holding:
        return None
    mount = max(holding, key=lambda m: len(_normal(m["mountPath"])))
    volume = next((v for v in job.volumes if v["name"] == mount["name"]), None)
    return (volume, mount) if volume is not None and "persistentVolumeClaim" in volume else None


def same_claim(job: TrainingJob, path: str, roles: list[str]) -> bool:
    """Whether every role in `roles` reaches `path` on one claim, at one place in it."""
    found = [on_claim(job, path, role) for role in roles]
    if not found or None in found:
        return False
    return len({(v["persistentVolumeClaim"]["claimName"], _normal(m["mountPath"]), m.get("subPath", ""))
                for v, m in found}) == 1


def _source(volume: dict) -> list[str]:
    return [key for key in volume if key != "name"]


def _inside(path: str, folder: str) -> bool:
    """Whether `path` is `folder` or below it."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _normal(path: str) -> str:
    return posixpath.normpath(path) if path.startswith("/") else path


def owned_problem(path: str, job: TrainingJob) -> str:
    """Why a mount at `path` would hide or replace a path tfjobgen's pods use, "" when it would not."""
    path = _normal(path)
    if _inside(SCRATCH, path):
        return (f"{SCRATCH} is the pods' writable scratch (and HOME), mounted by tfjobgen: a volume at or above it "
                f"would hide it; mount at a path of your own (/data), or inside it ({SCRATCH}/data)")
    for tree in OWN_TREES:
        if _inside(tree, path) or _inside(path, tree):
            return f"{tree} holds tfjobgen's own files ({OWNED_FOR[tree]}): mount at a path of your own"
    if job.uses_runtime and job.training.get("modelDir") == DEFAULT_MODEL_DIR and (
            _inside(DEFAULT_MODEL_DIR, path) or _inside(path, DEFAULT_MODEL_DIR)):
        return (f"{DEFAULT_MODEL_DIR} is the runtime's default modelDir, tfjobgen's: to keep checkpoints on this "
                "volume, mount it at a path of your own and set spec.training.modelDir there")
    return ""


def relative_problem(path: str) -> str:
    """What keeps `path` from being a path inside a volume (validateLocalDescendingPath), "" when nothing does."""
    if path.startswith("/"):
        return "it is absolute: give a path relative to the volume"
    if ".." in path.split("/"):
        return "it has a '..' part, which would climb out of the volume"
    return ""


def check(job: TrainingJob) -> list[Problem]:
    problems, names = [], {}
    for i, volume in enumerate(job.volumes):
        where = field_path("spec", "volumes", i)
        name = volume["name"]
        if name in OWN_VOLUMES:
            problems.append(Problem(f"tfjobgen names its own volumes {' and '.join(OWN_VOLUMES)}: choose another name",
                                    f"{where}.name"))
        elif name in names:
            problems.append(Problem(f"'{name}' is already the name of spec.volumes[{names[name]}]: volume names are "
                                    "unique", f"{where}.name"))
        names.setdefault(name, i)
        problems += _check_source(volume, where)
    used: set[str] = set()
    lists = [("spec.volumeMounts", job.volume_mounts, None)] + [
        (f"spec.roles.{role.name}.volumeMounts", role.volume_mounts, role.name) for role in job.roles.values()]
    for at, found, _ in lists:
        for i, mount in enumerate(found):
            where = field_path(at, i)
            used.add(mount["name"])
            if mount["name"] not in names:
                known = ", ".join(names) or "none"
                problems.append(Problem(f"mounts volume '{mount['name']}', which spec.volumes does not define "
                                        f"(defined: {known})", f"{where}.name"))
            wrong = owned_problem(mount["mountPath"], job)
            if wrong:
                problems.append(Problem(wrong, f"{where}.mountPath"))
            if "subPath" in mount and relative_problem(mount["subPath"]):
                problems.append(Problem(f"subPath '{mount['subPath']}': {relative_problem(mount['subPath'])}",
                                        f"{where}.subPath"))
    for role in job.roles.values():  # one container per role: the job's mounts and its own together
        seen: dict[str, str] = {}
        for at, found, owner in lists:
            if owner not in (None, role.name):
                continue
            for i, mount in enumerate(found):
                path, where = _normal(mount["mountPath"]), field_path(at, i)
                if path in seen and seen[path] != where:
                    problems.append(Problem(f"{role.name} pods already mount a volume at {path} ({seen[path]}): one "
                                            "mount per path", f"{where}.mountPath"))
                seen.setdefault(path, where)
    for name, i in names.items():
        if name not in used:
            problems.append(Problem(f"volume '{name}' is mounted by no role: mount it (spec.volumeMounts, "
                                    "spec.roles.<role>.volumeMounts) or remove it", field_path("spec", "volumes", i)))
    return _distinct(problems)


def _distinct(problems: list[Problem]) -> list[Problem]:
    seen, result = set(), []
    for problem in problems:
        if (problem.field, problem.message) not in seen:
            seen.add((problem.field, problem.message))
            result.append(problem)
    return result


def _check_source(volume: dict, where: str) -> list[Problem]:
    kinds = _source(volume)
    refused = [k for k in kinds if k in REFUSED_SOURCES]
    if refused:
        return [Problem(REFUSED_SOURCES[refused[0]], f"{where}.{refused[0]}")]
    if len(kinds) != 1:
        what = "no source" if not kinds else f"{len(kinds)} sources ({', '.join(kinds)})"
        return [Problem(f"volume '{volume['name']}' has {what}: give exactly one of {', '.join(SOURCES)}", where)]
    kind, source = kinds[0], volume[kinds[0]]
    problems = []
    for i, item in enumerate(source.get("items", ()) if kind in ("configMap", "secret") else ()):
        wrong = config_map_key_problem(item["key"])
        if wrong:
            problems.append(Problem(f"key '{item['key']}' is not valid: {wrong}", f"{where}.{kind}.items[{i}].key"))
        wrong = relative_problem(item["path"])
        if wrong:
            problems.append(Problem(f"path '{item['path']}': {wrong}", f"{where}.{kind}.items[{i}].path"))
    if kind == "csi":
        driver = source["driver"]
        wrong = (f"it has {len(driver)} characters; at most {CSI_DRIVER_MAX}" if len(driver) > CSI_DRIVER_MAX
                 else dns_subdomain_problem(driver.lower()))
        if wrong:
            problems.append(Problem(f"CSI driver '{driver}' is not a driver's name: {wrong}", f"{where}.csi.driver"))
    return problems

"""What an overlay's kustomization does before tfjobgen runs, read without running kustomize.

kustomize spends about 6 ms on every object a plugin returns, and its bookkeeping
grows with their square (docs/benchmarks.md): a thousand jobs make ten thousand
objects, minutes of kustomize. But everything an overlay of this repository does
to a job happens before the ClusterProfile transformer, to the intent; after it,
kustomize only sorts. So the overlay is read first, and build.py uses as little
of kustomize as the overlay needs:

    PASSIVE     it lists intent files and runs its ClusterProfile, nothing else: the
                intents reach tfjobgen as written (build: no kustomize at all);
    PER_OBJECT  it also transforms objects one by one (patches, images, labels, a
                namespace, name prefixes), or lists other objects: a build of a share
                of the intents gets exactly that share's part of the whole;
    BEFORE      it does more before the ClusterProfile (replacements, generators,
                remote bases): kustomize must see all of it at once, but its last
                step is still tfjobgen;
    OPAQUE      something may run after or beside tfjobgen (other transformers,
                validators, vars, components, a sort order), or the tree cannot be
                read: only one ordinary kustomize build says what comes out.

The reading is conservative: a field not named here counts as OPAQUE.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ..expand import emit
from ..inputs import intents, source
from ..inputs.problems import InvalidInput

PASSIVE, PER_OBJECT, BEFORE, OPAQUE = 0, 1, 2, 3
NEEDS = ("passive", "per-object", "before", "opaque")

# Fields that do nothing to objects (configurations only teach builtin transformers where fields are).
_PASSIVE_FIELDS = {"apiVersion", "kind", "metadata", "resources", "configurations"}
# Fields kustomize applies object by object, before the `transformers:` list.
_PER_OBJECT_FIELDS = {"patches", "patchesStrategicMerge", "patchesJson6902", "images", "namePrefix", "nameSuffix",
                      "namespace", "commonLabels", "labels", "commonAnnotations", "replicas"}
# Fields kustomize applies before the `transformers:` list, across objects.
_BEFORE_FIELDS = {"replacements", "configMapGenerator", "secretGenerator", "generatorOptions", "generators",
                  "helmCharts", "helmGlobals", "openapi", "crds"}
# Where a share of the tree may read files (tree.BUILD_INPUTS that kustomize reads).
TREE_FOLDERS = ("jobs", "bases", "overlays")
# Annotations kustomize acts on (local-config drops an object; behavior and needs-hash change it).
_KUSTOMIZE_ANNOTATIONS = ("config.kubernetes.io/", "kustomize.config.k8s.io/", "internal.config.kubernetes.io/")
SHARD_WEIGHT = 200  # about this many objects per share


@dataclass
class Layout:
    """One overlay's kustomization tree: its intents, its profile, and how much of kustomize it needs."""

    overlay: str  # overlays/<cluster>, relative to the root
    need: int = PASSIVE
    reason: str = ""  # what makes `need` what it is
    profile: str = ""  # its ClusterProfile file, relative to the root ("" when it does not run exactly one)
    intents: list[intents.Intent] = field(default_factory=list)  # in the order kustomize reads them
    listing: dict[str, str] = field(default_factory=dict)  # resource file -> the kustomization folder listing it
    others: list[str] = field(default_factory=list)  # resource files with objects other than intents
    local: bool = True  # every file it reads is under TREE_FOLDERS (a share can be copied)

    def files(self) -> list[str]:
        """The intent files, in the order kustomize reads them."""
        return list(dict.fromkeys(intent.file for intent in self.intents))

    def _needs(self, need: int, why: str) -> None:
        if need > self.need:
            self.need, self.reason = need, why


def read(root: Path, overlay: str) -> Layout:
    """The layout of `overlay` (overlays/<cluster>, relative to root)."""
    layout = Layout(overlay)
    _walk(root, overlay, layout, set(), top=True)
    if not layout.profile:
        layout._needs(OPAQUE, f"{overlay} does not run exactly one transformer, its ClusterProfile")
    return layout


def _walk(root: Path, folder: str, layout: Layout, seen: set[str], top: bool) -> None:
    if folder in seen:
        return
    seen.add(folder)
    _check_local(folder, layout)
    data = intents.read_kustomization(str(root / folder))
    if data is None:
        layout._needs(OPAQUE, f"{folder} has no kustomization tfjobgen can read")
        return
    for key in sorted(data):
        if key in _PASSIVE_FIELDS:
            continue
        if key == "transformers" and top:
            _read_profile(root, folder, data[key], layout)
        elif key in _PER_OBJECT_FIELDS:
            layout._needs(PER_OBJECT, f"{folder} sets {key}")
            for path in _patch_files(data[key], key):
                _check_local(os.path.normpath(os.path.join(folder, path)), layout)
        elif key in _BEFORE_FIELDS:
            layout._needs(BEFORE, f"{folder} sets {key}")
        else:
            layout._needs(OPAQUE, f"{folder} sets {key}")
    entries = data.get("resources") or []
    if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
        layout._needs(OPAQUE, f"{folder}: resources is not a list of paths")
        return
    for entry in entries:
        if intents.is_remote(entry):
            layout._needs(BEFORE, f"{folder} has the remote resource {entry}")
            layout.local = False
            continue
        path = os.path.normpath(os.path.join(folder, entry))
        if (root / path).is_dir():
            _walk(root, path, layout, seen, top=False)
        else:
            _read_resource(root, path, folder, layout)


def _check_local(path: str, layout: Layout) -> None:
    if path.startswith("..") or path.split("/")[0] not in TREE_FOLDERS:
        layout.local = False


def _read_profile(root: Path, folder: str, transformers, layout: Layout) -> None:
    if not (isinstance(transformers, list) and len(transformers) == 1 and isinstance(transformers[0], str)):
        return  # read() says why
    path = os.path.normpath(os.path.join(folder, transformers[0]))
    try:
        documents = source.parse_documents(source.read_text(str(root / path)), path)
    except InvalidInput:
        return
    if [intents.kind_of(d.data) for d in documents] == ["profile"] and not _acted_on(documents[0].data):
        layout.profile = path


def _read_resource(root: Path, path: str, folder: str, layout: Layout) -> None:
    _check_local(path, layout)
    layout.listing[path] = folder
    try:
        documents = source.parse_file(str(root / path), path)
    except InvalidInput:
        layout._needs(OPAQUE, f"{path} cannot be read")  # kustomize, building it whole, says why
        return
    found = [intents.Intent(d.data, path, d) for d in documents if intents.is_intent(d.data)]
    if len(found) != len(documents):
        layout.others.append(path)
        layout._needs(PER_OBJECT if not found else BEFORE, f"{path} holds objects other than TrainingJobs")
    if any(_acted_on(intent.data) for intent in found):
        layout._needs(PER_OBJECT, f"{path}: an intent carries an annotation kustomize acts on")
    layout.intents += found


def _acted_on(document: dict) -> bool:
    meta = document.get("metadata") if isinstance(document, dict) else None
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    return isinstance(annotations, dict) and any(str(k).startswith(_KUSTOMIZE_ANNOTATIONS) for k in annotations)


def _patch_files(value, key: str) -> list[str]:
    """The files a per-object field reads (patch files; inline patches read none)."""
    if key not in intents.PATCH_FIELDS or not isinstance(value, list):
        return []
    return [file for file in (intents.patch_source(key, entry)[0] for entry in value) if file]


# ---- shares ----------------------------------------------------------------------------------------

def weight(intent: intents.Intent) -> int:
    """About how many objects an intent becomes: a colocated job has one Job per task."""
    spec = intent.data.get("spec") if isinstance(intent.data, dict) else None
    spec = spec if isinstance(spec, dict) else {}
    roles = spec.get("roles") if isinstance(spec.get("roles"), dict) else {}
    topology = spec.get("topology") if isinstance(spec.get("topology"), dict) else {}
    if topology.get("mode") != "colocated":
        return 7
    replicas = [r.get("replicas", 1) for r in roles.values() if isinstance(r, dict)]
    return 3 + sum(n for n in replicas if isinstance(n, int))


def shares(layout: Layout, files: list[str], target: int = 0) -> list[list[str]]:
    """Intent files split into shares of about `target` objects (SHARD_WEIGHT), in kustomize's reading order."""
    target = target or SHARD_WEIGHT
    weights: dict[str, int] = {}
    for intent in layout.intents:
        weights[intent.file] = weights.get(intent.file, 0) + weight(intent)
    result: list[list[str]] = []
    current, total = [], 0
    for file in files:
        if current and total + weights.get(file, 0) > target:
            result.append(current)
            current, total = [], 0
        current.append(file)
        total += weights.get(file, 0)
    if current or not result:
        result.append(current)
    return result


def write_share(root: Path, layout: Layout, files: list[str], destination: Path, with_others: bool) -> Path:
    """A copy of the tree whose kustomizations list only `files` of the intent files; returns its overlay.

    Files are hard-linked where possible and never written to (a rewritten kustomization is a new
    file). Files with other objects stay only in the share `with_others`.
    """
    keep = set(files)
    drop = {i.file for i in layout.intents if i.file not in keep}
    if not with_others:
        drop |= set(layout.others)

    def ignore(folder: str, names: list[str]) -> set[str]:
        relative = Path(folder).relative_to(root).as_posix()
        return {n for n in names if n.startswith(".") or n == "__pycache__"
                or (n if relative == "." else f"{relative}/{n}") in drop}

    for name in TREE_FOLDERS:
        if (root / name).is_dir():
            shutil.copytree(root / name, destination / name, ignore=ignore, copy_function=_link_or_copy)
    for folder in sorted({layout.listing[f] for f in drop}):
        path = intents.kustomization_file(str(destination / folder))
        data = intents.read_kustomization(str(destination / folder))
        entries = [e for e in data.get("resources") or [] if os.path.normpath(os.path.join(folder, e)) not in drop]
        os.unlink(path)  # it may be a hard link to the repository's own file
        Path(path).write_text(emit.to_yaml([{**data, "resources": entries}]))
    return destination / layout.overlay


def _link_or_copy(src: str, dst: str) -> str:
    try:
        os.link(src, dst)
        return dst
    except OSError:
        return shutil.copy2(src, dst)

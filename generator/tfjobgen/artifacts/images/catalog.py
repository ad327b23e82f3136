"""The images `make images` builds: their names, tags and references (the one home of all three).

    RUNTIME   tfjobgen-runtime:<project version>   the pods' default image: Debian, TensorFlow, tfjobgen
    PLUGIN    tfjobgen-argocd-plugin:<version>     Argo CD's plugin sidecar (argocd/plugin/Dockerfile's recipe)
    PAUSE     registry.k8s.io/pause:3.10.1         containerd's sandbox image, one static binary
    ENTRY     tfjobgen-entry:<project version>     the entrypoint a team's own program runs under (cluster-tools'
                                                   entry, one static binary; its init container copies it)
    TEAM_FIXTURE  tfjobgen-team-fixture:<version>  a test fixture: Debian, python3, tensorflow-cpu and a training
                                                   script of a team's own (tests/nodes/team), nothing of tfjobgen
    PROMETHEUS  prometheus:v3.5.0                  cluster-tools' Prometheus, one static binary (cluster up --monitoring)
    RELOADER  prometheus-config-reloader:v0.85.0   the operator's config reloader, one static binary

`reference(name)` is what a container runtime calls the image: `ctr images import --base-name
repository(name)` gives it that name, and containerd's sandbox_image must equal PAUSE's exactly.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from ...shared import contract

REPO = Path(__file__).resolve().parents[4]
RUNTIME = contract.RUNTIME_IMAGE
PLUGIN = "tfjobgen-argocd-plugin"
PAUSE = "pause"
PAUSE_TAG = "3.10.1"  # the release Kubernetes 1.34 names as its sandbox image
ENTRY = "tfjobgen-entry"
TEAM_FIXTURE = "tfjobgen-team-fixture"
PROMETHEUS = "prometheus"
RELOADER = "prometheus-config-reloader"
# The build order: runtime, plugin and fixture share Debian's base layer; the others are one static binary each.
NAMES = (RUNTIME, PLUGIN, PAUSE, ENTRY, TEAM_FIXTURE, PROMETHEUS, RELOADER)
_REPOSITORIES = {PAUSE: "registry.k8s.io/pause"}  # ours are bare names: a platform pushes them where it likes
# What a local cluster's real nodes pull, and the path each has in the cluster's registry: the runtime under
# the path the repository's jobs name (jobs/wide-deep.yaml: registry.example.com/ml/tfjobgen-runtime), the
# sandbox image under registry.k8s.io's. containerd fetches every registry name the cluster maps from there.
# The entry image's path is the one the generator names (concerns/container.py: entry_image), and the fixture's the
# one tests/nodes' team jobs name.
FOR_NODES = {RUNTIME: "ml/tfjobgen-runtime", PAUSE: "pause", ENTRY: "ml/tfjobgen-entry",
             TEAM_FIXTURE: "ml/tfjobgen-team-fixture"}
# What `cluster up --monitoring` pushes besides: the names its Prometheus object and operator ask for.
FOR_MONITORING = {PROMETHEUS: "monitoring/prometheus", RELOADER: "monitoring/prometheus-config-reloader"}


def project_version() -> str:
    """The version in pyproject.toml: the tag of the images made of tfjobgen."""
    with open(REPO / "pyproject.toml", "rb") as handle:
        return tomllib.load(handle)["project"]["version"]


def tag(name: str) -> str:
    check(name)
    if name in (PROMETHEUS, RELOADER):  # the releases built: the Prometheus object's `version`, the reloader's tag
        from ..programs import family_of

        family = family_of(name)
        if name == PROMETHEUS:  # its module's v0.305.0 is Prometheus 3.5.0
            minor = int(family.version.split(".")[1])
            return f"v{minor // 100}.{minor % 100}.{family.version.split('.')[2]}"
        return family.version
    return PAUSE_TAG if name == PAUSE else project_version()


def repository(name: str) -> str:
    """The name without its tag (`ctr images import --base-name` takes this)."""
    check(name)
    return _REPOSITORIES.get(name, name)


def path_in_registry(name: str) -> str:
    """Where a real node finds the image under any registry name the cluster maps (FOR_NODES)."""
    check(name)
    return {**FOR_NODES, **FOR_MONITORING}[name]


def reference(name: str) -> str:
    """`repository:tag`, e.g. tfjobgen-runtime:0.1.0 or registry.k8s.io/pause:3.10.1."""
    return f"{repository(name)}:{tag(name)}"


class UnknownImage(ValueError):
    pass


def check(name: str) -> None:
    if name not in NAMES:
        raise UnknownImage(f"no image {name!r}: the images are {', '.join(NAMES)}")

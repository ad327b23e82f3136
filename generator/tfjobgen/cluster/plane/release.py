"""Which Kubernetes release a cluster's control plane runs, and the feature gates it turns on.

cluster-tools/versions.yaml names one default release (the `kubernetes` family) and others beside it
(`kubernetes-1.30`, `kubernetes-1.37`: `release_of: kubernetes`). `cluster up --kubernetes 1.30` picks
one; the profile's spec.kubernetesVersion is the oldest release its clusters run, so a cluster older
than that is refused rather than started to show what the profile's clusters never see.

Gates: a stock release, except where the profile asks for what the release has behind a gate. Kubernetes'
own gang scheduling (spec.gang.scheduler: kubernetes) is beta in 1.37 but off by default: the API server
serves scheduling.k8s.io/v1beta1 and keeps pods' spec.schedulingGroup only with GenericWorkload on, and
kube-scheduler adds its GangScheduling plugin only then. A PodGroup's topology constraint (colocated
groups kept by the scheduler, concerns/gang.py) needs TopologyAwareWorkloadScheduling as well, alpha.
The gang table (concerns/gang_schedulers.py) names each scheduler's gates.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...artifacts import programs
from ...concerns import gang_schedulers
from ...inputs.profile import ClusterProfile, release

# From 1.37 the API server refuses to publish a loopback address as the `kubernetes` Service's endpoint,
# and every component here listens on 127.0.0.1; nothing in a pod reaches the API server through that
# Service (KWOK pods run nothing, and real nodes run the default release).
LOOPBACK_REFUSED_SINCE = (1, 37)


# Kubernetes' version skew policy (since 1.28): a kubelet may be up to 3 minor releases older than its API server,
# never newer.
KUBELET_OLDER_BY_AT_MOST = 3


def kubelet_skew_problem(kubelet: str, api_server: str) -> str:
    """Why a kubelet of release `kubelet` may not join an API server of `api_server` ("" when it may), compared as
    numbers ("v1.9" is older than "v1.30"): the version skew policy's rule."""
    node, plane = release(kubelet), release(api_server)
    if node > plane:
        return (f"the nodes' kubelet is {kubelet}, newer than the API server ({api_server}); a kubelet may be as new "
                "as its API server, never newer (Kubernetes' version skew policy)")
    if node[0] != plane[0] or plane[1] - node[1] > KUBELET_OLDER_BY_AT_MOST:
        return (f"the nodes' kubelet is {kubelet}, more than {KUBELET_OLDER_BY_AT_MOST} minor releases older than the "
                f"API server ({api_server}), which Kubernetes' version skew policy does not allow")
    return ""


def require_built(chosen: "Release") -> None:
    """The release's control-plane programs are built, or programs.ToolsMissing naming the command that builds them
    (`tfjobgen cluster tools <family>`)."""
    for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler"):
        programs.program(name, chosen.version)


class ReleaseRefused(Exception):
    """One line: the release is unknown, or older than the profile's clusters."""


@dataclass(frozen=True)
class Release:
    """The control plane's programs of one release, with the gates and API versions turned on."""

    family: programs.Family
    feature_gates: tuple[str, ...] = ()  # "Name=true", for every control-plane program
    runtime_config: tuple[str, ...] = ()  # "group/version=true", for the API server

    @property
    def version(self) -> str:
        return self.family.version

    def program(self, name: str) -> str:
        return str(programs.program(name, self.family.version))

    def flags(self, api_server: bool = False) -> list[str]:
        flags = [f"--feature-gates={','.join(self.feature_gates)}"] if self.feature_gates else []
        if api_server and self.runtime_config:
            flags.append(f"--runtime-config={','.join(self.runtime_config)}")
        if api_server and release(self.version) >= LOOPBACK_REFUSED_SINCE:
            flags.append("--endpoint-reconciler-type=none")
        return flags


def choose(profile: ClusterProfile, requested: str) -> Release:
    """The release `cluster up --kubernetes requested` runs ("" for the default), with the gates the profile
    needs; ReleaseRefused when versions.yaml has no such release or the profile's clusters run a newer one.
    Whether it is built is require_built's: a flag's mistake is said before "not built"."""
    try:
        family = programs.family_of("kube-apiserver", requested)
    except KeyError as err:
        raise ReleaseRefused(f"--kubernetes {requested}: {err.args[0]}") from None
    if release(family.version) < release(profile.kubernetes_version):
        raise ReleaseRefused(
            f"the profile '{profile.name}' is for clusters running Kubernetes {profile.kubernetes_version} or newer "
            f"(spec.kubernetesVersion), and this cluster would run {family.version}: pass --kubernetes "
            f"{profile.kubernetes_version} (or a newer release of cluster-tools/versions.yaml)")
    gang = gang_schedulers.of(profile)  # the gates and APIs its gang scheduler needs (none for most)
    gates = gang.feature_gates + (gang.groups_feature_gates if profile.gang.colocated_groups == "scheduler" else ())
    return Release(family, gates, gang.apis)


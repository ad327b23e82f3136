"""The gang schedulers as measurements set them in a profile: one home for each one's spec.gang and
the Kubernetes release it needs, so the gang table, the conformance cells and the benchmarks that
compare gang schedulers all measure the same settings."""

from __future__ import annotations

import copy
from dataclasses import dataclass

from ..inputs.profile import WORKLOAD_API_SINCE


@dataclass(frozen=True)
class Gang:
    """A profile's spec.gang, and the Kubernetes release a cluster needs for it."""

    settings: dict
    kubernetes: str = ""  # "" for the default release

    def with_settings(self, **more) -> Gang:
        """The same gang with `more` spec.gang fields (colocatedGroups, scheduleTimeoutSeconds)."""
        return Gang({**self.settings, **more}, self.kubernetes)

    def given_to(self, profile: dict) -> dict:
        """A copy of `profile` (a ClusterProfile document) with this spec.gang, and with
        spec.kubernetesVersion when the gang needs a release of its own."""
        profile = copy.deepcopy(profile)
        profile["spec"]["gang"] = dict(self.settings)
        if self.kubernetes:
            profile["spec"]["kubernetesVersion"] = self.kubernetes
        return profile


SCHEDULERS = {
    "volcano": Gang({"scheduler": "volcano"}),
    # Not the default schedulerName: that the profile's name reaches the pods and the second
    # scheduler is part of what a run checks.
    "scheduler-plugins": Gang({"scheduler": "scheduler-plugins", "schedulerName": "coscheduler"}),
    "kueue": Gang({"scheduler": "kueue", "queue": "training"}),
    "kubernetes": Gang({"scheduler": "kubernetes"}, WORKLOAD_API_SINCE),  # the Workload API's first release
}
NONE = "none"  # no gang: every pod scheduled on its own


def release_for(name: str) -> str:
    """The Kubernetes release a gang setting (NONE or a key of SCHEDULERS) needs; "" for the default."""
    return "" if name == NONE else SCHEDULERS[name].kubernetes

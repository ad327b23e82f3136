"""The gang settings every measurement shares (tfjobgen/harness/gangs.py) are profiles tfjobgen accepts."""

from __future__ import annotations

import pytest
import yaml
from conftest import SAMPLE

from tfjobgen.harness import gangs
from tfjobgen.expand import pipeline

SEED = SAMPLE / "overlays" / "seed-80c" / "cluster-profile.yaml"


def _errors(document: dict) -> list[str]:
    profile = pipeline.profile_from(document)
    return [p.format() for check in pipeline.PROFILE_CHECKS for p in check(profile) if p.is_error]


# Each gang scheduler, and the two that can keep a colocated group on one server themselves doing so.
CASES = [(name, {}) for name in sorted(gangs.SCHEDULERS)] + [
    (name, {"colocatedGroups": "scheduler"}) for name in ("kubernetes", "volcano")]


@pytest.mark.parametrize("name, more", CASES)
def test_each_gang_scheduler_as_measured_is_a_profile_tfjobgen_accepts(name, more):
    seed = yaml.safe_load(SEED.read_text())
    document = gangs.SCHEDULERS[name].with_settings(**more).given_to(seed)
    assert _errors(document) == []
    assert pipeline.profile_from(document).gang.scheduler == name
    assert "gang" not in seed["spec"], "given_to changes a copy, not the profile it is given"


def test_the_release_a_gang_needs_is_what_makes_its_profile_valid():
    """Kubernetes' own gang on the default release is refused: that is why a Gang carries its release."""
    gang = gangs.SCHEDULERS["kubernetes"]
    assert gangs.release_for("kubernetes") == gang.kubernetes != ""
    without_release = gangs.Gang(gang.settings).given_to(yaml.safe_load(SEED.read_text()))
    assert any("spec.gang.scheduler" in e or "kubernetesVersion" in e for e in _errors(without_release))
    assert gangs.release_for(gangs.NONE) == ""

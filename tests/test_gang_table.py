"""The gang table (tfjobgen/concerns/gang_schedulers.py) is what the rest of the package reads of a gang
scheduler: its rows are spec.gang.scheduler's values, and what a row says is what a profile gets."""

from __future__ import annotations

import importlib

import pytest

from tfjobgen.concerns.gang_schedulers import SCHEDULERS
from tfjobgen.expand import pipeline
from tfjobgen.inputs import schema
from tfjobgen.inputs.profile import OLDEST_KUBERNETES


def profile(name: str, version: str = "", **gang) -> pipeline.ClusterProfile:
    row = SCHEDULERS[name]
    spec = {"gang": {"scheduler": name, **({"queue": "team-a"} if row.queue_required else {}), **gang}}
    if version or row.release:
        spec["kubernetesVersion"] = version or row.release.since
    return pipeline.profile_from({"apiVersion": "tfjobgen.dev/v1alpha1", "kind": "ClusterProfile",
                                  "metadata": {"name": "test"}, "spec": spec})


def errors(chosen: pipeline.ClusterProfile) -> list[str]:
    return [p.format() for p in pipeline.check_profile(chosen) if p.is_error]


def test_the_rows_are_the_values_of_spec_gang_scheduler():
    enum = schema.load(schema.CLUSTER_PROFILE)["properties"]["spec"]["properties"]["gang"]["properties"]["scheduler"]["enum"]
    assert list(SCHEDULERS) == enum


@pytest.mark.parametrize("name", SCHEDULERS)
def test_a_cluster_starts_the_controllers_its_row_names_and_no_other_gang_schedulers(name):
    named = {module for row in SCHEDULERS.values() for module in row.controllers}
    for module in sorted(named):
        controller = importlib.import_module(f"tfjobgen.cluster.controllers.{module}")
        assert controller.wanted(profile(name)) == (module in SCHEDULERS[name].controllers), (name, module)


@pytest.mark.parametrize("name", [name for name, row in SCHEDULERS.items() if row.release])
def test_a_row_that_needs_a_release_is_refused_on_an_older_one(name):
    assert errors(profile(name)) == []
    (refusal,) = errors(profile(name, OLDEST_KUBERNETES))
    assert "spec.gang.scheduler" in refusal and SCHEDULERS[name].release.since in refusal


@pytest.mark.parametrize("name", SCHEDULERS)
def test_colocated_groups_by_the_scheduler_are_refused_where_its_row_does_not_keep_groups(name):
    found = errors(profile(name, colocatedGroups="scheduler"))
    if SCHEDULERS[name].keeps_groups:
        assert found == []
    else:
        (refusal,) = found
        assert SCHEDULERS[name].no_groups_because in refusal and "spec.gang.colocatedGroups" in refusal


@pytest.mark.parametrize("name", SCHEDULERS)
def test_a_row_that_needs_a_queue_refuses_a_profile_without_one(name):
    found = errors(profile(name, queue=""))
    assert bool(found) == SCHEDULERS[name].queue_required, found


"""Placement rules, checked by what the real kube-scheduler does with them, one rule at a time.

The seed labelled nodes by hand (SCENCE/CASE/INDEX) to get its layouts; here servers carry no
label but their hostname, and the layouts must come from the generated rules alone. One cluster
serves the module; each test gives it the servers it needs (cluster_support.reshape) and creates
the objects in a shuffled order. Negative controls strip a rule and show the layout break.
The arrival-order, node-loss and shared-cluster figures are in test_guarantees.py.
"""

from __future__ import annotations

import copy

import pytest
from cluster_support import layout, local_cluster, node_leases, node_objects, pending, place_objects, reshape
from conftest import JOBS, render

from jobs import job_yaml, write_job
from tfjobgen.concerns import capacity, labels, promises


# Each test gives the cluster the servers it needs: its tests may go to any process, each process
# reshaping a cluster of its own (--dist loadgroup; tests/conftest.py), not one after another in one.
pytestmark = pytest.mark.any_process


@pytest.fixture(scope="module")
def cluster():
    with local_cluster(None, 1) as running:
        yield running


REQUIRED = {"mode": "spread", "spread": "required"}


def _of_role(objects: list[dict], *roles: str) -> list[dict]:
    """The objects that carry pods of `roles`, and everything that carries no pods (Services, ConfigMaps)."""
    def role(obj: dict) -> str | None:
        return ((obj.get("spec") or {}).get("template") or {}).get("metadata", {}).get("labels", {}).get(labels.ROLE)
    return [o for o in objects if role(o) is None or role(o) in roles]


def _without(objects: list[dict], *fields: str) -> list[dict]:
    """The same objects with `fields` removed from every pod template (a negative control)."""
    objects = copy.deepcopy(objects)
    for obj in objects:
        template = (obj.get("spec") or {}).get("template")
        if template:
            for name in fields:
                template["spec"].pop(name, None)
    return objects


def _groups_intact(placed: dict) -> bool:
    """Every server with PS i runs exactly workers 10i..10i+9 beside it."""
    for tasks in placed.values():
        ps = [index for role, index in tasks if role == "ps"]
        workers = [index for role, index in tasks if role == "worker"]
        if len(ps) != 1 or workers != list(range(10 * ps[0], 10 * ps[0] + 10)):
            return False
    return True


# ---- the servers -----------------------------------------------------------------------------------

def test_servers_made_again_under_their_old_names_start_their_pods_at_once(cluster):
    """What reshape promises every scenario here: a pod bound to a new server starts (KWOK's Running),
    even when a removed server of the same name had a lease the garbage collector was still to remove.
    Without reshape's wait for those leases, the new servers' pods waited 10 s (a lease renewal)."""
    reshape(cluster, node_objects(2))
    cluster.wait(lambda: all(lease["metadata"].get("ownerReferences") for lease in node_leases(cluster.objects)),
                 "the servers' leases owned by them")
    reshape(cluster, node_objects(5))
    objects = _of_role(render(JOBS / "scene1-case2.yaml"), "ps")
    namespace = place_objects(cluster, objects)[0]["metadata"]["namespace"]
    cluster.wait(lambda: {p["status"].get("phase") for p in cluster.pods(namespace)} == {"Running"},
                 "every PS Running", timeout=5)


# ---- colocated ----------------------------------------------------------------------------------

def test_colocated_groups_come_from_the_rules_and_break_without_them(cluster):
    reshape(cluster, node_objects(5))
    objects = render(JOBS / "scene1-case2.yaml")
    assert _groups_intact(layout(place_objects(cluster, objects, seed=1)))
    reshape(cluster, node_objects(5))
    stripped = _without(objects, "affinity", "topologySpreadConstraints")
    assert not _groups_intact(layout(place_objects(cluster, stripped, seed=1))), \
        "negative control: the default scheduler spreads the pods by load"


def test_colocated_ps_never_share_a_server_even_with_room(cluster):
    reshape(cluster, node_objects(5, cpu=1000, memory="4Ti"))  # room for all 5 PS on one server
    placed = layout(place_objects(cluster, _of_role(render(JOBS / "scene1-case2.yaml"), "ps")))
    assert len(placed) == 5 and all(len(tasks) == 1 for tasks in placed.values())


def test_a_colocated_ps_keeps_its_server_for_its_group(cluster, tmp_path):
    """Once PS g is placed, no pod of another tfjobgen job may join its server (in any namespace)."""
    reshape(cluster, node_objects(1, cpu=1000, memory="16Ti"))
    place_objects(cluster, _of_role(render(JOBS / "scene1-case1.yaml"), "ps"))
    other_job = write_job(tmp_path, job_yaml("other", ps=4, workers=8, topology="spread"))
    other = place_objects(cluster, render(other_job))
    assert len(pending(other)) == 13, "plenty of room, but the PS's rule keeps them off"


def test_a_colocated_ps_waits_for_a_server_free_of_other_jobs(cluster, tmp_path):
    reshape(cluster, node_objects(1, cpu=1000, memory="16Ti"))
    other_job = write_job(tmp_path, job_yaml("other", ps=1, workers=8, topology="none"))
    place_objects(cluster, _of_role(render(other_job), "ps"))
    colocated = place_objects(cluster, _of_role(render(JOBS / "scene1-case1.yaml"), "ps"))
    assert pending(colocated) == [("ps", 0)]


def test_a_replaced_colocated_ps_goes_back_to_its_group(cluster):
    """With a spare server, an evicted PS returns to its workers; with the system default spreading it does not."""
    objects = render(JOBS / "scene1-case2.yaml")
    for variant, returns in ((objects, True), (_without(objects, "topologySpreadConstraints"), False)):
        reshape(cluster, node_objects(6))
        placed = layout(place_objects(cluster, variant, seed=2))
        assert _groups_intact(placed)
        namespace = variant[0]["metadata"]["namespace"]
        ps = next(p for p in cluster.pods(namespace, f"{labels.ROLE}=ps") if p["spec"].get("nodeName"))
        cluster.evict_pod(namespace, ps["metadata"]["name"])
        cluster.wait(lambda: _ps_back(cluster, namespace, ps["metadata"]["name"]), "the PS replaced and bound")
        after = layout(promises.live(cluster.pods(namespace)))
        assert _groups_intact(after) is returns, after


def _ps_back(cluster, namespace: str, evicted: str) -> bool:
    ps = [p for p in cluster.pods(namespace, f"{labels.ROLE}=ps") if p["status"].get("phase") == "Running"
          and not p["metadata"].get("deletionTimestamp")]
    return len(ps) == 5 and evicted not in {p["metadata"]["name"] for p in ps}


# ---- isolated ------------------------------------------------------------------------------------

def test_seed_scene2_ps_and_workers_never_share_a_server_and_workers_pack(cluster):
    reshape(cluster, node_objects(10))  # the seed's servers: 5 for PS, 5 for 50 workers
    placed = layout(place_objects(cluster, render(JOBS / "scene2-case2.yaml"), seed=3))
    ps_servers = [t for t in placed.values() if any(role == "ps" for role, _ in t)]
    worker_servers = [t for t in placed.values() if any(role == "worker" for role, _ in t)]
    assert len(ps_servers) == 5 and all(len(t) == 1 for t in ps_servers), "one PS per server, alone"
    assert sorted(len(t) for t in worker_servers) == [10] * 5


def test_isolated_workers_pack_onto_as_few_servers_as_fit(cluster):
    reshape(cluster, node_objects(25))
    placed = layout(place_objects(cluster, _of_role(render(JOBS / "scene2-case2.yaml"), "worker"), seed=4))
    assert sorted(len(t) for t in placed.values()) == [10] * 5


def test_isolated_leaves_pods_pending_rather_than_mixing(cluster):
    """With too few servers, isolation holds and the surplus waits (a rule, not a wish)."""
    reshape(cluster, node_objects(5, cpu=1000, memory="4Ti"))  # room for everything, but 5 PS take all 5 servers
    objects = render(JOBS / "scene2-case2.yaml")
    place_objects(cluster, _of_role(objects, "ps"))
    pods = place_objects(cluster, _of_role(objects, "worker"))  # the namespace's pods: PS and workers
    assert pending(pods) == [("worker", i) for i in range(50)]
    assert sorted(layout(pods).values()) == [[("ps", i)] for i in range(5)]


# ---- spread ----------------------------------------------------------------------------------------

def test_spread_preferred_still_schedules_when_servers_are_scarce_but_required_waits(cluster, tmp_path):
    reshape(cluster, node_objects(2, cpu=1000, memory="4Ti"))
    spread = write_job(tmp_path, job_yaml("spread", namespace="p", ps=4, workers=8, topology="spread"))
    preferred = place_objects(cluster, _of_role(render(spread), "ps"))
    assert pending(preferred) == []
    spread = write_job(tmp_path, job_yaml("required", namespace="r", ps=4, workers=8, topology=REQUIRED))
    required = place_objects(cluster, _of_role(render(spread), "ps"))
    assert len(pending(required)) == 2


def test_spread_repels_ps_from_ps_not_from_other_roles(cluster, tmp_path):
    """The seed's snippet used `NotIn [ps]`, which repels PS from workers; the intent is `In [ps]`."""
    reshape(cluster, node_objects(2, cpu=1000, memory="4Ti"))
    pods = place_objects(cluster, render(write_job(tmp_path, job_yaml("spread", ps=2, workers=8, topology=REQUIRED))))
    assert pending(pods) == []
    servers = layout(pods).values()
    assert all(sum(role == "ps" for role, _ in t) == 1 for t in servers)
    assert any(any(r == "worker" for r, _ in t) and any(r == "ps" for r, _ in t) for t in servers), \
        "workers may share a server with a PS under spread"


# ---- capacity: what `tfjobgen plan` says a job needs is what the scheduler needs -------------------

@pytest.mark.parametrize("scene, case, servers", [(1, 2, 5), (2, 2, 10)])
def test_the_nodes_plan_counts_are_the_nodes_the_scheduler_needs(cluster, scene, case, servers):
    from tfjobgen.expand import pipeline

    path = JOBS / f"scene{scene}-case{case}.yaml"
    intents, _ = pipeline.load_intents([str(path)])
    job, _ = pipeline.validate(intents[0], pipeline.load_profile(None))
    assert capacity.capacity(job, pipeline.load_profile(None)).own.nodes == {capacity.NO_POOL: servers}
    reshape(cluster, node_objects(servers))
    assert pending(place_objects(cluster, render(path), seed=5)) == []
    reshape(cluster, node_objects(servers - 1))
    waiting = pending(place_objects(cluster, render(path), seed=5))
    counted = pipeline.profile_from({"apiVersion": "tfjobgen.dev/v1alpha1", "kind": "ClusterProfile",
                                     "metadata": {"name": "counted"}, "spec": {"nodeCount": servers - 1}})
    predicted = capacity.capacity(job, counted).own.pending
    assert waiting and predicted, "one server fewer than plan counts leaves some of the job waiting"
    # Which role waits depends on the order the Job controllers' pods reach the scheduler, and so how many
    # do: a PS left waiting frees its server for ten workers (seen under load: PS 3 waiting instead of
    # workers 40-49). When the role plan names is the one left waiting, the count is plan's.
    if {role for role, _ in waiting} == {p.role for p in predicted}:
        assert len(waiting) == sum(len(p.indexes) for p in predicted), (waiting, predicted)

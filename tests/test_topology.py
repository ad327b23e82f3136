"""Placement rules checked by what they do: pods scheduled onto simulated servers.

The seed labelled nodes by hand (SCENCE/CASE/INDEX) to get its layouts; here
servers carry no labels but their hostname, and the layouts must emerge from
the generated affinity rules alone.
"""

from __future__ import annotations

import copy

import pytest

import scheduling
from conftest import JOBS, render
from tfjobgen import backends, pods as podlib


def _pods(*paths, profile=None):
    return backends.pods_of(render(*paths, profile=profile))


def _groups_intact(cluster) -> bool:
    """True when every server with a PS i runs exactly workers 10i..10i+9 beside it."""
    for placed in scheduling.layout(cluster).values():
        ps = [index for role, index in placed if role == "ps"]
        workers = [index for role, index in placed if role == "worker"]
        if len(ps) != 1 or workers != list(range(10 * ps[0], 10 * ps[0] + 10)):
            return False
    return True


@pytest.mark.parametrize("case, servers", [(1, 1), (2, 5), (3, 10), (4, 20)])
def test_seed_scene1_each_server_runs_one_ps_beside_its_ten_workers(case, servers):
    pods = _pods(JOBS / f"scene1-case{case}.yaml")
    cluster = scheduling.nodes(servers)  # exactly the seed's server count, 80 cores / 256 GiB each
    assert scheduling.schedule(pods, cluster) == []
    assert len(scheduling.layout(cluster)) == servers
    assert _groups_intact(cluster), "PS i must share its server with workers 10i..10i+9, and nothing else"


def test_colocated_layout_fails_without_the_generated_rules():
    """Negative control: strip the affinity and the same check no longer holds (the test can fail)."""
    pods = _pods(JOBS / "scene1-case2.yaml")
    cluster = scheduling.nodes(5)
    assert scheduling.schedule(copy.deepcopy(pods), cluster) == [] and _groups_intact(cluster)
    for pod in pods:
        pod.spec.pop("affinity", None)
    cluster = scheduling.nodes(5)
    assert scheduling.schedule(pods, cluster) == []
    assert not _groups_intact(cluster)


def test_colocated_ps_never_share_a_server_even_with_room():
    pods = [p for p in _pods(JOBS / "scene1-case2.yaml") if p.role == "ps"]
    cluster = scheduling.nodes(5, cpu="1000", memory="4Ti")  # room for all 5 PS on one server
    assert scheduling.schedule(pods, cluster) == []
    assert all(len(placed) == 1 for placed in scheduling.layout(cluster).values())


@pytest.mark.parametrize("case, ps, workers", [(1, 1, 10), (2, 5, 50), (3, 10, 100), (4, 20, 200)])
def test_seed_scene2_ps_and_workers_never_share_a_server(case, ps, workers):
    pods = _pods(JOBS / f"scene2-case{case}.yaml")
    cluster = scheduling.nodes(ps + workers // 10)  # the seed's 2, 10, 20 and 40 servers
    assert scheduling.schedule(pods, cluster) == []
    layout = scheduling.layout(cluster)
    ps_servers = [placed for placed in layout.values() if any(r == "ps" for r, _ in placed)]
    worker_servers = [placed for placed in layout.values() if any(r == "worker" for r, _ in placed)]
    assert len(ps_servers) == ps and all(len(placed) == 1 for placed in ps_servers), "one PS per server, alone"
    assert len(worker_servers) == workers // 10 and all(len(placed) == 10 for placed in worker_servers)


def test_isolated_leaves_pods_pending_rather_than_mixing():
    """With too few servers, isolation holds and the surplus waits (it is a rule, not a wish)."""
    pods = _pods(JOBS / "scene2-case2.yaml")
    cluster = scheduling.nodes(5, cpu="1000", memory="4Ti")  # room for everything, but 5 PS take all 5 servers
    pending = scheduling.schedule(pods, cluster)
    assert sorted({p.role for p in pending}) == ["worker"] and len(pending) == 50
    assert all(placed == [("ps", i)] for i, placed in enumerate(scheduling.layout(cluster).values()))


def _job(tmp_path, topology: str, ps: int = 4) -> str:
    path = tmp_path / "spread.yaml"
    path.write_text(f"""apiVersion: tfjobgen.dev/v1alpha1
kind: TrainingJob
metadata: {{name: spread, namespace: t}}
spec:
  image: x/y:1
  roles:
    ps: {{replicas: {ps}, cpu: 4, memory: 8Gi}}
    worker: {{replicas: 8, cpu: 2, memory: 4Gi}}
    chief: {{cpu: 1, memory: 1Gi}}
  topology: {topology}
""")
    return str(path)


def _uneven_cluster():
    """Four servers, three of them half full: a least-allocated scheduler alone would stack on the empty one."""
    cluster = scheduling.nodes(4, cpu="100", memory="1Ti")
    for node in cluster[1:]:
        node.pods.append(podlib.Pod("other", "t", "filler", "", {"app": "other"}, {}, {"containers": [
            {"resources": {"requests": {"cpu": "50", "memory": "512Gi"}}}]}))
    return cluster


def test_spread_puts_each_ps_on_its_own_server_when_there_are_enough(tmp_path):
    pods = [p for p in _pods(_job(tmp_path, "{mode: spread}")) if p.role == "ps"]
    cluster = _uneven_cluster()
    assert scheduling.schedule(copy.deepcopy(pods), cluster) == []
    assert all(sum(role == "ps" for role, _ in placed) == 1 for placed in scheduling.layout(cluster).values())
    for pod in pods:  # negative control: without the rule all four PS pile onto the empty server
        pod.spec.pop("affinity")
    cluster = _uneven_cluster()
    scheduling.schedule(pods, cluster)
    assert len(cluster[0].pods) == 4


def test_spread_preferred_still_schedules_when_servers_are_scarce_but_required_waits(tmp_path):
    preferred = [p for p in _pods(_job(tmp_path, "{mode: spread}")) if p.role == "ps"]
    cluster = scheduling.nodes(2, cpu="1000", memory="4Ti")
    assert scheduling.schedule(preferred, cluster) == []
    required = [p for p in _pods(_job(tmp_path, "{mode: spread, spread: required}")) if p.role == "ps"]
    cluster = scheduling.nodes(2, cpu="1000", memory="4Ti")
    assert len(scheduling.schedule(required, cluster)) == 2


def test_spread_repels_ps_from_ps_not_from_other_roles(tmp_path):
    """The seed's snippet used `NotIn [ps]`, which repels PS from workers; the intent is `In [ps]`."""
    pods = _pods(_job(tmp_path, "{mode: spread, spread: required}", ps=2))
    cluster = scheduling.nodes(2, cpu="1000", memory="4Ti")
    assert scheduling.schedule(pods, cluster) == []
    servers = scheduling.layout(cluster).values()
    assert all(sum(role == "ps" for role, _ in placed) == 1 for placed in servers)
    assert any(sum(role == "worker" for role, _ in placed) > 0 and any(r == "ps" for r, _ in placed)
               for placed in servers), "workers may share a server with a PS under spread"


def test_node_pools_send_each_role_to_its_pool(tmp_path):
    profile = tmp_path / "profile.yaml"
    profile.write_text("""apiVersion: tfjobgen.dev/v1alpha1
kind: ClusterProfile
metadata: {name: pools}
spec:
  nodePools:
    ps-pool: {nodeSelector: {pool: ps}, tolerations: [{key: dedicated, operator: Equal, value: ps, effect: NoSchedule}]}
    worker-pool: {nodeSelector: {pool: workers}}
""")
    pods = _pods(_job(tmp_path, "{mode: isolated, nodePools: {ps: ps-pool, worker: worker-pool}}"), profile=profile)
    cluster = (scheduling.nodes(4, prefix="ps", labels={"pool": "ps"},
                                taints=[{"key": "dedicated", "value": "ps", "effect": "NoSchedule"}])
               + scheduling.nodes(4, prefix="wk", labels={"pool": "workers"}) + scheduling.nodes(2, prefix="any"))
    assert scheduling.schedule(pods, cluster) == []
    where = {(p.role, p.index): n.name for n in cluster for p in n.pods}
    assert all(where[("ps", i)].startswith("ps-") for i in range(4))
    assert all(where[("worker", i)].startswith("wk-") for i in range(8))
    assert not where[("chief", 0)].startswith("ps-"), "the chief has no toleration for the PS pool's taint"

"""concerns/promises.py on hand-made bindings: what breaks a colocated promise, and what only shares it.

The cluster tier holds the same verdicts to the real scheduler's bindings (tests/cluster/test_guarantees.py);
here each case is one server layout, so a wrong rule shows which layout it misjudges.
"""

from __future__ import annotations

from tfjobgen.concerns import labels, promises


def pod(job: str, role: str, index: int, node: str, group: str = "", topology: str = "colocated") -> dict:
    pod_labels = {labels.JOB: job, labels.ROLE: role, labels.INDEX: str(index)}
    if group:
        pod_labels[labels.GROUP] = group
    return {"metadata": {"name": f"{job}-{role}-{index}", "namespace": "team", "labels": pod_labels,
                         "annotations": {labels.TOPOLOGY: topology}},
            "spec": {"nodeName": node}, "status": {"phase": "Running"}}


def colocated(node_of_worker: dict[int, str]) -> list[dict]:
    """Job `a`: PS 0 on node-0 with workers 0-1 (group 0), PS 1 on node-1 with workers 2-3 (group 1)."""
    pods = [pod("a", "ps", 0, "node-0", "0"), pod("a", "ps", 1, "node-1", "1")]
    return pods + [pod("a", "worker", w, node, str(w // 2)) for w, node in node_of_worker.items()]


def test_groups_whole_and_alone_hold():
    verdict = promises.verdicts(colocated({0: "node-0", 1: "node-0", 2: "node-1", 3: "node-1"}), 2)["team/a"]
    assert verdict.holds and verdict.whole and verdict.placed == verdict.tasks == 6


def test_another_jobs_pod_beside_a_whole_group_breaks_the_promise_but_leaves_it_whole():
    pods = colocated({0: "node-0", 1: "node-0", 2: "node-1", 3: "node-1"})
    pods.append(pod("b", "worker", 0, "node-1", topology="spread"))
    verdict = promises.verdicts(pods, 2)["team/a"]
    assert not verdict.holds and verdict.whole
    assert verdict.beside == verdict.broken == ["node-1 holds PS 1's group and other jobs' b/worker [0]"]


def test_a_worker_away_from_its_group_breaks_the_group():
    pods = colocated({0: "node-0", 1: "node-1", 2: "node-1", 3: "node-1"})  # worker 1 is group 0's
    pods.append(pod("b", "worker", 0, "node-0", topology="spread"))
    verdict = promises.verdicts(pods, 2)["team/a"]
    assert not verdict.holds and not verdict.whole
    assert verdict.broken == ["node-1 holds a/ps [1], a/worker [1, 2, 3]",
                              "node-0 holds PS 0's group and other jobs' b/worker [0]"]
    assert verdict.beside == verdict.broken[1:]


def test_a_pending_pod_breaks_nothing_and_is_counted_apart():
    pods = colocated({0: "node-0", 1: "node-0", 2: "node-1", 3: ""})
    verdict = promises.verdicts(pods, 2)["team/a"]
    assert verdict.holds and verdict.whole and (verdict.placed, verdict.tasks) == (5, 6)

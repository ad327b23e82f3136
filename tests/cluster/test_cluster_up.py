"""`tfjobgen cluster up` and `down` as a user runs them: a cluster shaped as the profile, and nothing left after."""

from __future__ import annotations

import signal
import subprocess
import time

import pytest

from cluster_support import (
    SESSION_HOME,
    UP_DEADLINE,
    cluster_env,
    leftovers,
    local_cluster,
    need_cluster_tools,
    signals_as_a_terminal_gives_them,
    tfjobgen,
)
from conftest import REPO, SAMPLE, tfjobgen_command

from tfjobgen.cluster import home, processes
from tfjobgen.artifacts import programs

PROD = SAMPLE / "overlays" / "prod-96c" / "cluster-profile.yaml"
SEED = SAMPLE / "overlays" / "seed-80c" / "cluster-profile.yaml"


def test_nodes_are_shaped_as_the_profile_says():
    with local_cluster(PROD, 2) as cluster:
        nodes = {n["metadata"]["name"]: n for n in cluster.objects.list("v1", "Node")}
        # 2 in the main group and in each pool the profile does not count; gpu-a100 says 4.
        groups = sorted({n["metadata"]["labels"]["tfjobgen.dev/node-group"] for n in nodes.values()})
        assert groups == ["cpu-workers", "gpu-a100", "node", "ps-highmem"]
        assert sum(n["metadata"]["labels"]["tfjobgen.dev/node-group"] == "gpu-a100" for n in nodes.values()) == 4
        ps = nodes["ps-highmem-000"]
        assert ps["status"]["allocatable"]["cpu"] == "63" and ps["status"]["capacity"]["cpu"] == "64"  # reservedCpus: 1
        assert ps["status"]["allocatable"]["memory"] == str(512 << 30)
        assert ps["metadata"]["labels"]["pool"] == "ps-highmem"
        assert ps["metadata"]["labels"]["cpu-manager-policy"] == "static"
        assert ps["spec"]["taints"] == [{"key": "dedicated", "value": "parameter-servers", "effect": "NoSchedule"}]
        assert nodes["gpu-a100-003"]["status"]["allocatable"]["nvidia.com/gpu"] == "8"
        assert nodes["node-001"]["status"]["allocatable"]["cpu"] == "95"
        assert all(any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"]["conditions"])
                   for n in nodes.values())
        classes = {c["metadata"]["name"]: c for c in cluster.objects.list("scheduling.k8s.io/v1", "PriorityClass")}
        assert classes["tfjobgen-ps"]["value"] == 2000 and classes["tfjobgen-ps"]["preemptionPolicy"] == "PreemptLowerPriority"
        assert classes["tfjobgen-worker"]["value"] == 1000 and classes["tfjobgen-worker"]["preemptionPolicy"] == "Never"
        version = cluster.kubectl("version", "-o", "json").stdout
        stamped = programs.family_of("kube-apiserver").version
        assert f'"gitVersion": "{stamped}"' in version  # stamped: controllers that parse it (Kueue) can
    assert not (SESSION_HOME / cluster.name).exists(), "down removes the cluster's files"


def test_a_second_cluster_of_the_same_name_is_refused_and_two_names_share_the_machine():
    with local_cluster(SEED, 1) as first:
        again = tfjobgen("cluster", "up", "--name", first.name, "--nodes", "1")
        assert again.returncode == 1
        assert again.stderr.strip().splitlines() == [
            f"tfjobgen cluster up: a cluster named '{first.name}' is already running "
            f"(tfjobgen cluster down --name {first.name} stops it)"]
        with local_cluster(SEED, 1) as second:
            assert second.state()["api_port"] != first.state()["api_port"]
            assert len(second.objects.list("v1", "Node")) == 1
        assert len(first.objects.list("v1", "Node")) == 1, "the first cluster outlives the second"


def test_missing_programs_are_named_with_the_command_that_builds_them(tmp_path):
    proc = tfjobgen("cluster", "up", "--name", "nothing-built", "--nodes", "1",
                    env={"TFJOBGEN_TOOLS_CACHE": str(tmp_path / "empty")})
    assert proc.returncode == 1
    assert proc.stderr.startswith("tfjobgen cluster up: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, "
                                  "kwok not built: run `make cluster-tools`")
    assert "Traceback" not in proc.stderr and not (SESSION_HOME / "nothing-built").exists()


def test_a_profile_the_cluster_cannot_be_shaped_from_gets_one_line(tmp_path):
    need_cluster_tools()
    counted_nowhere = tfjobgen("cluster", "up", "--name", "uncounted", "--profile", str(PROD))
    assert counted_nowhere.returncode == 1
    assert counted_nowhere.stderr.strip().splitlines() == [
        f"{PROD}:7: spec: the profile does not say how many nodes the cluster has: set nodeCount there, "
        "or pass --nodes N"]
    broken = tmp_path / "profile.yaml"
    broken.write_text("apiVersion: tfjobgen.dev/v1alpha1\nkind: ClusterProfile\nmetadata: {name: x}\n"
                      "spec:\n  nodeCount: 0\n")
    invalid = tfjobgen("cluster", "up", "--name", "invalid", "--profile", str(broken))
    assert invalid.returncode == 1 and "profile.yaml:5: spec.nodeCount" in invalid.stderr
    for proc in (counted_nowhere, invalid):
        assert "Traceback" not in proc.stderr
    assert not (SESSION_HOME / "uncounted").exists() and not (SESSION_HOME / "invalid").exists()


def test_a_kubernetes_release_it_does_not_have_or_older_than_the_profile_gets_one_line():
    need_cluster_tools()
    unknown = tfjobgen("cluster", "up", "--name", "unknown-release", "--nodes", "1", "--kubernetes", "1.29")
    have = ", ".join(sorted(f.version for f in programs.releases("kube-apiserver")))
    assert unknown.returncode == 1
    assert unknown.stderr.strip().splitlines() == [
        f"tfjobgen cluster up: --kubernetes 1.29: versions.yaml has no release 1.29 of kube-apiserver (it has {have})"]
    gang = REPO / "tests" / "cluster" / "profiles" / "gang-kubernetes.yaml"
    older = tfjobgen("cluster", "up", "--name", "older-release", "--nodes", "1", "--profile", str(gang))
    default = programs.family_of("kube-apiserver").version
    assert older.returncode == 1
    assert older.stderr.strip().splitlines() == [
        "tfjobgen cluster up: the profile 'gang-kubernetes' is for clusters running Kubernetes 1.37 or newer "
        f"(spec.kubernetesVersion), and this cluster would run {default}: pass --kubernetes 1.37 (or a newer "
        "release of cluster-tools/versions.yaml)"]
    for proc in (unknown, older):
        assert "Traceback" not in proc.stderr
    assert not (SESSION_HOME / "unknown-release").exists() and not (SESSION_HOME / "older-release").exists()


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_up_returns_holding_nothing_and_ctrl_c_or_sigterm_during_up_leaves_nothing(stop):
    need_cluster_tools()
    # Interrupted once the API server is starting: everything started so far is stopped, the folder removed.
    name = f"interrupted-{stop.name.lower()}"
    # As from a terminal (a suite started in the background has SIGINT ignored, and its children with it).
    process = subprocess.Popen(tfjobgen_command() + ["cluster", "up", "--name", name, "--nodes", "1"], cwd=REPO,
                               env=cluster_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=signals_as_a_terminal_gives_them)
    deadline = time.monotonic() + 60
    while not (SESSION_HOME / name / "logs" / "kube-apiserver.log").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(stop)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 128 + stop and "Traceback" not in stderr, (process.returncode, stderr)
    assert leftovers(SESSION_HOME / name) == [] and not (SESSION_HOME / name).exists()


def test_a_component_that_cannot_start_is_named_with_why_and_its_log_not_its_stack():
    """Under a low address-space limit etcd's Go runtime panics: one line says which component, why, and where
    its log is (kept: the rest of the cluster's folder is removed), not etcd's whole Go stack; nothing is left."""
    need_cluster_tools()
    proc = subprocess.run(["prlimit", f"--as={1200 << 20}", *tfjobgen_command(), "cluster", "up", "--name",
                           "no-memory", "--nodes", "1", "--quiet"], capture_output=True, text=True, cwd=REPO,
                          env=cluster_env(), timeout=UP_DEADLINE, stdin=subprocess.DEVNULL)
    log = SESSION_HOME / "no-memory" / "logs" / "etcd.log"
    try:
        assert proc.returncode == 1, proc.stderr
        [line] = proc.stderr.strip().splitlines()
        assert line.startswith("tfjobgen cluster up: etcd exited with code ") and "before a healthy store: " in line
        assert "memory" in line and line.endswith(f"(its log: {log})"), line  # "cannot allocate memory", "out of memory"
        assert "goroutine" not in line and ".go:" not in line
        assert log.is_file() and ".go:" in log.read_text(errors="replace"), "the stack is in the log"
        # the logs, and the marker by which `down` knows the folder for `up`'s and removes it
        assert sorted(p.name for p in (SESSION_HOME / "no-memory").iterdir()) == [home.MARKER_FILE, "logs"]
        assert not processes.running(SESSION_HOME / "no-memory"), "nothing left running"
    finally:
        tfjobgen("cluster", "down", "--name", "no-memory")
    assert not (SESSION_HOME / "no-memory").exists(), "down removes what a failed up kept"

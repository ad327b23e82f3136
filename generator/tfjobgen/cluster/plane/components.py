"""How each component of the control plane is started: its command line and configuration files.

Everything listens on 127.0.0.1 only, on ports picked free for this cluster. Pure functions of
the cluster's folder and ports, apart from writing the configuration files they name.
Where a flag departs from a component's default, the comment says why.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ...artifacts import programs
from ..home import ClusterFiles
from ..processes import Component
from .addresses import REAL_POD_RANGE, SERVICE_CIDR
from .release import Release

# Pods of a lost node are evicted after this long (the API server's default is 300 s): a test of a
# lost server waits seconds, not minutes. Jobs that set their own tolerationSeconds keep theirs.
NODE_LOSS_TOLERATION_SECONDS = 5
API_QPS, API_BURST = 500, 1000  # client-side limits of the controllers (defaults: 20/30): place 500 pods in seconds


def etcd(files: ClusterFiles, client_port: int, peer_port: int) -> Component:
    client, peer = f"http://127.0.0.1:{client_port}", f"http://127.0.0.1:{peer_port}"
    return Component("etcd", [
        str(programs.program("etcd")), "--name=local", f"--data-dir={files.home / 'etcd'}",
        f"--listen-client-urls={client}", f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}", f"--initial-cluster=local={peer}",
        "--listen-metrics-urls=", "--log-level=warn",
        "--unsafe-no-fsync",  # a throwaway store: durability costs seconds on every write burst
        "--quota-backend-bytes=4294967296",
    ])


def egress_configuration(files: ClusterFiles) -> Path:
    """The API server's traffic to pods, services and kubelets goes through the pod network (podnet.py)."""
    config = {"apiVersion": "apiserver.k8s.io/v1beta1", "kind": "EgressSelectorConfiguration", "egressSelections": [
        {"name": "cluster", "connection": {"proxyProtocol": "HTTPConnect",
                                           "transport": {"uds": {"udsName": str(files.pod_network)}}}}]}
    path = files.config / "egress-selector.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config, indent=1) + "\n")
    return path


def pod_network(files: ClusterFiles, api_port: int) -> Component:
    pki = files.pki
    return Component("pod-network", [
        sys.executable, "-m", "tfjobgen.cluster.plane.podnet", f"--socket={files.pod_network}",
        f"--server=https://127.0.0.1:{api_port}", f"--ca={pki / 'ca.crt'}", f"--cert={pki / 'admin.crt'}",
        f"--key={pki / 'admin.key'}",
        f"--direct={REAL_POD_RANGE}",
    ], env={"PYTHONPATH": str(Path(__file__).resolve().parents[3])})  # this package, installed or not


def kube_apiserver(files: ClusterFiles, port: int, etcd_port: int, release: Release) -> Component:
    pki = files.pki
    return Component("kube-apiserver", [
        release.program("kube-apiserver"), *release.flags(api_server=True),
        f"--etcd-servers=http://127.0.0.1:{etcd_port}",
        "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={port}",
        f"--tls-cert-file={pki / 'apiserver.crt'}", f"--tls-private-key-file={pki / 'apiserver.key'}",
        f"--client-ca-file={pki / 'ca.crt'}",
        f"--service-account-key-file={pki / 'service-accounts.pub'}",
        f"--service-account-signing-key-file={pki / 'service-accounts.key'}",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--authorization-mode=RBAC",
        f"--egress-selector-config-file={egress_configuration(files)}",
        # Real nodes (nodes/): the kubelet is reached at its node's address, not at a name nothing resolves,
        # and accepts the API server by its certificate (the admin's, of the cluster's CA).
        "--kubelet-preferred-address-types=InternalIP,Hostname",
        f"--kubelet-client-certificate={pki / 'admin.crt'}", f"--kubelet-client-key={pki / 'admin.key'}",
        # On by default since 1.25 and 1.14; named so that the tests' claim "enforced by a real
        # admission plugin" reads off the command line.
        "--enable-admission-plugins=PodSecurity,Priority",
        f"--default-not-ready-toleration-seconds={NODE_LOSS_TOLERATION_SECONDS}",
        f"--default-unreachable-toleration-seconds={NODE_LOSS_TOLERATION_SECONDS}",
        "--profiling=false", "--v=1",
    ])


def kube_controller_manager(files: ClusterFiles, port: int, release: Release) -> Component:
    pki = files.pki
    return Component("kube-controller-manager", [
        release.program("kube-controller-manager"), *release.flags(),
        f"--kubeconfig={files.kubeconfig}",
        "--bind-address=127.0.0.1", f"--secure-port={port}",
        "--leader-elect=false",
        f"--service-account-private-key-file={pki / 'service-accounts.key'}",
        f"--root-ca-file={pki / 'ca.crt'}",
        f"--cluster-signing-cert-file={pki / 'ca.crt'}", f"--cluster-signing-key-file={pki / 'ca.key'}",
        f"--kube-api-qps={API_QPS}", f"--kube-api-burst={API_BURST}",
        "--concurrent-job-syncs=10",
        "--profiling=false", "--v=1",
    ])


def scheduler_configuration(files: ClusterFiles, profiles: list[dict] | None = None) -> Path:
    """A KubeSchedulerConfiguration (JSON) with the default profile, or the ones given."""
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(files.kubeconfig), "qps": API_QPS, "burst": API_BURST},
        "leaderElection": {"leaderElect": False},
    }
    if profiles:
        config["profiles"] = profiles
    path = files.config / "kube-scheduler.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config, indent=1) + "\n")
    return path


def kube_scheduler(files: ClusterFiles, port: int, release: Release) -> Component:
    return Component("kube-scheduler", [
        release.program("kube-scheduler"), *release.flags(),
        f"--config={scheduler_configuration(files)}",
        "--bind-address=127.0.0.1", f"--secure-port={port}",
        "--profiling=false", "--v=1",
    ])


def kwok(files: ClusterFiles) -> Component:
    stages = Path(__file__).with_name("kwok.yaml")
    return Component("kwok", [
        str(programs.program("kwok")),
        f"--kubeconfig={files.kubeconfig}", f"--config={stages}",
        "--node-ip=10.240.0.1",  # the address every fake node reports (it is never dialled)
    ])

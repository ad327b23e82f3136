"""Every overlay's build, applied as Argo CD applies it, is admitted by a real API server.

Server-side apply into namespaces whose pods must meet Pod Security "restricted" (the real
admission plugin), custom resources checked against their CRDs (the cluster's own controllers
install JobSet's; the monitoring kinds come from ../shared/crds), and then the controllers at
work: every pod the backends' `decode` predicts is created, none refused (no FailedCreate).
"""

from __future__ import annotations

import pytest
from cluster_support import local_cluster
from conftest import OVERLAYS, SAMPLE, crd_dir, load_yaml_stream

from tfjobgen import backends

# Kinds a build may hold whose CRD no controller of the local cluster installs.
UPSTREAM_CRDS = ("monitoring.coreos.com_podmonitors.yaml", "monitoring.coreos.com_prometheusrules.yaml")


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_object_is_admitted_and_every_pod_created(overlay, built_overlays):
    objects = load_yaml_stream(built_overlays[overlay])
    expected = {job.key: len(job.pods) for job in backends.decode(objects)}
    namespaces = sorted({o["metadata"]["namespace"] for o in objects if o["metadata"].get("namespace")})
    with local_cluster(SAMPLE / "overlays" / overlay / "cluster-profile.yaml", 2) as cluster:
        for name in UPSTREAM_CRDS:
            cluster.apply((crd_dir() / name).read_text())
        for namespace in namespaces:
            cluster.restricted_namespace(namespace)
        applied = cluster.apply(built_overlays[overlay], check=False)
        assert applied.returncode == 0, f"objects refused:\n{applied.stderr}"
        assert "Warning" not in applied.stderr, applied.stderr  # Pod Security warns before it enforces

        def created() -> bool:
            pods = [p for namespace in namespaces for p in cluster.pods(namespace)]
            counts: dict[str, int] = {}
            for pod in pods:
                job = pod["metadata"]["labels"].get("tfjobgen.dev/job")
                key = f"{pod['metadata']['namespace']}/{job}"
                counts[key] = counts.get(key, 0) + 1
            return counts == expected

        cluster.wait(created, f"{sum(expected.values())} pods of {len(expected)} jobs created", timeout=180)
        refused = [e for namespace in namespaces for e in cluster.objects.list("v1", "Event", namespace)
                   if e.get("reason") in ("FailedCreate", "FailedCreatePodSandBox")]
        assert not refused, [e.get("message") for e in refused[:5]]

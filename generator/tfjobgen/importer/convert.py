"""A Source (sources.py) into a TrainingJob intent, with a comment where a choice was made and a
report row for every source field.

Pure: `convert(source, namespace)` returns an `Imported` (the intent as plain data,
its comments by field, the rows, and which source field each intent field came from, so that a
value tfjobgen's validation refuses is reported at the source's own line) or the refusals. The
steps are modules of their own: containers.py (image, command, env, resources, the rest of each pod)
and policies.py (restartPolicy, runPolicy, and the defaults written out); this one holds the order
and the metadata.
"""

from __future__ import annotations

from ..inputs.problems import field_path
from . import containers, podfields, policies
from .builder import API_VERSION, KIND, Builder, Imported
from .report import CARRIED, DECIDE, DROPPED
from .sources import Refusal, Source, main_container

DEFAULT_NAMESPACE = "default"
_SERVER_SET = {"uid", "resourceVersion", "creationTimestamp", "generation", "selfLink", "managedFields",
               "ownerReferences", "finalizers", "deletionTimestamp", "deletionGracePeriodSeconds"}
_BOOKKEEPING = {"kubectl.kubernetes.io/last-applied-configuration"}


def convert(source: Source, namespace: str | None = None) -> Imported | list[Refusal]:
    b = Builder()
    b.put("apiVersion", API_VERSION)
    b.put("kind", KIND)
    b.row("apiVersion", CARRIED, "apiVersion", f"a {source.kind} becomes a {API_VERSION} {KIND}")
    b.row("kind", CARRIED, "kind", "")
    _metadata(b, source, namespace)
    mains = {}  # each role's training container: (its index, itself)
    for role, replica in source.replicas.items():
        found = main_container(replica)
        if isinstance(found, Refusal):
            b.refusals.append(found)
            continue
        mains[role] = found
    if b.refusals:
        return b.refusals
    containers.job_wide(b, source, mains)  # and, per role, its env, resources and the rest of its pod
    podfields.carry(b, source, mains)  # volumes, pull secrets, pod labels and annotations, node selection
    policies.failure_policy(b, source)
    policies.job_policies(b, source)
    for key in sorted(set(source.data) - {"apiVersion", "kind", "metadata", "spec"}):
        b.row(key, DROPPED, "", "the server's view of the job (status), not part of it" if key == "status" else
              "not a field of the job")
    containers.place_env(b, list(source.replicas))
    policies.write_choices(b, source)
    if b.refusals:
        return b.refusals
    return Imported(b.intent, b.notes, b.rows, b.provenance, b.intent["metadata"]["name"])



# ---- metadata ---------------------------------------------------------------

def _metadata(b: Builder, source: Source, namespace: str | None) -> None:
    meta = source.metadata
    name = meta.get("name")
    if isinstance(name, str) and name:
        b.carry("metadata.name", "metadata.name", name)
        if "generateName" in meta:
            b.row("metadata.generateName", DROPPED, "", "the API server ignores it beside a name")
    elif isinstance(meta.get("generateName"), str) and meta["generateName"].strip("-"):
        chosen = meta["generateName"].rstrip("-")
        b.put("metadata.name", chosen, "metadata.generateName",
              "the TFJob had only generateName: a TrainingJob's name is fixed, so its prefix was taken")
        b.row("metadata.generateName", CARRIED, "metadata.name", "the prefix, as a fixed name (GitOps names each job)")
    else:
        b.refuse("metadata.name", "the job has no name: give it metadata.name (a DNS-1035 label such as wide-deep)")
        b.put("metadata.name", "")
    if isinstance(meta.get("namespace"), str) and meta["namespace"]:
        b.carry("metadata.namespace", "metadata.namespace", meta["namespace"])
    else:
        chosen = namespace or DEFAULT_NAMESPACE
        b.put("metadata.namespace", chosen, "metadata",
              f"the source named no namespace (kubectl applied it to the current one): {chosen} "
              f"{'from --namespace' if namespace else 'assumed; import --namespace NS sets another'}")
        b.row("metadata.namespace", DECIDE, "metadata.namespace",
              f"not in the source; {chosen} was written: a TrainingJob names its namespace")
    # Whole mappings: their keys hold dots and slashes (example.com/team), which a dotted target would split.
    labels = {}
    for key, value in sorted((meta.get("labels") or {}).items()):
        labels[str(key)] = "" if value is None else str(value)
        b.row(field_path("metadata.labels", key), CARRIED, f"metadata.labels.{key}", "on every generated object and pod")
    if labels:
        b.put("metadata.labels", labels, "metadata.labels")
    annotations = {}
    for key, value in sorted((meta.get("annotations") or {}).items()):
        where = field_path("metadata.annotations", key)
        if key in _BOOKKEEPING:
            b.row(where, DROPPED, "", "kubectl's own bookkeeping")
        elif key == "scheduling.k8s.io/group-name":
            b.row(where, DROPPED, "", "the gang's PodGroup: tfjobgen's gang admission is the cluster profile's spec.gang")
        else:
            annotations[str(key)] = "" if value is None else str(value)
            b.row(where, CARRIED, f"metadata.annotations.{key}", "on every generated object (not the pods, as on the TFJob)")
    if annotations:
        b.put("metadata.annotations", annotations, "metadata.annotations")
    for key in sorted(set(meta) - {"name", "generateName", "namespace", "labels", "annotations"}):
        b.row(field_path("metadata", key), DROPPED, "", "set by the API server" if key in _SERVER_SET else
              "not carried: a TrainingJob's metadata is its name, namespace, labels and annotations")


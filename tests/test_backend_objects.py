"""What the jobset and tfjob backends and gang admission emit, held to the real schemas and controllers' rules.

- every example job renders on every backend, under every gang scheduler, or is refused
  with an error that names what to use instead;
- custom resources (JobSet, TFJob, both PodGroups) validate against the upstream CRDs in
  ../shared/crds (skipped with the reason when the folder is absent, a failure under
  TFJOBGEN_REQUIRE_TOOLS=1); built-in objects, the child Jobs JobSet creates and every
  decoded pod pass kubernetes-validate --strict for 1.30, 1.33 and 1.37;
- names, TF_CONFIG, success and failure rules as JobSet's controller and the TFJob
  operator give them, written out literally so a reader can check them against their docs.
"""

from __future__ import annotations

import functools
import json

import pytest
from conftest import JOBS, SAMPLE
from gitops.gitops_support import crd_dir

from jobs import JOB_FILES, example
from tfjobgen import backends
from tfjobgen.backends import jobset, tfjob
from tfjobgen.harness import guarantees
from tfjobgen.concerns import gang, lifecycle
from tfjobgen.expand import pipeline
from tfjobgen.gitops import crds
from tfjobgen.inputs import source
from tfjobgen.inputs.intents import Intent
from tfjobgen.inputs.problems import has_errors
from tfjobgen.shared import contract

SCHEDULERS = ("none", "volcano", "scheduler-plugins", "kueue")
SUPPORTED = ("1.30", "1.33", "1.37")


def profile(scheduler: str = "none", **gang_fields) -> pipeline.ClusterProfile:
    spec = {"gang": {"scheduler": scheduler, **({"queue": "team-a"} if scheduler == "kueue" else {}), **gang_fields}}
    if scheduler == "kubernetes":
        spec["kubernetesVersion"] = "1.37"
    return pipeline.profile_from({"apiVersion": "tfjobgen.dev/v1alpha1", "kind": "ClusterProfile",
                                  "metadata": {"name": "test"}, "spec": spec})


def expand(path, backend: str, chosen: pipeline.ClusterProfile, **spec) -> pipeline.Expansion:
    return pipeline.expand([example(path, backend=backend, **spec)], chosen)


SMALL = {"apiVersion": "tfjobgen.dev/v1alpha1", "kind": "TrainingJob", "metadata": {"name": "small", "namespace": "ml"},
         "spec": {"image": "registry.example.com/ml/tf:2.21", "roles": {
             "chief": {"cpu": 2, "memory": "4Gi"}, "evaluator": {"cpu": 1, "memory": "2Gi"},
             "ps": {"replicas": 2, "cpu": 2, "memory": "4Gi"}, "worker": {"replicas": 2, "cpu": 2, "memory": "4Gi"}}}}


def expand_small(backend: str, chosen: pipeline.ClusterProfile) -> list[dict]:
    """A chief, an evaluator, 2 PS and 2 workers in namespace ml: small enough to write out what it becomes."""
    data = json.loads(json.dumps(SMALL))
    data["spec"]["backend"] = backend
    expansion = pipeline.expand([Intent(data, "small.yaml")], chosen)
    assert expansion.ok, expansion.problems
    return expansion.objects[0]


@functools.cache
def _validator():
    import kubernetes_validate.utils as kv

    kv.schema_contents = functools.lru_cache(maxsize=None)(kv.schema_contents)
    return kv


def _strict_errors(obj: dict, version: str) -> list[str]:
    kv = _validator()
    try:
        kv.validate(obj, version, strict=True)
    except kv.ValidationError as err:
        return [f"{obj['kind']} {obj['metadata'].get('name')}: {err.message} at {list(err.path)}"]
    return []


def _as_pod(pod) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"annotations": pod.annotations, "labels": pod.labels,
            "name": pod.hostname, "namespace": pod.namespace}, "spec": pod.spec}


@pytest.mark.parametrize("backend", sorted(backends.BACKENDS))
@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_every_example_job_renders_on_every_backend_or_is_refused_clearly(backend, scheduler):
    rendered = 0
    for path in JOB_FILES:
        expansion = expand(path, backend, profile(scheduler))
        if not expansion.ok:
            errors = [p for p in expansion.problems if p.severity == "error"]
            assert errors and all(p.file == str(path) and p.line > 0 for p in errors), path.name
            assert any("use backend native" in p.message for p in errors), [p.message for p in errors]
            continue
        rendered += 1
        (decoded,) = backends.decode(expansion.objects[0])
        assert decoded.backend == backend
        assert len(decoded.pods) == sum(r.get("replicas", 1) for r in _roles(path).values())
    assert rendered >= 5, f"{backend} rendered only {rendered} example jobs"


def _roles(path) -> dict:
    return source.parse_documents(source.read_text(str(path)), str(path))[0].data["spec"]["roles"]


def _all_objects(scheduler: str) -> list[dict]:
    found = []
    for backend in sorted(backends.BACKENDS):
        for path in JOB_FILES:
            expansion = expand(path, backend, profile(scheduler))
            if expansion.ok:
                found += expansion.objects[0]
    return found


@pytest.mark.slow  # seconds of CPU: every example job rendered and validated
@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_custom_resources_validate_against_the_upstream_crds(scheduler):
    schemas = crds.load(crd_dir())
    kinds, failures = set(), []
    for obj in _all_objects(scheduler):
        errors = crds.crd_errors(obj, schemas)
        if errors is None:
            continue
        kinds.add(obj["kind"])
        failures += [f"{obj['kind']} {obj['metadata']['name']}: {e}" for e in errors]
    assert not failures, "\n".join(failures[:10])
    expected = {"JobSet", "TFJob"} | ({"PodGroup"} if scheduler in ("volcano", "scheduler-plugins") else set())
    assert kinds == expected


@pytest.mark.slow  # seconds of CPU: every example job rendered and validated
def test_the_crd_check_can_fail():
    schemas = crds.load(crd_dir())
    (obj,) = [o for o in expand(JOB_FILES[0], "jobset", profile()).objects[0] if o["kind"] == "JobSet"]
    wrong = json.loads(json.dumps(obj))
    wrong["spec"]["failurePolicy"]["rules"][0]["action"] = "RestartEverything"
    assert any("RestartEverything" in e for e in crds.crd_errors(wrong, schemas))


@pytest.mark.slow  # seconds of CPU: every example job rendered and validated
@pytest.mark.parametrize("version", SUPPORTED)
def test_built_in_objects_child_jobs_and_pods_pass_strict_validation(version):
    failures = []
    for backend in ("jobset", "tfjob"):
        for scheduler in ("none", "volcano"):
            for path in JOB_FILES:
                expansion = expand(path, backend, profile(scheduler))
                if not expansion.ok:
                    continue
                objects = expansion.objects[0]
                for obj in objects:
                    if obj["apiVersion"] in ("v1", "networking.k8s.io/v1"):
                        failures += _strict_errors(obj, version)
                for obj in objects:
                    if obj["kind"] == "JobSet":
                        failures += [e for child, _ in jobset._child_jobs(obj) for e in _strict_errors(child, version)]
                (decoded,) = backends.decode(objects)
                sample = decoded.pods[:3] + decoded.pods[-2:]  # every role's first and the last pods
                failures += [e for pod in sample for e in _strict_errors(_as_pod(pod), version)]
    assert not failures, "\n".join(failures[:10])


# ---- JobSet ---------------------------------------------------------------------------------

def _only(objects: list[dict], kind: str) -> dict:
    (found,) = [o for o in objects if o["kind"] == kind]
    return found


def test_jobset_names_pods_as_its_child_jobs_do_and_lets_jobset_make_the_service():
    objects = expand(JOBS / "scene2-case1.yaml", "jobset", profile()).objects[0]
    assert "Service" not in {o["kind"] for o in objects}, "JobSet creates the headless Service <jobset> itself"
    spec = _only(objects, "JobSet")["spec"]
    assert spec["network"] == {"enableDNSHostnames": True, "publishNotReadyAddresses": True,
                               "subdomain": "scene2-case1"}
    assert [(r["name"], r["replicas"], r["template"]["spec"]["completions"]) for r in spec["replicatedJobs"]] == \
        [("ps", 1, 1), ("worker", 1, 10)]
    (decoded,) = backends.decode(objects)
    worker = decoded.pods[-1]
    assert (worker.hostname, worker.subdomain) == ("scene2-case1-worker-0-9", "scene2-case1")
    assert worker.labels[jobset.JOBSET_NAME] == "scene2-case1"
    assert worker.labels[jobset.REPLICATED_JOB_NAME] == "worker"
    assert worker.labels["batch.kubernetes.io/job-name"] == "scene2-case1-worker-0"
    config = json.loads(worker.env[contract.TF_CONFIG])
    assert config["cluster"]["ps"] == ["scene2-case1-ps-0-0.scene2-case1:2222"]
    assert config["task"] == {"index": 9, "type": "worker"}


def test_jobset_succeeds_with_its_chief_or_its_workers_and_fails_on_any_task_failed_for_good():
    without_chief = _only(expand(JOBS / "scene2-case1.yaml", "jobset", profile()).objects[0], "JobSet")["spec"]
    assert without_chief["successPolicy"] == {"operator": "All", "targetReplicatedJobs": ["worker"]}
    with_chief = _only(expand(JOBS / "wide-deep.yaml", "jobset", profile()).objects[0], "JobSet")["spec"]
    assert with_chief["successPolicy"] == {"operator": "All", "targetReplicatedJobs": ["chief"]}
    policy = with_chief["failurePolicy"]
    assert policy["maxRestarts"] == 0 and {r["action"] for r in policy["rules"]} == {"FailJobSet"}
    assert policy["rules"][0]["onJobFailureReasons"] == ["PodFailurePolicy"]
    child = with_chief["replicatedJobs"][0]["template"]["spec"]
    rules = child["podFailurePolicy"]["rules"]
    assert rules[-1]["onExitCodes"]["values"] == list(contract.PERMANENT_EXIT_CODES)
    (decoded,) = backends.decode(expand(JOBS / "wide-deep.yaml", "jobset", profile()).objects[0])
    assert decoded.lifecycle.permanent_exit_codes == contract.PERMANENT_EXIT_CODES


def test_jobset_refuses_colocated_and_names_the_backend_that_can():
    expansion = expand(JOBS / "scene1-case1.yaml", "jobset", profile())
    (error,) = [p for p in expansion.problems if p.severity == "error"]
    assert error.field == "spec.backend" and "topology colocated" in error.message
    assert "use backend native" in error.message and expansion.objects == [[]]


def test_jobset_refuses_a_name_whose_pod_hosts_outgrow_a_dns_label():
    long_name = "a" * 53  # native's `<name>-worker-9` fits in 63, JobSet's `<name>-worker-0-9` does not
    for backend, refused in (("native", False), ("jobset", True)):
        result = pipeline.expand([example(JOBS / "scene2-case1.yaml", name=long_name, backend=backend)], profile())
        assert (not result.ok) == refused, backend
    assert "shorten the name to at most 52 characters" in " ".join(p.message for p in result.problems)


@pytest.mark.parametrize("backend", sorted(backends.BACKENDS))
def test_tfjobgens_own_labels_never_carry_the_intents_values(backend):
    """A label of tfjobgen's own (its selectors and `summary` read them) set in the intent is warned of as
    replaced, and it is: on every object, not only on pods; the intent's other labels are kept."""
    data = json.loads(json.dumps(SMALL))
    data["metadata"]["labels"] = {"tfjobgen.dev/role": "custom", "tfjobgen.dev/group": "7", "team": "ml"}
    data["spec"]["backend"] = backend
    expansion = pipeline.expand([Intent(data, "small.yaml")], profile())
    assert expansion.ok
    warned = {p.field for p in expansion.problems if "sets the label" in p.message}
    assert warned == {"metadata.labels.tfjobgen.dev/role", "metadata.labels.tfjobgen.dev/group"}
    for obj in expansion.objects[0] + [pod.labels for pod in backends.pods_of(expansion.objects[0])]:
        found = obj.get("metadata", {}).get("labels", {}) if "apiVersion" in obj else obj
        assert found.get("tfjobgen.dev/role") != "custom" and found.get("tfjobgen.dev/group") != "7", obj
        assert found.get("team") == "ml", obj


# ---- TFJob ----------------------------------------------------------------------------------

def test_tfjob_pods_get_tf_config_exactly_as_the_operator_writes_it():
    objects = expand_small("tfjob", profile())
    spec = _only(objects, "TFJob")["spec"]
    assert sorted(spec["tfReplicaSpecs"]) == ["Chief", "Evaluator", "PS", "Worker"]
    for replica in spec["tfReplicaSpecs"].values():
        container = replica["template"]["spec"]["containers"][0]
        assert container["name"] == "tensorflow" and container["ports"][0]["name"] == "tfjob-port"
        assert contract.TF_CONFIG not in {e["name"] for e in container["env"]}, "the operator writes TF_CONFIG"
        assert replica["restartPolicy"] == "ExitCode"
    assert spec["runPolicy"]["cleanPodPolicy"] == "Running"
    (decoded,) = backends.decode(objects)
    chief = decoded.pods[0]
    # Go's json.Marshal of the operator's TFConfig: cluster, task (type, index), environment; keys sorted in cluster.
    # Every replica type, the evaluator too (what v1.9.4 wrote on a local cluster: tests/cluster/test_backends_real.py).
    assert chief.env[contract.TF_CONFIG] == (
        '{"cluster":{"chief":["small-chief-0.ml.svc:2222"],"evaluator":["small-evaluator-0.ml.svc:2222"],'
        '"ps":["small-ps-0.ml.svc:2222","small-ps-1.ml.svc:2222"],'
        '"worker":["small-worker-0.ml.svc:2222","small-worker-1.ml.svc:2222"]},'
        '"task":{"type":"chief","index":0},"environment":"cloud"}')
    evaluator = next(p for p in decoded.pods if p.role == "evaluator")
    assert json.loads(evaluator.env[contract.TF_CONFIG])["cluster"]["evaluator"] == ["small-evaluator-0.ml.svc:2222"]
    assert chief.labels[tfjob.REPLICA_TYPE_LABEL] == "chief" and chief.labels[tfjob.JOB_ROLE_LABEL] == "master"


def test_tfjob_exit_codes_below_128_fail_the_job_and_signals_give_a_new_pod():
    (decoded,) = backends.decode(expand(JOBS / "wide-deep.yaml", "tfjob", profile()).objects[0])
    rules = decoded.lifecycle
    assert lifecycle.after_failure(rules, contract.EXIT_SETUP, False, 0, 0).fails_job
    assert lifecycle.after_failure(rules, contract.EXIT_FAILED, False, 0, 0).fails_job, "ExitCode: 1 is permanent"
    assert not lifecycle.after_failure(rules, 137, False, 0, 0).fails_job, "killed by a signal: a new pod"
    # A pod the cluster takes away fails the TFJob: the operator counts it failed while it still runs.
    assert lifecycle.after_failure(rules, 143, True, 0, 0).fails_job
    (native_job,) = backends.decode(expand(JOBS / "wide-deep.yaml", "native", profile()).objects[0])
    assert not lifecycle.after_failure(native_job.lifecycle, 143, True, 0, 0).fails_job, "the Job controller ignores it"


def test_tfjob_endpoint_map_keys_are_the_operators_addresses():
    objects = expand(JOBS / "deeprec-starserver.yaml", "tfjob", profile()).objects[0]
    (decoded,) = backends.decode(objects)
    cluster = json.loads(decoded.pods[0].env[contract.TF_CONFIG])["cluster"]
    entries = dict(line.split("=") for line in decoded.config[contract.ENDPOINT_MAP_KEY].splitlines())
    assert set(entries) == {a for hosts in cluster.values() for a in hosts}
    assert all(v.endswith(".svc.cluster.local:" + v.rsplit(":", 1)[1]) and v.count(".svc") == 1
               for v in entries.values())


# ---- gang admission -------------------------------------------------------------------------

@pytest.mark.parametrize("backend", ("native", "jobset"))
def test_volcano_gets_one_podgroup_of_every_task_and_every_pod_names_it(backend):
    objects = expand(JOBS / "wide-deep.yaml", backend, profile("volcano", queue="training")).objects[0]
    group = _only(objects, "PodGroup")
    (decoded,) = backends.decode(objects)
    assert group["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    assert group["spec"]["minMember"] == len(decoded.pods) and group["spec"]["queue"] == "training"
    assert set(group["spec"]["minResources"]) == {"cpu", "memory"}
    for pod in decoded.pods:
        assert pod.spec["schedulerName"] == "volcano"
        assert pod.annotations[gang.VOLCANO_GROUP_ANNOTATION] == group["metadata"]["name"]


def test_scheduler_plugins_label_every_pod_and_use_the_profiles_scheduler():
    chosen = profile("scheduler-plugins", schedulerName="coscheduler")
    objects = expand(JOBS / "wide-deep.yaml", "jobset", chosen).objects[0]
    group = _only(objects, "PodGroup")
    assert group["apiVersion"] == "scheduling.x-k8s.io/v1alpha1" and group["spec"]["scheduleTimeoutSeconds"] == 600
    for pod in backends.pods_of(objects):
        assert pod.spec["schedulerName"] == "coscheduler"
        assert pod.labels[gang.COSCHEDULING_LABEL] == group["metadata"]["name"]


def test_tfjob_leaves_the_podgroup_to_the_operator():
    objects = expand_small("tfjob", profile("volcano", queue="training"))
    assert "PodGroup" not in {o["kind"] for o in objects}
    policy = _only(objects, "TFJob")["spec"]["runPolicy"]["schedulingPolicy"]
    assert policy == {"minAvailable": 6, "minResources": {"cpu": "11", "memory": "22Gi"},
                      "queue": "training", "scheduleTimeoutSeconds": 600}


@pytest.mark.parametrize("scheduler", ("volcano", "scheduler-plugins"))
def test_the_podgroup_carries_the_intents_annotations_as_every_other_object_does(scheduler):
    data = json.loads(json.dumps(SMALL))
    data["metadata"]["annotations"] = {"team.example.com/owner": "ranking", "config.kubernetes.io/index": "0"}
    expansion = pipeline.expand([Intent(data, "small.yaml")], profile(scheduler))
    assert "PodGroup" in {o["kind"] for o in expansion.objects[0]}
    for obj in expansion.objects[0]:
        assert obj["metadata"]["annotations"] == {"team.example.com/owner": "ranking"}, obj["kind"]


def test_kueue_labels_the_workload_object_only_and_warns_on_native():
    for backend, kind in (("jobset", "JobSet"), ("tfjob", "TFJob")):
        expansion = expand(JOBS / "wide-deep.yaml", backend, profile("kueue"))
        top = _only(expansion.objects[0], kind)
        assert top["metadata"]["labels"][gang.KUEUE_QUEUE_LABEL] == "team-a"
        assert gang.KUEUE_QUEUE_LABEL not in json.dumps(top["spec"]), "not on child Jobs or pods"
        assert not [p for p in expansion.problems if "Kueue" in p.message and "TFJob integration" not in p.message]
    native = expand(JOBS / "wide-deep.yaml", "native", profile("kueue"))
    assert native.ok
    (warning,) = [p for p in native.problems if "Kueue" in p.message]
    assert warning.severity == "warning" and "backend jobset" in warning.message


def test_tfjob_under_kueue_warns_that_kueue_0_19_ships_without_its_tfjob_integration():
    """Kueue 0.19's shipped config lists no kubeflow.org/tfjob: there a TFJob runs unqueued and unganged."""
    expansion = expand(JOBS / "wide-deep.yaml", "tfjob", profile("kueue"))
    assert expansion.ok
    (warning,) = [p for p in expansion.problems if "TFJob integration" in p.message]
    assert warning.severity == "warning" and warning.field == "spec.backend"
    assert "kubeflow.org/tfjob in integrations.frameworks" in warning.message and "backend jobset" in warning.message
    for scheduler in ("none", "volcano"):
        assert not [p for p in expand(JOBS / "wide-deep.yaml", "tfjob", profile(scheduler)).problems
                    if "TFJob integration" in p.message]


def _small(backend: str, chosen: pipeline.ClusterProfile, **topology) -> pipeline.Expansion:
    data = json.loads(json.dumps(SMALL))
    data["spec"].update(backend=backend, topology=topology or {"mode": "none"})
    return pipeline.expand([Intent(data, "small.yaml")], chosen)


def test_kueue_topology_aware_scheduling_annotates_each_pod_set_of_a_one_object_job():
    """Each PodSet's pod template (a replicatedJob's, a replica type's) asks Kueue for a server per pod, with no
    domain constraint; a native Job is left as it was, and without topologyAware nothing changes."""
    aware = profile("kueue", topologyAware=True)
    templates = {"jobset": lambda o: [r["template"]["spec"]["template"] for r in o["spec"]["replicatedJobs"]],
                 "tfjob": lambda o: [r["template"] for r in o["spec"]["tfReplicaSpecs"].values()]}
    for backend, kind in (("jobset", "JobSet"), ("tfjob", "TFJob")):
        expansion = _small(backend, aware)
        assert expansion.ok, expansion.problems
        pod_sets = templates[backend](_only(expansion.objects[0], kind))
        assert len(pod_sets) == 4 and all(
            t["metadata"]["annotations"][gang.KUEUE_UNCONSTRAINED_TOPOLOGY] == "true" for t in pod_sets), backend
        (decoded,) = backends.decode(expansion.objects[0])
        assert all(pod.annotations[gang.KUEUE_UNCONSTRAINED_TOPOLOGY] == "true" for pod in decoded.pods)
        assert gang.KUEUE_UNCONSTRAINED_TOPOLOGY not in json.dumps(_small(backend, profile("kueue")).objects[0])
    assert gang.KUEUE_UNCONSTRAINED_TOPOLOGY not in json.dumps(_small("native", aware).objects[0])


@pytest.mark.parametrize("backend", ("native", "jobset"))
def test_kueue_topology_aware_scheduling_refuses_required_placement_rules_and_warns_on_spread(backend):
    """TAS pins each pod to a server chosen by free room alone (measured on Kueue 0.19.2, tests/cluster/test_gang.py):
    a required rule leaves pods Pending on an admitted job, spread's preference is not kept. Native too: Kueue
    places every Workload of a ClusterQueue whose flavors all have a Topology."""
    aware = profile("kueue", topologyAware=True)

    def found(**topology) -> list[tuple[str, str]]:
        return [(p.severity, p.field) for p in _small(backend, aware, **topology).problems
                if "topologyAware" in p.message]

    assert found(mode="isolated") == [("error", "spec.topology.mode")]
    assert found(mode="spread", spread="required") == [("error", "spec.topology.mode")]
    assert found(mode="spread") == [("warning", "spec.topology.mode")]
    assert found(mode="none") == []
    (refusal,) = [p for p in _small(backend, aware, mode="isolated").problems if "topologyAware" in p.message]
    assert "ignoring pod affinity" in refusal.message and "Pending on an admitted job" in refusal.message
    one_ps = json.loads(json.dumps(SMALL))
    one_ps["spec"].update(backend=backend, topology={"mode": "spread", "spread": "required"})
    one_ps["spec"]["roles"]["ps"]["replicas"] = 1
    assert not [p for p in pipeline.expand([Intent(one_ps, "small.yaml")], aware).problems
                if "topologyAware" in p.message], "one PS has no other to keep apart from"
    assert not [p for p in _small(backend, profile("kueue"), mode="isolated").problems
                if "topologyAware" in p.message], "Kueue by quota alone leaves placement to kube-scheduler"


def test_topology_aware_scheduling_is_kueues():
    expansion = expand(JOBS / "wide-deep.yaml", "jobset", profile("volcano", topologyAware=True))
    (error,) = [p for p in expansion.problems if has_errors([p])]
    assert error.field == "spec.gang.topologyAware" and "set spec.gang.scheduler to kueue" in error.message


def test_kueue_without_a_queue_is_a_profile_error():
    expansion = expand(JOBS / "wide-deep.yaml", "jobset", pipeline.profile_from({
        "apiVersion": "tfjobgen.dev/v1alpha1", "kind": "ClusterProfile", "metadata": {"name": "t"},
        "spec": {"gang": {"scheduler": "kueue"}}}))
    assert not expansion.ok
    assert any(p.field == "spec.gang.queue" for p in expansion.problems if has_errors([p]))


def test_colocated_groups_placed_by_volcano_carry_task_topology_instead_of_affinity():
    """Every pod of group g is task group-g and has no affinity rule; the PodGroup makes each group attract
    itself and repel the others, so Volcano's task-topology buckets are exactly the job's groups."""
    chosen = profile("volcano", colocatedGroups="scheduler")
    intent = example(JOBS / "scene1-case2.yaml", backend="native")
    intent.data["metadata"]["annotations"] = {"team.example.com/owner": "ranking"}
    expansion = pipeline.expand([intent], chosen)
    assert expansion.ok, expansion.problems
    assert not [p for p in expansion.problems if "PriorityClass" in p.message], "no preemption to ask for"
    objects = expansion.objects[0]
    annotations = _only(objects, "PodGroup")["metadata"]["annotations"]
    (decoded,) = backends.decode(objects)
    tasks = {pod.annotations[gang.VOLCANO_TASK_ANNOTATION]: [] for pod in decoded.pods}
    for pod in decoded.pods:
        assert "affinity" not in pod.spec and "topologySpreadConstraints" not in pod.spec, pod.name
        tasks[pod.annotations[gang.VOLCANO_TASK_ANNOTATION]].append(pod)
        assert pod.annotations[gang.VOLCANO_TASK_ANNOTATION] == f"group-{pod.labels['tfjobgen.dev/group']}"
    # the groups are the job's: one PS and its workersPerServer (10) workers each
    assert sorted(len(pods) for pods in tasks.values()) == [11] * 5
    assert all(sum(p.labels["tfjobgen.dev/role"] == "ps" for p in pods) == 1 for pods in tasks.values())
    assert annotations[gang.VOLCANO_AFFINITY_ANNOTATION].split(";") == sorted(tasks)
    assert sorted(annotations[gang.VOLCANO_ANTI_AFFINITY_ANNOTATION].split(",")) == sorted(tasks)
    assert annotations["team.example.com/owner"] == "ranking", "the intent's own, as on every object"
    spread = expand(JOBS / "wide-deep.yaml", "native", chosen).objects[0]
    assert "annotations" not in _only(spread, "PodGroup")["metadata"], "only colocated jobs have groups"


@pytest.mark.parametrize("scheduler", ("none", "scheduler-plugins", "kueue"))
def test_colocated_groups_by_the_scheduler_need_volcano_or_kubernetes(scheduler):
    expansion = expand(JOBS / "scene1-case2.yaml", "native", profile(scheduler, colocatedGroups="scheduler"))
    (error,) = [p for p in expansion.problems if has_errors([p])]
    assert error.field == "spec.gang.colocatedGroups" and "only volcano and kubernetes" in error.message


@pytest.mark.parametrize("backend", ["native", "jobset"])
def test_under_kubernetes_gang_every_pod_of_a_pod_group_has_the_groups_priority(backend):
    """kube-scheduler 1.37 refuses a PodGroup whose pods' priorities differ from its own (measured: "all pods
    in a single pod group should have the same priority"): the profile's PS class for the job and its group."""
    chosen = pipeline.profile_from({"apiVersion": "tfjobgen.dev/v1alpha1", "kind": "ClusterProfile",
                                    "metadata": {"name": "test"}, "spec": {
                                        "kubernetesVersion": "1.37", "gang": {"scheduler": "kubernetes"},
                                        "priorityClasses": {"ps": "tfjobgen-ps", "worker": "tfjobgen-worker"}}})
    objects = expand(JOBS / "ctr-jobset.yaml", backend, chosen).objects[0]
    (group,) = [o for o in objects if o["kind"] == "PodGroup"]
    assert group["spec"]["priorityClassName"] == "tfjobgen-ps"
    classes = {spec.get("priorityClassName") for spec in guarantees.pod_specs(objects)}
    assert classes == {"tfjobgen-ps"}, classes


def test_kubernetes_keeps_each_colocated_group_on_one_server_with_a_pod_group_of_its_own():
    """A PodGroup per group, held to one hostname, minCount its PS and workers; every pod names its group's;
    only the PS carry a rule (anti-affinity to the job's other groups), as the topology constraint keeps
    a group together but not groups apart."""
    chosen = profile("kubernetes", colocatedGroups="scheduler")
    objects = expand(JOBS / "scene1-case2.yaml", "native", chosen).objects[0]
    groups = {o["metadata"]["name"]: o["spec"] for o in objects if o["kind"] == "PodGroup"}
    assert sorted(groups) == [f"scene1-case2-group-{g}" for g in range(5)]
    assert all(spec == {"schedulingPolicy": {"gang": {"minCount": 11}},
                        "schedulingConstraints": {"topology": [{"key": "kubernetes.io/hostname"}]}}
               for spec in groups.values())
    for job in (o for o in objects if o["kind"] == "Job"):
        pod = job["spec"]["template"]
        group = pod["metadata"]["labels"]["tfjobgen.dev/group"]
        assert pod["spec"]["schedulingGroup"] == {"podGroupName": f"scene1-case2-group-{group}"}
        rules = pod["spec"].get("affinity") or {}
        if pod["metadata"]["labels"]["tfjobgen.dev/role"] == "ps":
            (term,) = rules["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            assert term["labelSelector"]["matchExpressions"][0]["values"] == [group]
        else:
            assert rules == {}


# ---- DNS: every TF_CONFIG address reaches its task, through the Services the controllers create ----

@pytest.mark.parametrize("backend", ("jobset", "tfjob"))
def test_every_address_reaches_its_task_through_the_controllers_services(backend):
    from cluster_dns import ClusterDNS

    for path in JOB_FILES:
        expansion = expand(path, backend, profile())
        if not expansion.ok:
            continue
        (decoded,) = backends.decode(expansion.objects[0])
        assert decoded.created, "the controller's Services"
        by_task = {(p.role, p.index): p for p in decoded.pods}
        objects = expansion.objects[0] + decoded.created
        # JobSet publishes not-ready addresses, as native does; the operator's Services do not, so a TFJob's
        # names resolve once the peer pod is Ready (no readiness probe: once its container runs).
        dns = ClusterDNS(objects, decoded.pods, ready=backend == "tfjob")
        not_ready = ClusterDNS(objects, decoded.pods)
        for pod in decoded.pods:
            for role, addresses in json.loads(pod.env[contract.TF_CONFIG])["cluster"].items():
                for index, address in enumerate(addresses):
                    host = address.rsplit(":", 1)[0]
                    assert dns.resolve(host, pod.namespace) is by_task[(role, index)], f"{path.name}: {address}"
                    assert (not_ready.resolve(host, pod.namespace) is None) == (backend == "tfjob")


def test_tfjob_warns_of_permanent_exit_codes_the_operator_retries():
    data = json.loads(json.dumps(SMALL))
    data["spec"].update(backend="tfjob", command=["python", "/app/train.py"],
                        failurePolicy={"permanentExitCodes": [3, 137], "activeDeadlineSeconds": 3600})
    expansion = pipeline.expand([Intent(data, "small.yaml")], profile())
    assert expansion.ok
    (warning,) = [p for p in expansion.problems if p.field == "spec.failurePolicy.permanentExitCodes"]
    assert warning.severity == "warning" and "137 cannot fail the job" in warning.message


# ---- what completes a job (seen on the real JobSet controller and the operator: tests/cluster/test_lifecycle_real.py) ----

def test_what_completes_a_jobset_or_tfjob_and_so_ends_every_other_task():
    def completed_by(job: str, backend: str) -> tuple[str, ...]:
        (decoded,) = backends.decode(expand(JOBS / f"{job}.yaml", backend, profile()).objects[0])
        return decoded.completed_by

    assert completed_by("ctr-jobset", "jobset") == ("chief:0",)
    assert completed_by("ctr-jobset", "tfjob") == ("chief:0",)
    # Without a chief the operator takes worker 0; JobSet's successPolicy counts the whole worker Job.
    assert completed_by("scene2-case1", "tfjob") == ("worker:0",)
    assert completed_by("scene2-case1", "jobset") == tuple(f"worker:{i}" for i in range(10))
    assert completed_by("ctr-jobset", "native") == (), "each Job completes on its own"


def test_tfjob_warns_where_workers_may_be_preempted():
    """An evicted or preempted pod fails a whole TFJob (the operator v1.9.4 on a local cluster): a cluster whose
    PS preempt workers is told so at spec.backend, and told jobset or native keep the job running."""
    seed = pipeline.load_profile(str(SAMPLE / "overlays" / "seed-80c" / "cluster-profile.yaml"))
    assert seed.priority_classes.get("ps")
    warned = [p for p in expand(JOBS / "ctr-jobset.yaml", "tfjob", seed).problems if p.field == "spec.backend"]
    assert [p.is_error for p in warned] == [False]
    assert "fails a whole TFJob when one of its pods is preempted or evicted" in warned[0].message
    assert not [p for p in expand(JOBS / "ctr-jobset.yaml", "jobset", seed).problems if p.field == "spec.backend"]
    assert not [p for p in expand(JOBS / "ctr-jobset.yaml", "tfjob", profile()).problems if p.field == "spec.backend"]


"""`tfjobgen import`: TFJobs and Volcano Jobs into TrainingJobs, with a report of every source field.

Three kinds of input: the cases written for these tests (tests/importer/cases/, one per shape of
source), the real manifests people outside this project wrote (../shared/tfjobs-wild/, read where
it is, never copied here), and the refusals (tests/refusals/import-*, run by test_refusals.py).
Every imported intent goes through tfjobgen's own validation and render here too, so a test that
passes is a job tfjobgen accepts and whose pods run what the source ran.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path

import pytest
import yaml
from conftest import REPO, TESTS, run_tfjobgen

from tfjobgen.expand import pipeline
from tfjobgen.importer import check, containers, files, report, roundtrip, sources
from tfjobgen.inputs import source as yaml_source
from tfjobgen.inputs.intents import Intent
from tfjobgen.inputs.profile import default_profile

CASES = TESTS / "importer" / "cases"
WILD = Path(os.environ.get("TFJOBGEN_WILD_DIR") or REPO.parent / "shared" / "tfjobs-wild") / "cases"
MARKER = "# ----- manifest body below is verbatim -----\n"


def imported(name: str, namespace: str | None = None) -> files.Result:
    path = CASES / name
    return files.import_text(path.read_text(), f"tests/importer/cases/{name}", namespace)


def one_job(name: str) -> files.Job:
    result = imported(name)
    assert not result.problems, [p.format() for p in result.problems]
    assert len(result.jobs) == 1
    return result.jobs[0]


def rows_by_field(job: files.Job) -> dict[str, report.Row]:
    return {row.field: row for row in job.rows}


def assert_valid_and_round_trips(job: files.Job) -> list[dict]:
    """The intent as a user would read it back from the file import wrote: valid, and its pods run what the
    source's did."""
    document = yaml_source.parse_documents(job.text, "imported.yaml")[0]
    intent = Intent(document.data, "imported.yaml", document)
    typed, problems = pipeline.validate(intent, default_profile())
    assert typed is not None, [p.format() for p in problems]
    objects = pipeline.expand([intent], default_profile()).in_order()
    assert roundtrip.compare(job.source, job.rows, objects) == []
    return objects


# ---- the cases written for these tests ---------------------------------------------------------

def test_every_field_of_a_v1_tfjob_lands_where_the_report_says():
    job = one_job("v1-every-field.yaml")
    spec = job.intent["spec"]
    assert job.intent["metadata"] == {"name": "ranking-ctr", "namespace": "ranking", "labels": {"team": "ranking"},
                                      "annotations": {"example.com/owner": "ads-ml"}}
    assert spec["image"] == "registry.example.com/ranking/ctr:2.3"
    assert spec["command"] == ["python", "/app/train.py"] and spec["args"] == ["--model_dir=gs://bucket/ctr"]
    assert spec["env"] == [{"name": "DATA_DIR", "value": "gs://bucket/data"}]  # every role's, once
    assert spec["roles"]["ps"]["env"] == [{"name": "GRPC_VERBOSITY", "value": "ERROR"}]  # the PS's own
    assert spec["roles"]["ps"]["threads"] == {"intraOp": 6}  # TF_NUM_INTRAOP_THREADS, now tfjobgen's field
    assert spec["roles"]["worker"]["gpu"] == 1 and spec["roles"]["worker"]["memory"] == "8Gi"  # the limit
    assert spec["roles"]["evaluator"] == {"cpu": "1500m", "memory": "2Gi"}
    assert spec["failurePolicy"] == {"backoffLimitPerTask": 5, "activeDeadlineSeconds": 7200}
    assert spec["serviceAccountName"] == "trainer"
    rows = rows_by_field(job)
    ps = "spec.tfReplicaSpecs.PS.template"
    assert rows["spec.tfReplicaSpecs.Chief.template.spec.containers[0].env[1]"].outcome == report.DROPPED  # TF_CONFIG
    assert "tfjobgen owns it" in rows["spec.tfReplicaSpecs.Chief.template.spec.containers[0].env[1]"].why
    assert spec["volumes"] == [{"name": "cache", "emptyDir": {}},
                               {"name": "data", "persistentVolumeClaim": {"claimName": "ctr-data"}}]
    assert spec["roles"]["ps"]["volumeMounts"] == [{"name": "cache", "mountPath": "/cache"}]  # the PS's own
    assert rows[f"{ps}.spec.volumes[0]"].outcome == report.CARRIED
    for field, missing in ((f"{ps}.spec.nodeSelector.pool", "spec.topology.nodePools"),  # the PS's only
                           (f"{ps}.spec.tolerations[0]", "spec.topology.nodePools"),
                           (f"{ps}.metadata.annotations.sidecar.istio.io/inject", "spec.podMetadata.annotations"),
                           (f"{ps}.spec.containers[0].envFrom", "spec.env")):
        assert rows[field].outcome == report.DECIDE and missing in rows[field].target, rows[field]
    # A pull secret of one role is every role's: it changes no pod but the credentials it may pull with.
    assert spec["imagePullSecrets"] == ["registry-cred"]
    assert rows[f"{ps}.spec.imagePullSecrets[0].name"].outcome == report.CARRIED
    for field in ("spec.runPolicy.schedulingPolicy.minAvailable", "spec.runPolicy.schedulingPolicy.queue",
                  "spec.successPolicy"):
        assert rows[field].outcome == report.DECIDE
    for field in ("spec.runPolicy.cleanPodPolicy", "spec.runPolicy.ttlSecondsAfterFinished",
                  "metadata.annotations.kubectl.kubernetes.io/last-applied-configuration"):
        assert rows[field].outcome == report.DROPPED and rows[field].why
    assert_valid_and_round_trips(job)


def test_the_report_names_every_field_of_the_source_once_it_is_read():
    """Every scalar of the source is under exactly one row's field (or a wholly unread field's row)."""
    for name in sorted(p.name for p in CASES.glob("*.yaml")):
        result = imported(name)
        for job in result.jobs:
            data = yaml.safe_load((CASES / name).read_text())
            named = [row.field for row in job.rows]
            for leaf in report.leaves(data):
                assert any(report._under(leaf, field) for field in named), f"{name}: {leaf} is in no row"
            assert all(row.line > 0 for row in job.rows), f"{name}: a row without its line"


def test_cover_names_a_field_no_rule_reads_as_one_row():
    rows = [report.Row("spec.a", report.CARRIED, "spec.x", "")]
    covered = report.cover({"spec": {"a": 1, "hostAliases": [{"ip": "1.2.3.4", "hostnames": ["a", "b"]}]}}, rows)
    assert [(r.field, r.outcome) for r in covered[1:]] == [("spec.hostAliases", report.DECIDE)]


def test_restart_policies_become_the_failure_policy():
    never = one_job("v1beta2-master.yaml")  # restartPolicy Never, backoffLimit 2 at spec's top (v1beta2)
    assert never.intent["spec"]["failurePolicy"] == {"backoffLimitPerTask": 0, "activeDeadlineSeconds": 600}
    assert rows_by_field(never)["spec.backoffLimit"].outcome == report.DROPPED
    exit_code = one_job("v1-exitcode.yaml")
    assert "failurePolicy" not in exit_code.intent["spec"]  # retried, with the default budget
    decided = [r for r in exit_code.rows if r.target == "spec.failurePolicy.permanentExitCodes"]
    assert decided and decided[0].outcome == report.DECIDE
    volcano = one_job("volcano-tensorflow-plugin.yaml")
    assert volcano.intent["spec"]["failurePolicy"] == {"backoffLimitPerTask": 4}  # maxRetry


def test_older_apis_and_volcano_map_to_roles():
    master = one_job("v1beta2-master.yaml")
    assert set(master.intent["spec"]["roles"]) == {"ps", "worker", "chief"}  # Master is the chief
    images = rows_by_field(master)["spec.tfReplicaSpecs.Master.template.spec.containers[0].image"]
    assert images.outcome == report.CARRIED and images.target == "spec.roles.chief.image"  # the chief's own
    assert master.intent["spec"]["roles"]["chief"]["image"] != master.intent["spec"]["image"]
    alpha = one_job("v1alpha1-list.yaml")
    assert alpha.intent["spec"]["roles"]["worker"]["replicas"] == 2
    volcano = one_job("volcano-tensorflow-plugin.yaml")  # tasks "params" and "trainers", named by the plugin
    assert volcano.intent["spec"]["roles"]["ps"]["replicas"] == 1
    assert volcano.intent["spec"]["roles"]["worker"]["replicas"] == 2
    assert rows_by_field(volcano)["spec.minAvailable"].target == "ClusterProfile spec.gang"
    for job in (master, alpha, volcano):
        assert_valid_and_round_trips(job)


def test_choices_are_commented_in_the_file():
    job = one_job("v1-exitcode.yaml")
    assert job.intent["metadata"]["name"] == "nightly"  # generateName's prefix
    assert job.intent["spec"]["command"] == ["python", "/app/train.py", "--steps", "1000"]
    for comment in ("# the TFJob had only generateName", "# the source named no namespace",
                    "# was one string 'python /app/train.py --steps 1000'", "# the source asked for no CPU: a guess",
                    "# shared: CPU requests as the source had them", "# none: the scheduler places the pods"):
        assert comment in job.text, comment
    assert imported("v1-exitcode.yaml", namespace="ml").jobs[0].intent["metadata"]["namespace"] == "ml"
    assert_valid_and_round_trips(job)


GOLDEN = TESTS / "importer" / "golden"


@pytest.mark.parametrize("name", ["v1-every-field.yaml", "volcano-tensorflow-plugin.yaml"])
def test_the_intent_and_its_report_are_the_golden_bytes(name):
    """The whole of what import writes for a case: its intent with every comment, and its report. After an
    intended change, UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_import.py and review the diff."""
    result = imported(name)
    job = result.jobs[0]
    checked = check.all_jobs(result.jobs)
    page = report.markdown(job.rows, checked.additions, {job.name: [w.format() for w in job.warnings]})
    for suffix, text in ((".yaml", job.text), (".report.md", page)):
        golden = GOLDEN / (Path(name).stem + suffix)
        if os.environ.get("UPDATE_GOLDEN") == "1":
            golden.parent.mkdir(exist_ok=True)
            golden.write_text(text)
        assert text == golden.read_text(), f"{golden} differs from what import writes now"


def test_the_same_source_gives_the_same_bytes():
    first = [j.text for j in imported("v1-every-field.yaml").jobs]
    assert first == [j.text for j in imported("v1-every-field.yaml").jobs]
    assert yaml.safe_load(first[0]) == one_job("v1-every-field.yaml").intent


def test_sidecars_and_init_containers_are_refused_by_field():
    problems = [p.format() for p in imported("v1-sidecar.yaml").problems]
    assert any("spec.tfReplicaSpecs.Worker.template.spec.initContainers: init containers" in p for p in problems)
    assert any("spec.tfReplicaSpecs.Worker.template.spec.containers[1]: a second container (log-shipper)" in p
               for p in problems)
    assert all(p.startswith("tests/importer/cases/v1-sidecar.yaml:") for p in problems)


def test_a_shell_command_is_split_only_when_it_holds_no_shell_code():
    plain = {"command": ["/bin/sh", "-c"], "args": ["python train.py --steps 5"]}
    assert containers.argv(plain, "c") == (["python", "train.py", "--steps", "5"], [],
                                        "was /bin/sh -c 'python train.py --steps 5': the same program as an argument list")
    refused = containers.argv({"command": ["sh", "-c", "cd /app && python train.py"]}, "c")
    assert isinstance(refused, sources.Refusal) and "shell code ('&')" in refused.message
    entrypoint = containers.argv({"args": ["--steps", "5"]}, "c")
    assert isinstance(entrypoint, sources.Refusal) and "image's own entrypoint" in entrypoint.message


def test_a_value_tfjobgen_refuses_is_reported_at_the_source_line():
    text = (CASES / "v1alpha1-list.yaml").read_text().replace("name: mnist-v1alpha1", "name: MNIST_v1")
    result = files.import_text(text, "job.yaml")
    assert not result.jobs
    [problem] = result.problems
    assert problem.format().startswith("job.yaml:5: metadata.name: imported as metadata.name:"), problem.format()


def test_a_placeholder_is_refused_but_a_shell_variable_in_the_command_is_the_programs():
    text = (CASES / "v1alpha1-list.yaml").read_text()
    filled_in = text.replace("command: [python, /opt/mnist.py]", "command: [python, /opt/mnist.py, --dir=$DATA]")
    assert files.import_text(filled_in, "job.yaml").jobs
    for template, line in ((text.replace("name: mnist-v1alpha1", "name: $JOB_NAME"), 5),
                           (text.replace("memory: 1Gi", 'memory: "${MEM}Gi"', 1), 17)):
        [problem] = files.import_text(template, "job.yaml").problems
        assert problem.line == line and "is a placeholder (envsubst" in problem.message, problem.format()


def test_a_field_of_another_shape_is_refused_at_its_line_never_a_crash():
    """Every field of the richest case, replaced by a value of another shape, is imported or refused in
    located lines: the rules read only what the shape checks let through."""
    data = yaml.safe_load((CASES / "v1-every-field.yaml").read_text())

    def paths(node, path=()):
        yield path
        children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in children:
            yield from paths(value, path + (key,))

    refused = 0
    for path in [p for p in paths(data) if p]:
        changed = copy.deepcopy(data)
        holder = changed
        for key in path[:-1]:
            holder = holder[key]
        holder[path[-1]] = "x" if isinstance(holder[path[-1]], (dict, list)) else [1]  # always another shape
        result = files.import_text(yaml.safe_dump(changed), "job.yaml")
        assert result.jobs or result.problems, path
        assert all(p.file == "job.yaml" and p.line > 0 for p in result.problems), [p.format() for p in result.problems]
        refused += bool(result.problems)
    assert refused > 100  # most fields of another shape are refused, not passed on


def test_the_round_trip_sees_a_difference():
    """The check itself can fail: a rendered pod that runs another image, command, memory or env is named."""
    job = one_job("v1-every-field.yaml")
    objects = pipeline.expand([Intent(job.intent, "j")], default_profile()).in_order()
    worker = roundtrip.pods(objects)["worker"]
    container = next(c for c in worker["containers"] if c["name"] == "tensorflow")
    container["image"] = "other:1"
    container["args"] = []
    container["resources"]["limits"]["memory"] = "1Gi"
    container["env"] = [e for e in container["env"] if e["name"] != "POD_NAME"]
    differences = roundtrip.compare(job.source, job.rows, objects)
    assert [d.split(":")[0] for d in differences] == ["worker image", "worker command and args",
                                                      "worker memory limits", "worker env POD_NAME"], differences
    additions = roundtrip.additions(job.source, objects)
    assert any(a.startswith("env TFJOBGEN_CLUSTER, TFJOBGEN_TASK_INDEX, TF_CONFIG") for a in additions)
    assert any(a.startswith("restricted security context") for a in additions)


def test_pod_fields_every_role_shares_are_carried_and_round_trip():
    """Pull secrets, pod labels and annotations, nodeSelector and tolerations every role's pods had alike land
    in the job-wide fields and on every rendered pod; a role's own needs a decision; tfjobgen's keys are dropped."""
    job = one_job("v1-pod-fields.yaml")
    spec, rows = job.intent["spec"], rows_by_field(job)
    assert spec["imagePullSecrets"] == ["registry-cred", "mirror-cred"]
    assert spec["podMetadata"] == {"annotations": {"sidecar.istio.io/inject": "false"},
                                   "labels": {"example.com/team": "ads"}}
    assert spec["nodeSelector"] == {"example.com/zone-class": "training"}
    assert spec["tolerations"] == [{"key": "example.com/dedicated", "operator": "Equal", "value": "training",
                                    "effect": "NoSchedule"}]
    assert spec["volumes"] == [{"name": "data", "persistentVolumeClaim": {"claimName": "ctr-data", "readOnly": True}}]
    assert spec["volumeMounts"] == [{"name": "data", "mountPath": "/data", "readOnly": True}]  # every role's
    worker = "spec.tfReplicaSpecs.Worker.template"
    assert rows[f"{worker}.spec.volumes[1]"].outcome == report.DROPPED  # nfs: restricted refuses it
    assert "restricted Pod Security admits no nfs" in rows[f"{worker}.spec.volumes[1]"].why
    assert rows[f"{worker}.spec.containers[0].volumeMounts[1]"].outcome == report.DECIDE
    assert rows[f"{worker}.metadata.labels.tier"].outcome == report.DECIDE  # the roles' values differ
    assert rows[f"{worker}.metadata.labels.tfjobgen.dev/role"].outcome == report.DROPPED
    assert rows[f"{worker}.spec.nodeSelector.example.com/zone-class"].outcome == report.CARRIED
    objects = assert_valid_and_round_trips(job)
    pod = roundtrip.templates(objects)["ps"]
    assert pod["metadata"]["annotations"]["sidecar.istio.io/inject"] == "false"
    assert pod["spec"]["imagePullSecrets"] == [{"name": "registry-cred"}, {"name": "mirror-cred"}]


def test_the_round_trip_sees_a_pod_field_go_missing():
    """The pod-field comparison can fail: a rendered pod without a carried pull secret, annotation, node
    label, mount, the volume as it was, or toleration is named."""
    job = one_job("v1-pod-fields.yaml")
    objects = pipeline.expand([Intent(job.intent, "j")], default_profile()).in_order()
    template = roundtrip.templates(objects)["worker"]
    template["spec"]["imagePullSecrets"] = []
    template["metadata"]["annotations"].pop("sidecar.istio.io/inject")
    template["spec"]["nodeSelector"].pop("example.com/zone-class")
    template["spec"]["tolerations"] = []
    template["spec"]["containers"][0]["volumeMounts"] = template["spec"]["containers"][0]["volumeMounts"][:1]
    template["spec"]["volumes"] = [{"name": "data", "emptyDir": {}}]
    differences = roundtrip.compare(job.source, job.rows, objects)
    assert [d.split(":")[0] for d in differences] == [
        "worker imagePullSecrets", "worker imagePullSecrets", "worker pod annotations sidecar.istio.io/inject",
        "worker nodeSelector example.com/zone-class", "worker volumeMounts", "worker volume data",
        "worker tolerations"], differences


def test_two_jobs_of_one_name_are_refused():
    job = one_job("v1alpha1-list.yaml")
    checked = check.all_jobs([job, job])
    assert [p.format() for p in checked.problems] == [
        f"{job.file}:5: metadata.name: a second job named default/mnist-v1alpha1 (the first is in {job.file}): "
        "a TrainingJob's name is its file's name; rename one"]


# ---- the command line ----------------------------------------------------------------------------------

def test_import_writes_one_file_per_job_and_the_report(tmp_path):
    out, page = tmp_path / "jobs", tmp_path / "report.md"
    proc = run_tfjobgen("import", str(CASES / "v1-every-field.yaml"), str(CASES / "volcano-tensorflow-plugin.yaml"),
                        "-o", str(out), "--report", str(page))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert sorted(p.name for p in out.iterdir()) == ["ranking-ctr.yaml", "vc-ctr.yaml"]
    assert "tfjobgen import: 2 job(s) into" in proc.stderr
    text = page.read_text()
    assert "## ranking-ctr" in text and "## vc-ctr" in text and "tfjobgen's own additions" in text
    assert "nothing ends" not in text and "the program runs under tfjobgen's entrypoint" in text
    validated = run_tfjobgen("validate", str(out))
    assert validated.returncode == 0, validated.stderr


def test_import_never_replaces_a_job_file(tmp_path):
    out = tmp_path / "jobs"
    out.mkdir()
    (out / "vc-ctr.yaml").write_text("mine\n")
    proc = run_tfjobgen("import", str(CASES / "v1-every-field.yaml"), str(CASES / "volcano-tensorflow-plugin.yaml"),
                        "-o", str(out))
    assert proc.returncode == 1 and f"{out}/vc-ctr.yaml: a file of this name is there already" in proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["vc-ctr.yaml"] and (out / "vc-ctr.yaml").read_text() == "mine\n"


def test_a_command_that_wires_the_cluster_by_hand_needs_a_decision():
    text = (CASES / "v1alpha1-list.yaml").read_text().replace(
        "command: [python, /opt/mnist.py]", "command: [python, /opt/mnist.py, --ps_hosts=ps-0:2222]")
    [job] = files.import_text(text, "job.yaml").jobs
    wired = [r for r in job.rows if "wires the cluster by hand (--ps_hosts)" in r.why]
    assert len(wired) == 2 and all(r.outcome == report.DECIDE for r in wired)


def test_import_writes_nothing_when_one_file_is_refused(tmp_path):
    out = tmp_path / "jobs"
    proc = run_tfjobgen("import", str(CASES / "v1-every-field.yaml"), str(CASES / "v1-sidecar.yaml"), "-o", str(out))
    assert proc.returncode == 1
    assert proc.stdout == "" and not out.exists()
    assert "v1-sidecar.yaml:17: spec.tfReplicaSpecs.Worker.template.spec.initContainers" in proc.stderr
    assert "nothing written" in proc.stderr


# ---- real manifests, written outside this project ------------------------------------------------

def wild_cases() -> list[str]:
    return sorted(p.name for p in WILD.glob("*.yaml")) if WILD.is_dir() else []


# What import makes of each real manifest: "converted", or a fragment of its first refusal. A change in
# what import converts or refuses shows here, case by case.
WILD_EXPECTED = {
    "001": "no command: the TFJob runs its image's own entrypoint", "002": "no PS replica (Worker x 2)",
    "003": "no PS replica", "004": "no PS replica", "005": "no PS replica", "006": "no PS replica",
    "007": "no command", "008": "converted", "009": "the command is shell code", "010": "is a placeholder (envsubst",
    "011": "no PS replica", "012": "no PS replica", "013": "converted", "014": "no command",
    "015": "no PS replica", "016": "spec.tfReplicaSpecs: no replicas", "017": "converted",
    "018": "the command is shell code", "019": "converted", "020": "no command",
    "021": "a template ({{", "022": "a template ({{", "023": "a template (${trialParameters.",
    "024": "no PS replica", "025": "converted", "026": "no command", "027": "converted", "028": "no command",
    "029": "no command", "030": "'tensorflow.org/v1alpha1' is not a Kubeflow TFJob API",
    "031": "YAML syntax", "032": "'training.kubedl.io/v1alpha1' is not a Kubeflow TFJob API",
    "033": "duplicate key 'imagePullPolicy'", "034": "the command is shell code", "035": "the command is shell code",
    "036": "the command is shell code", "037": "no TFJob here: the file holds ConfigMap v1",
    "038": "no TFJob here: the file holds Deployment", "039": "no TFJob here: the file holds Job batch/v1",
    "040": "a template ({%",
}


def test_the_wild_corpus_is_there():
    if not WILD.is_dir():
        pytest.skip(f"{WILD} is missing: the real TFJobs (shared/tfjobs-wild) live beside the repository, not in it")
    assert {name[:3] for name in wild_cases()} == set(WILD_EXPECTED)


@pytest.mark.parametrize("name", wild_cases() or ["(none)"])
def test_a_real_manifest_converts_and_round_trips_or_is_refused_by_name(name):
    if not WILD.is_dir():
        pytest.skip(f"{WILD} is missing: the real TFJobs (shared/tfjobs-wild) live beside the repository, not in it")
    text = (WILD / name).read_text(encoding="utf-8")
    body = text.split(MARKER, 1)[1]  # the manifest as its authors wrote it, without the corpus's header
    result = files.import_text(body, name)
    expected = WILD_EXPECTED[name[:3]]
    if expected == "converted":
        assert not result.problems, [p.format() for p in result.problems]
        assert result.jobs
        checked = check.all_jobs(result.jobs)
        assert checked.problems == []
        for job in result.jobs:
            assert_valid_and_round_trips(job)
            assert all(row.line > 0 for row in job.rows)
    else:
        assert not result.jobs and result.problems
        assert expected in result.problems[0].message or expected in result.problems[0].format(), \
            [p.format() for p in result.problems]
        for problem in result.problems:  # one located line each: file:line: field: message
            assert problem.file == name and problem.line > 0, problem.format()

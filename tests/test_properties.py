"""Properties over generated inputs (hypothesis): what holds for every intent, not only for the examples.

- Every valid intent becomes objects that pass kubernetes-validate --strict for Kubernetes 1.30
  (the oldest supported) and their CRDs, whose TF_CONFIG addresses are unique and each names
  the one pod that has it (read back through backends.decode, as the Job controller and the
  kubelet would make the pods), and whose names fit 63 characters; an intent that is not
  valid gets located errors instead.
- Mutated job files and ResourceLists, through the real entry points (`tfjobgen validate`,
  `tfjobgen krm` in both calling conventions), never give a traceback: exit 0, or exit 1
  with every problem located.
- The schema's fast yes/no check (schema_fast.valid) answers as jsonschema does.

Examples are derandomized and bounded (CI runs the same ones every time, in seconds); run
with HYPOTHESIS_PROFILE=deep for many more.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import re
import sys
import tempfile
from pathlib import Path

import pytest
from cluster_dns import ClusterDNS
from conftest import SAMPLE
from gitops.gitops_support import crd_dir
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs import JOB_FILES
from tfjobgen import backends, cli
from tfjobgen.expand import emit, pipeline
from tfjobgen.inputs import intents, schema, schema_fast, source
from tfjobgen.shared import contract

settings.register_profile("ci", max_examples=40, derandomize=True, deadline=None, database=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("deep", max_examples=500, deadline=None, database=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

OLDEST = "1.30"
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# A problem line: `file:line: ...`, `file: ...` (a whole file) or `Kind namespace/name: ...` (an object).
LOCATED = re.compile(r"^(\S+\.ya?ml:\d+|<stdin>(:\d+)?|\S+\.ya?ml|([A-Z]\w*|object)( ([^/: ]*/)?[^/: ]+)?): \S")  # file:line, or Kind ns/name


# ---- valid intents ----------------------------------------------------------------------------------

names = st.one_of(st.from_regex(r"[a-z]([-a-z0-9]{0,14}[a-z0-9])?", fullmatch=True),
                  st.from_regex(r"[a-z][-a-z0-9]{44,58}[a-z0-9]", fullmatch=True))  # near the 63-character limit
memory = st.sampled_from(["512Mi", "1Gi", "4Gi", "16Gi"])


@st.composite
def roles(draw, qos: str, name: str) -> dict:
    role = {"cpu": draw(st.integers(1, 8)) if qos == "cpuset" else draw(st.sampled_from([1, "500m", "1500m", 2.5])),
            "memory": draw(memory)}
    if name in ("ps", "worker"):
        role["replicas"] = draw(st.integers(1, 6))
    if qos == "shared" and draw(st.booleans()):
        role["cpuLimit"] = draw(st.sampled_from([2, "2500m", 4]))
    if draw(st.booleans()):
        role["threads"] = {"intraOp": draw(st.integers(1, 8)), "interOp": draw(st.integers(2, 8))}
    return role


@st.composite
def intent_documents(draw) -> dict:
    qos = draw(st.sampled_from(["cpuset", "shared"]))
    api = draw(st.sampled_from(["tf2", "tf1"]))
    protocol = draw(st.sampled_from(["grpc", "grpc", "star_server", "star_server_lite"])) if api == "tf1" else "grpc"
    spec = {"image": draw(st.sampled_from(["registry.example.com/ml/model:1.4", "python:3.11",
                                           "registry.example.com/ml/x@sha256:" + "a" * 64])),
            "api": api, "protocol": protocol, "qos": qos,
            "roles": {role: draw(roles(qos, role)) for role in ("ps", "worker")},
            "topology": {"mode": draw(st.sampled_from(["colocated", "isolated", "spread", "none"])),
                         "workersPerServer": draw(st.integers(1, 6)),
                         "spread": draw(st.sampled_from(["preferred", "required"]))}}
    for role in ("chief", "evaluator"):
        if draw(st.booleans()):
            spec["roles"][role] = draw(roles(qos, role))
    if draw(st.booleans()):
        spec["command"] = ["python", "/app/train.py"]
        spec["args"] = draw(st.lists(st.sampled_from(["--steps", "100", "--model_dir=/tmp/m", "ünïcode"]),
                                     max_size=3))
    if draw(st.booleans()):
        spec["env"] = [{"name": "MODEL_NAME", "value": draw(st.text(max_size=20))}]
    meta = {"name": draw(names), "namespace": draw(st.from_regex(r"[a-z]([-a-z0-9]{0,10}[a-z0-9])?",
                                                                 fullmatch=True))}
    if draw(st.booleans()):
        meta["labels"] = {"team": draw(st.sampled_from(["ranking", "ads", "a" * 63]))}
    return {"apiVersion": "tfjobgen.dev/v1alpha1", "kind": "TrainingJob", "metadata": meta, "spec": spec}


@functools.cache
def _kubernetes_validate():
    import kubernetes_validate.utils as kv

    kv.schema_contents = functools.lru_cache(maxsize=None)(kv.schema_contents)  # as test_kustomize_e2e does
    return kv


@functools.cache
def _crd_schemas() -> dict:
    from tfjobgen.gitops import crds

    return crds.load(crd_dir())


def _as_written(document: dict) -> intents.Intent:
    """The intent as a user would have written it in job.yaml (with the line of every field)."""
    [parsed] = source.parse_documents(emit.to_yaml([document]), "job.yaml")
    return intents.Intent(parsed.data, "job.yaml", parsed)


@given(intent_documents())
def test_a_valid_intent_becomes_valid_objects_whose_tf_config_resolves(document):
    from tfjobgen.gitops import crds

    schemas, kv = _crd_schemas(), _kubernetes_validate()
    expansion = pipeline.expand([_as_written(document)], pipeline.load_profile(None))
    if not expansion.ok:  # refused: every error says where
        errors = [p for p in expansion.problems if p.is_error]
        assert errors and all(p.file == "job.yaml" and p.line >= 1 for p in errors), [p.format() for p in errors]
        return
    [objects] = expansion.objects
    for obj in objects:
        assert crds.crd_errors(obj, schemas) in (None, []), obj["kind"]
        kv.validate(obj, OLDEST, strict=True)  # raises ValidationError with the path
        meta = obj["metadata"]
        assert len(meta["name"]) <= 63 and DNS_LABEL.match(meta["name"]), meta["name"]
        assert all(len(str(v)) <= 63 for v in meta.get("labels", {}).values()), meta["labels"]
    [job] = backends.decode(objects)
    dns = ClusterDNS(objects, job.pods)
    addresses: dict[str, str] = {}
    for pod in job.pods:
        assert len(pod.hostname) <= 63 and DNS_LABEL.match(pod.hostname), pod.hostname
        config = json.loads(pod.env[contract.TF_CONFIG])
        assert config["task"] == {"type": pod.role, "index": pod.index}
        for role, tasks in config["cluster"].items():
            for index, address in enumerate(tasks):
                assert addresses.setdefault(f"{role}:{index}", address) == address, "one cluster for every pod"
    assert len(set(addresses.values())) == len(addresses), "every task has its own address"
    by_task = {pod.task: pod for pod in job.pods}
    for task, address in addresses.items():  # through the pod's DNS search path, to exactly that task's pod
        assert dns.resolve(address.rsplit(":", 1)[0], job.namespace) is by_task[task], f"{address} is not {task}"


# ---- the fast schema check agrees with jsonschema ----------------------------------------------------

json_values = st.recursive(st.none() | st.booleans() | st.integers(-10, 10**6) | st.floats(allow_nan=False)
                           | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                       max_size=3), max_leaves=8)


@st.composite
def near_valid(draw) -> dict:
    """A valid intent with one part replaced by something else: mostly invalid, in every way the schema has."""
    document = json.loads(json.dumps(draw(intent_documents())))
    node, key = _random_place(draw, document)
    if draw(st.booleans()) and isinstance(node, dict) and key in node:
        del node[key]
    else:
        node[key] = draw(json_values)
    return document


def _random_place(draw, document):
    node, key = document, "spec"
    for _ in range(draw(st.integers(0, 4))):
        child = node[key] if (isinstance(node, dict) and key in node) or isinstance(node, list) else None
        if isinstance(child, dict) and child:
            node, key = child, draw(st.sampled_from(sorted(child) + ["unknownField"]))
        elif isinstance(child, list) and child:
            node, key = child, draw(st.integers(0, len(child) - 1))
        else:
            break
    return node, key


@given(st.one_of(near_valid(), intent_documents()))
def test_the_fast_schema_check_answers_as_jsonschema_does(document):
    import jsonschema

    root = schema.load(schema.TRAINING_JOB)
    fast = schema_fast.valid(document, root)
    assert fast in (None, jsonschema.Draft202012Validator(root).is_valid(document))
    assert (schema.check(document, schema.TRAINING_JOB) == []) == jsonschema.Draft202012Validator(root).is_valid(
        document)


# ---- mutation fuzzing through the command line ------------------------------------------------------

FRAGMENTS = ["foo: [1, {a: b}]", "&anchor x", "*anchor", "!!binary aGVsbG8=", "? [complex, key]", "- item", "\t",
             "%YAML 1.1", "---", "...", "\x00", "cpu: 1e999", "[" * 80 + "]" * 80, "{", "ü: ü", "yes", "0x1F",
             "1_000", ":", "replicas: -1", "name: " + "x" * 300, "kind: TrainingJob", "apiVersion: tfjobgen.dev/v9",
             "metadata: null", "spec: []", "  roles: {ps: 1}", "!!python/object:os.system echo", "<<: {a: 1}",
             "key: 2001-01-01", "key: .nan", "key: ~", "\ufeff", "'unterminated", '"\\uD800"']


@st.composite
def mutated_text(draw, text: str) -> str:
    lines = text.splitlines()
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(lines)))
        action = draw(st.sampled_from(["insert", "delete", "replace", "indent"]))
        if action == "insert" or not lines:
            lines.insert(at, draw(st.sampled_from(FRAGMENTS) | st.text(max_size=30)))
        elif action == "delete":
            del lines[min(at, len(lines) - 1)]
        elif action == "replace":
            line = lines[min(at, len(lines) - 1)]
            start = draw(st.integers(0, len(line)))
            lines[min(at, len(lines) - 1)] = line[:start] + draw(st.text(max_size=10)) + line[start + 3:]
        else:
            lines[min(at, len(lines) - 1)] = "  " + lines[min(at, len(lines) - 1)]
    return "\n".join(lines) + "\n"


def _cli(argv: list[str], stdin: str = "") -> tuple[int, str, str]:
    """tfjobgen's real entry point, in-process (a test run takes no process start per example)."""
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin.encode("utf-8", "surrogatepass")))
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(argv)
    finally:
        sys.stdin = saved
    return code, out.getvalue(), err.getvalue()


def _assert_located(code: int, stderr: str, summaries: tuple[str, ...] = ()) -> None:
    assert code in (0, 1), f"exit {code}:\n{stderr}"
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    if code == 1:
        lines = [line for line in stderr.splitlines() if line and not line.startswith(summaries)]
        assert lines, "an exit 1 says why"
        for line in lines:
            assert LOCATED.match(line), f"not located: {line!r}"


WORK = Path(tempfile.mkdtemp(prefix="tfjobgen-properties-"))
JOB_TEXTS = [p.read_text() for p in JOB_FILES]


@given(st.sampled_from(JOB_TEXTS).flatmap(mutated_text))
def test_tfjobgen_validate_never_crashes_on_a_mutated_job_file(text):
    path = WORK / "job.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    code, _, stderr = _cli(["validate", str(path)])
    _assert_located(code, stderr, summaries=("1 TrainingJob(s) checked", "0 TrainingJob(s) checked"))


PROFILE = SAMPLE / "overlays" / "seed-80c" / "cluster-profile.yaml"
OTHER = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n  namespace: ml\ndata:\n  on: 'yes'\n"


@given(st.sampled_from(JOB_TEXTS).map(lambda job: OTHER + "---\n" + job).flatmap(mutated_text))
def test_the_kustomize_plugin_never_crashes_on_a_mutated_stream(text):
    code, stdout, stderr = _cli(["krm", str(PROFILE)], stdin=text)
    _assert_located(code, stderr, summaries=("tfjobgen: ",))
    if code == 1:
        assert stdout == "", "a failed build hands kustomize nothing"


def _resource_list(job: str) -> dict:
    items = [source.parse_stream(OTHER, "other")[0], source.parse_stream(job, "job")[0]]
    config = source.parse_stream(PROFILE.read_text(), "profile")[0]
    return {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": items, "functionConfig": config}


@st.composite
def mutated_resource_lists(draw) -> str:
    resource_list = _resource_list(draw(st.sampled_from(JOB_TEXTS)))
    node, key = resource_list, draw(st.sampled_from(["items", "functionConfig", "kind", "apiVersion"]))
    for _ in range(draw(st.integers(0, 5))):
        child = node.get(key) if isinstance(node, dict) else node[key] if isinstance(node, list) else None
        if isinstance(child, dict) and child:
            node, key = child, draw(st.sampled_from(sorted(map(str, child))))
        elif isinstance(child, list) and child:
            node, key = child, draw(st.integers(0, len(child) - 1))
        else:
            break
    if draw(st.booleans()) and isinstance(node, dict):
        node.pop(key, None)
    else:
        node[key] = draw(json_values)
    text = emit.to_yaml([resource_list])
    return draw(mutated_text(text)) if draw(st.booleans()) else text


@given(mutated_resource_lists())
def test_the_krm_function_never_crashes_on_a_mutated_resource_list(text):
    code, stdout, stderr = _cli(["krm"], stdin=text)
    _assert_located(code, stderr, summaries=("tfjobgen: ",))
    [output] = source.parse_stream(stdout, "<stdout>")
    assert output["kind"] == "ResourceList", "kpt always gets a ResourceList back"
    if code == 1:
        assert output["results"] and all(r["severity"] in ("error", "warning") for r in output["results"])


def test_the_plugins_pre_filter_never_misses_an_intent():
    """The legacy plugin parses only documents that may be ours; every kind of intent matches."""
    for text in JOB_TEXTS:
        for document in source.parse_stream(text, "job"):
            if intents.kind_of(document) != "other":
                assert intents.may_be_ours(emit.to_yaml([document]))


@pytest.fixture(scope="module", autouse=True)
def _cleanup():
    yield
    import shutil

    shutil.rmtree(WORK, ignore_errors=True)

"""Shared test helpers: the repository, the real tools, and ways to run tfjobgen.

Tests use the real kubectl (its embedded kustomize), kpt, kubernetes-validate
and the upstream CRDs. A missing tool skips its tests with the reason, except
under `.ci/run` (TFJOBGEN_REQUIRE_TOOLS=1), where a missing tool is a failure.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
# The tool's tests read a sample team's data of their own, never the repository's jobs/, overlays/, bases/,
# argocd/base/ or rendered/: those are the team's (a team replaces them with its own; `make repo-checks`
# checks whatever they hold). The sample started as a copy of the seed's examples and may diverge from them.
SAMPLE = TESTS / "fixtures" / "sample-repo"
# Another team's data (64-core servers, its own registry, namespace and clusters): a team adopting the tool.
OTHER_TEAM = TESTS / "fixtures" / "other-team"
OTHER_TEAM_JOBS = {"ctr-daily", "dnn-rerank", "embedding-refresh", "two-tower"}  # its jobs/, by name
JOBS = SAMPLE / "jobs"
OVERLAYS = sorted(p.parent.name for p in (SAMPLE / "overlays").glob("*/kustomization.yaml"))
PLUGIN_HOME = REPO / "plugins"
# A working tree is the tool's parts, from this repository, with a team's data beside them (sample_repo()).
TOOL_PARTS = ("generator", "plugins", "schemas", "argocd", "pyproject.toml")
DATA_PARTS = ("jobs", "bases", "overlays", "argocd/base", "rendered")
REQUIRE_TOOLS = os.environ.get("TFJOBGEN_REQUIRE_TOOLS") == "1"

sys.path.insert(0, str(REPO / "generator"))  # the package, even without an install

from tfjobgen.cluster import home as cluster_home  # noqa: E402 (standard library only)

# Temporary files of this session, its own and its children's (kustomize, TensorFlow, tfjobgen), go
# to one folder removed when the session ends: several tools leave theirs behind when they fail or are
# stopped by a signal (a failed kustomize plugin's config, autograph's modules, the Kubernetes
# client's certificate files). Made once, by the process that runs the session; pytest-xdist's
# workers inherit it through TMPDIR. (pytest's tmp_path is in it too: --basetemp keeps them.)
_MACHINE_TEMP = os.environ.setdefault("TFJOBGEN_TESTS_MACHINE_TEMP", tempfile.gettempdir())
_SESSION_TEMP = None if "PYTEST_XDIST_WORKER" in os.environ else tempfile.mkdtemp(prefix="tfjobgen-tests-")
if _SESSION_TEMP:
    os.environ["TMPDIR"] = tempfile.tempdir = _SESSION_TEMP

# Local clusters a test starts, in its own process or a child, live in a folder of this session (of this
# worker, under pytest-xdist), never among the user's (~/.local/state/tfjobgen/clusters): two sessions on
# one machine never meet. It is outside the session's temporary folder: a cluster a failed test left up
# keeps its folder, so that `tfjobgen cluster down` can still stop it. Each cluster's `down` removes
# its own folder; the session's goes at exit when nothing is left in it.
os.environ[cluster_home.HOME_ENV] = tempfile.mkdtemp(prefix="tfjobgen-clusters-", dir=_MACHINE_TEMP)


@atexit.register
def _remove_session_folders() -> None:
    with contextlib.suppress(OSError):  # not empty: a cluster still up, or its debris, stays to be seen
        os.rmdir(os.environ[cluster_home.HOME_ENV])
    if _SESSION_TEMP:
        shutil.rmtree(_SESSION_TEMP, ignore_errors=True)


# ---- test tiers -------------------------------------------------------------------------------
#
# Each test is marked with the slow tools it reaches, found by reading code rather than by a marker
# in every test file: a helper declares what it runs with @uses(...), and a test that reaches such a
# helper (directly, through its fixtures, or through other functions of the test modules) gets the
# marker. A test module that holds TensorFlow itself marks every test that uses it. Tests with none
# of these are `fast`:  pytest -m fast  (make test-fast) is the edit loop; make test runs everything.

TOOL_MARKERS = {
    "kubectl": "runs kubectl's kustomize (directly, or through hydrate, diff or the Argo CD plugin)",
    "kpt": "runs kpt",
    "git": "creates git repositories",
    "tensorflow": "imports TensorFlow or starts TensorFlow processes",
    "timeouts": "waits for real retries and timeouts over sockets (seconds per test)",
    "hypothesis": "runs many generated examples (property tests)",
    "checkov": "runs checkov",
    "prometheus": "runs Debian's prometheus or promtool",
    "cluster": "starts a local cluster: etcd, kube-apiserver, controllers, KWOK (make cluster-tools builds them)",
    "images": "runs a built container image with runc (make images builds them)",
    "nodes": "starts real nodes: kubelets, containerd, CNI, CoreDNS, kube-router, a registry (root; make images)",
    "act": "runs a GitHub workflow under nektos/act (make cluster-tools builds it; make test-act)",
    "slow": "takes seconds of CPU: starts tfjobgen in a process of its own, or reads every rendered cluster",
}
FAST_MARKER = "fast"


def uses(*tools: str):
    """Declare the slow tools a helper runs (see TOOL_MARKERS)."""
    unknown = set(tools) - set(TOOL_MARKERS)
    assert not unknown, f"unknown tool markers {unknown}"

    def declare(function):
        function.tools_used = frozenset(tools)
        return function
    return declare


def _tools_reached(function, seen: set) -> set[str]:
    """The tools a test function reaches through the functions of the test suite it names."""
    function = getattr(function, "__wrapped__", function)
    code = getattr(function, "__code__", None)
    if code is None or function in seen:
        return set()
    seen.add(function)
    tools = set(getattr(function, "tools_used", ()))
    names, pending = set(), [code]
    while pending:  # the function's own names and those of functions nested in it (lambdas, closures)
        current = pending.pop()
        names.update(current.co_names)
        pending += [c for c in current.co_consts if isinstance(c, types.CodeType)]
    for name in names:
        value = function.__globals__.get(name)
        if isinstance(value, types.ModuleType):
            if value.__name__.partition(".")[0] == "tensorflow":
                tools.add("tensorflow")
            elif str(TESTS) in (getattr(value, "__file__", None) or ""):  # a support module: module.helper(...)
                for attribute in names:
                    helper = getattr(value, attribute, None)
                    if isinstance(helper, types.FunctionType):
                        tools |= _tools_reached(helper, seen)
        elif isinstance(value, types.FunctionType) and str(TESTS) in (value.__code__.co_filename or ""):
            tools |= _tools_reached(value, seen)
        elif getattr(value, "tools_used", None):
            tools |= value.tools_used
    return tools


def pytest_addoption(parser):
    parser.addoption("--slowest-file", metavar="PATH", default=None,
                     help="write the slowest tests and test groups of this run, with their times, to PATH "
                          "(make test: build/test-durations.txt) and print them at the end")


def pytest_configure(config):
    for name, what in TOOL_MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {what}")
    config.addinivalue_line("markers", f"{FAST_MARKER}: needs none of {', '.join(TOOL_MARKERS)} (make test-fast)")
    config.addinivalue_line("markers", f"{ANY_PROCESS}: the module's shared fixtures may be set up once per process, "
                                       "so its tests go to whichever process is free (--dist loadgroup)")


def _imports_tensorflow(path: Path) -> bool:
    """A test module that imports TensorFlow when it is collected (at its top level)."""
    import ast

    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            modules = [a.value for a in node.value.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        else:
            continue
        if any(m.partition(".")[0] == "tensorflow" for m in modules):
            return True
    return False


def pytest_ignore_collect(collection_path, config):
    """Under -m fast, skip importing modules that import TensorFlow (3 s) only to deselect their tests."""
    if config.option.markexpr.strip() == FAST_MARKER and collection_path.suffix == ".py" \
            and collection_path.name.startswith("test_") and _imports_tensorflow(collection_path):
        return True
    return None


def pytest_collectreport(report):
    """Under .ci/run a module skipped at import (pytest.importorskip) fails instead, like a missing tool."""
    if REQUIRE_TOOLS and report.skipped:
        report.outcome = "failed"
        report.longrepr = f"{report.nodeid}: skipped at collection: {report.longrepr} (TFJOBGEN_REQUIRE_TOOLS=1)"


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups (--dist loadgroup)
def pytest_collection_modifyitems(config, items):
    for item in items:
        _group_by_shared_fixtures(item)
        seen: set = set()
        tools = _tools_reached(getattr(item, "function", None), seen)
        for definitions in item._fixtureinfo.name2fixturedefs.values():
            for definition in definitions:
                tools |= _tools_reached(definition.func, seen)
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            tools.add("hypothesis")
        tools |= {m.name for m in item.iter_markers() if m.name in TOOL_MARKERS}  # declared in the test itself
        for tool in sorted(tools) or [FAST_MARKER]:
            item.add_marker(tool)


def need(tool: str, found: str | None, why: str = "") -> str:
    """The tool's path, or skip (fail under .ci/run) when it is missing."""
    if found:
        return found
    message = f"{tool} is not available{': ' + why if why else ''}"
    if REQUIRE_TOOLS:
        pytest.fail(message + " (TFJOBGEN_REQUIRE_TOOLS=1)")
    pytest.skip(message)


# ../shared/crds beside the repository (where CI fetches them), or TFJOBGEN_CRD_DIR (a worktree elsewhere).
CRD_DIR = Path(os.environ.get("TFJOBGEN_CRD_DIR") or REPO.parent / "shared" / "crds")


def crd_dir() -> Path:
    """The CRDs objects are validated against, one file per CRD: each from the release the local cluster runs
    (cluster-tools/versions.yaml's assets, once `make cluster-tools` built them), the others (Prometheus
    Operator's: no family builds it) from the upstream folder. Skips (fails under .ci/run) when that is absent."""
    upstream = Path(need("upstream CRDs", str(CRD_DIR) if CRD_DIR.is_dir() else None,
                         f"expected the upstream CRD folder at {CRD_DIR} (../shared/crds from the repository root, "
                         "or set TFJOBGEN_CRD_DIR)"))
    return _once_a_session("tfjobgen-crds", lambda merged: _merge_crds(upstream, merged))  # seconds: once a session


def _merge_crds(upstream: Path, merged: Path) -> None:
    built = built_crds()
    for path in sorted(upstream.glob("*.y*ml")):
        texts = [built.get(_crd_name(document)) or yaml.dump(document, Dumper=_YAML_DUMPER)
                 for document in yaml.load_all(path.read_text(), Loader=_YAML_LOADER) if document]
        (merged / path.name).write_text("---\n".join(texts))


def _once_a_session(name: str, make) -> Path:
    """A folder of the session's temporary folder, which pytest-xdist's processes share, made by the first process
    that asks (`make(folder)`) while the others wait for it: what each process made for itself before. Made aside,
    then renamed: never half there."""
    folder = Path(tempfile.gettempdir()) / name
    with open(folder.with_name(name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not folder.is_dir():
            staging = Path(tempfile.mkdtemp(prefix=name + "-", dir=folder.parent))
            try:
                make(staging)
                os.rename(staging, folder)
            finally:
                shutil.rmtree(staging, ignore_errors=True)  # gone when renamed; what a failed `make` left
    return folder


def built_crds() -> dict[str, str]:
    """CRD name -> its YAML, from every built family's assets (the releases the local cluster installs by
    default: not another release of a family, such as the JobSet a 1.30 cluster runs)."""
    from tfjobgen.artifacts import programs

    found = {}
    for family in programs.families():
        if family.release_of or not family.installed_in.is_dir():
            continue
        for asset in family.assets:
            root = family.asset(asset)
            for path in sorted([root] if root.is_file() else root.rglob("*.yaml")):
                for document in yaml.load_all(path.read_text(), Loader=_YAML_LOADER):
                    if isinstance(document, dict) and document.get("kind") == "CustomResourceDefinition":
                        found[_crd_name(document)] = yaml.dump(document, Dumper=_YAML_DUMPER)
    return found


def _yaml_loader():
    from tfjobgen.kit import crd_yaml  # libyaml's where there is one: the families' CRDs are megabytes

    return crd_yaml.Loader


_YAML_LOADER = _yaml_loader()
_YAML_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _crd_name(document: dict) -> str:
    return str((document.get("metadata") or {}).get("name", ""))


@uses("kubectl")
def kubectl() -> str:
    return need("kubectl", shutil.which("kubectl"))


@uses("kpt")
def kpt() -> str:
    candidates = [shutil.which("kpt"), "/usr/lib/google-cloud-sdk/bin/kpt"]
    return need("kpt", next((c for c in candidates if c and os.access(c, os.X_OK)), None),
                "it comes with the google-cloud-cli-kpt package (dpkg -L google-cloud-cli-kpt)")


def sample_repo(destination: Path, data: Path = SAMPLE, parts: tuple[str, ...] = DATA_PARTS) -> Path:
    """A working tree at `destination`: the tool's parts copied from this repository, then a team's data (`parts`
    of `data`, the sample's unless told) in place of the repository's own. The one place tests assemble a tree.
    `destination` may be a clone of this checkout already (a git repository to commit to)."""
    destination.mkdir(parents=True, exist_ok=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in TOOL_PARTS:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, destination / name, ignore=ignore, dirs_exist_ok=True)
        else:
            shutil.copy(REPO / name, destination / name)
    for name in DATA_PARTS:  # argocd/base came with argocd/: the repository's project is the team's data too
        shutil.rmtree(destination / name, ignore_errors=True)
    for name in parts:
        if (data / name).is_dir():
            shutil.copytree(data / name, destination / name, ignore=ignore)
    return destination


@pytest.fixture(scope="session")
def sample_tree(tmp_path_factory) -> Path:
    """The sample repository as a working tree (sample_repo()), made once a process: treat it as read-only."""
    return sample_repo(tmp_path_factory.mktemp("sample") / "repo")


def tfjobgen_command() -> list[str]:
    return [sys.executable, "-m", "tfjobgen"]


@uses("slow")
def run_tfjobgen(*args: str, stdin: str | None = None, cwd: Path | None = None, env: dict | None = None):
    """Run the CLI as a user would, in its own process (in the sample repository unless told)."""
    full_env = {**os.environ, "PYTHONPATH": str(REPO / "generator"), **(env or {})}
    return subprocess.run(tfjobgen_command() + list(args), input=stdin, capture_output=True, text=True,
                          cwd=cwd or SAMPLE, env=full_env, timeout=120)


@uses("kubectl")
def kustomize_build(directory: Path, *extra: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`kubectl kustomize --enable-alpha-plugins` with the repository's plugin home."""
    full_env = {**os.environ, "KUSTOMIZE_PLUGIN_HOME": str(PLUGIN_HOME), **(env or {})}
    venv_bin = str(Path(sys.executable).parent)
    full_env["PATH"] = venv_bin + os.pathsep + full_env.get("PATH", "")
    return subprocess.run([kubectl(), "kustomize", "--enable-alpha-plugins", *extra, str(directory)],
                          capture_output=True, text=True, env=full_env, timeout=300)


def load_yaml_stream(text: str) -> list[dict]:
    import yaml

    from tfjobgen.inputs.yamlstyle import Loader

    return [d for d in yaml.load_all(text, Loader=Loader) if d is not None]


@pytest.fixture(scope="session")
def built_overlays() -> dict[str, str]:
    """Every overlay built once a session with kubectl kustomize (_once_a_session: each process built them, seconds,
    before): name -> output text."""
    def build(folder: Path) -> None:
        for overlay in OVERLAYS:
            proc = kustomize_build(SAMPLE / "overlays" / overlay)
            assert proc.returncode == 0, f"overlays/{overlay} failed to build:\n{proc.stderr}"
            (folder / f"{overlay}.yaml").write_text(proc.stdout, encoding="utf-8")

    built = _once_a_session("tfjobgen-built-overlays", build)
    return {overlay: (built / f"{overlay}.yaml").read_text(encoding="utf-8") for overlay in OVERLAYS}


def render(*paths, profile: str | None = None) -> list[dict]:
    """Objects the job files become (in-process, the same pipeline kustomize runs)."""
    from tfjobgen.expand import pipeline

    intents, problems = pipeline.load_intents([str(p) for p in paths])
    expansion = pipeline.expand(intents, pipeline.load_profile(str(profile) if profile else None))
    errors = [p.format() for p in problems + expansion.problems if p.is_error]
    assert not errors, "\n".join(errors)
    return expansion.in_order()


def problems_of(text: str, tmp_path, profile: str | None = None, name: str = "job.yaml"):
    """Every problem `tfjobgen validate` finds in a job file with this text (in-process)."""
    from tfjobgen.expand import pipeline

    path = tmp_path / name
    path.write_text(text)
    intents, problems = pipeline.load_intents([str(path)])
    loaded = pipeline.load_profile(str(profile) if profile else None)
    for intent in intents:
        problems += pipeline.validate(intent, loaded)[1]
    return problems


@pytest.fixture(scope="session")
def overlay_objects(built_overlays) -> dict[str, list[dict]]:
    """The built overlays, parsed once: name -> objects (treat as read-only)."""
    return {name: load_yaml_stream(text) for name, text in built_overlays.items()}


# ---- which tests share a process (--dist loadgroup) -------------------------------------------
#
# Under `--dist loadgroup` pytest-xdist sends each test to whichever process is free, except tests of
# one xdist_group, which go to one process in turn. A test that uses a fixture set up once for several
# tests (module or class scope: a local cluster, a git repository, a trained model) is grouped with the
# other tests of its module that use it with the same parameters, so that the fixture is set up once,
# not once per process. Every other test goes where there is room. A module may mark its tests with
# finer groups itself (tests/cluster/test_backends_real.py: one per cluster setting).

SHARED_SCOPES = ("module", "class", "package")
# A module whose shared fixture each process may set up for itself (a cluster each test reshapes) marks
# its tests so: they go wherever there is room.
ANY_PROCESS = "any_process"


def _group_by_shared_fixtures(item) -> None:
    if any(item.iter_markers("xdist_group")) or any(item.iter_markers(ANY_PROCESS)):
        return
    shared = sorted(name for name, definitions in item._fixtureinfo.name2fixturedefs.items()
                    if any(d.scope in SHARED_SCOPES for d in definitions))
    if not shared:
        return
    params = getattr(getattr(item, "callspec", None), "params", {})
    keys = [f"{name}={params[name]}" for name in shared if name in params]
    module = item.nodeid.partition("::")[0]
    item.add_marker(pytest.mark.xdist_group(module + (f"[{','.join(keys)}]" if keys else "")))


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's worker sends its collection to be scheduled
def pytest_collection_finish(session):
    """pytest-xdist 3.8 names a grouped test `<id>@<group>` (what the loadgroup scheduler groups by) by setting the
    item's `_nodeid`, which pytest 9 no longer reads (a node's id is `_id`): without this, --dist loadgroup spreads
    every test as --dist load does, and each process starts its own copy of a module's cluster."""
    for item in session.items:
        grouped = getattr(item, "__dict__", {}).get("_nodeid")
        if grouped and hasattr(item, "_id") and item.nodeid != grouped:
            from _pytest.nodeid import NodeId

            item._id = NodeId.parse(grouped)


# ---- the slowest tests of a run (--slowest-file) -------------------------------------------------

SLOWEST = 20
_STARTED = time.monotonic()


def pytest_terminal_summary(terminalreporter, config):
    """The slowest tests (setup, call and teardown together: a module's cluster start counts in its first
    test's setup) and the slowest groups (what one process runs in turn), written and printed."""
    path = config.getoption("slowest_file", None)
    if not path or hasattr(config, "workerinput"):
        return
    tests: dict[str, float] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "when", None) in ("setup", "call", "teardown"):
                tests[report.nodeid] = tests.get(report.nodeid, 0.0) + report.duration
    groups: dict[str, float] = {}
    for nodeid, seconds in tests.items():
        test, _, group = nodeid.partition("@")
        key = f"group {group}" if group else f"alone {test}"
        groups[key] = groups.get(key, 0.0) + seconds
    lines = [f"# pytest {' '.join(config.invocation_params.args)}",
             f"# {len(tests)} tests, {sum(tests.values()):.0f} s of tests, "
             f"{time.monotonic() - _STARTED:.0f} s wall, "
             f"{getattr(config.option, 'numprocesses', None) or 1} process(es)",
             f"# the {SLOWEST} slowest tests (setup + call + teardown, seconds)"]
    lines += [f"{seconds:8.1f}  {nodeid}" for nodeid, seconds in sorted(tests.items(), key=lambda t: -t[1])[:SLOWEST]]
    lines += ["# the 10 slowest units of scheduling (an xdist_group runs in one process in turn)"]
    lines += [f"{seconds:8.1f}  {key}" for key, seconds in sorted(groups.items(), key=lambda g: -g[1])[:10]]
    folders: dict[str, float] = {}  # where the run's time goes: the suite is bound by its sum, not one group
    for nodeid, seconds in tests.items():
        folder = nodeid.split("::")[0].rsplit("/", 1)[0]
        folders[folder] = folders.get(folder, 0.0) + seconds
    lines += ["# seconds of tests per folder"]
    lines += [f"{seconds:8.1f}  {folder}" for folder, seconds in sorted(folders.items(), key=lambda f: -f[1])]
    every = ["# every test"] + [f"{seconds:8.1f}  {nodeid}" for nodeid, seconds in
                                sorted(tests.items(), key=lambda t: -t[1])]
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("\n".join(lines + every) + "\n")
    terminalreporter.write_sep("=", f"slowest tests (written to {path}, with every test)")
    for line in lines:
        terminalreporter.write_line(line)

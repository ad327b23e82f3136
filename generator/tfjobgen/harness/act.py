"""Run this repository's GitHub workflows for real with nektos/act, on this machine, nothing leaving it.

act (built by `make cluster-tools` into the tools cache: cluster-tools/versions.yaml, family `act`) runs a
workflow's jobs on the host (`-P ubuntu-24.04=-self-hosted`, no Docker engine), on a `pull_request` event
against a git repository of its own: a copy of this one with a base branch and a pull-request branch.

- `actions/checkout` needs nothing: act copies the working tree, `.git` included, into the job's workspace.
- Every other `uses:` goes to a stand-in under tests/act/actions (`--local-repository`, so act fetches
  nothing); the programs' cache is a folder of the test's (ACT_STANDIN_CACHE).
- The comment step talks to GitHubStandIn (harness/github_api.py), a loopback stand-in of GitHub's issue-comment
  endpoints, through GITHUB_API_URL.
- act's cache server is off (--no-cache-server), its artifact server is never started (no path given), and
  its check for notices (api.nektosact.com) is off (ACT_DISABLE_VERSION_CHECK=1).
- CRDs are copied from ../shared/crds or TFJOBGEN_CRD_DIR (TFJOBGEN_CRD_MIRROR) instead of fetched from GitHub.
- The jobs run with HOME in the test's folder, so the cache stand-in restores into it and never into this
  machine's ~/.cache/tfjobgen; pip's download cache stays the machine's (PIP_CACHE_DIR), as Go's would.
- setup-python's virtual environment is kept between runs (python_envs: ~/.cache/tfjobgen/act-python/<key>),
  keyed by everything that decides what the job's `pip install` puts in it: Python's version, the workflow
  file, the job, constraints.txt, pyproject.toml and requirements.txt. A run starts from a hard-linked copy of
  the one kept, so its `pip install` finds the pinned packages installed and installs only what is missing
  or editable (the checkout's tfjobgen, always reinstalled); a key not seen yet installs everything, and its
  environment is kept after the run. Installing kubernetes-validate's schemas was most of a run's time.

Shared by tests/act (its `act_repo` fixture and `run_pr`, which mark the tests and skip without act) and
benchmarks/act_pipeline.py: `ActRepo.create(folder)`, then `repo.branch(...)`, edits, `repo.commit(...)`,
`run_pr(repo, base, head)`, `repo.close()`. A missing act or program is programs.ToolsMissing, one line
naming the make target.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import yaml

from ..artifacts import programs
from .github_api import GitHubStandIn

REPO = Path(__file__).resolve().parents[3]
ACTIONS = REPO / "tests" / "act" / "actions"  # the stand-ins (their README says what each does)
CRD_MIRROR = Path(os.environ.get("TFJOBGEN_CRD_DIR") or REPO.parent / "shared" / "crds")
PLATFORM = "ubuntu-24.04=-self-hosted"
REPOSITORY = "platform/jobs"  # the pull requests' repository, as GitHub names it
# owner/repo@ref of each remote action the workflows use -> its stand-in folder (actions/checkout: none needed)
STAND_INS = {"actions/setup-python": "setup-python", "azure/setup-kubectl": "setup-kubectl",
             "actions/setup-go": "setup-go", "actions/cache": "cache"}
PLACEMENT_FAMILIES = ("etcd", "kubernetes", "kwok")  # the programs of the placement preview's local cluster
RUN_TIMEOUT = 900.0
PYTHON_ENVS_ENV = "TFJOBGEN_ACT_PYTHON_CACHE"  # names the kept environments' folder outright (kit/caches.py)


def act_binary() -> str:
    """act, or programs.ToolsMissing: one line naming the make target that builds it."""
    return str(programs.program("act"))


def remote_actions(workflow: Path) -> set[str]:
    """owner/repo@ref of every remote action a workflow uses (sub-paths such as actions/cache/restore folded)."""
    found = set()
    for job in yaml.safe_load(workflow.read_text())["jobs"].values():
        for step in job.get("steps", []):
            uses_ = step.get("uses", "")
            if uses_ and not uses_.startswith(("./", "docker://")):
                name, _, ref = uses_.partition("@")
                found.add("/".join(name.split("/")[:2]) + "@" + ref)
    return found


def hash_files(*paths: Path) -> str:
    """GitHub's hashFiles() of these files in this order: the SHA-256 of their SHA-256 digests."""
    outer = hashlib.sha256()
    for path in paths:
        outer.update(hashlib.sha256(path.read_bytes()).digest())
    return outer.hexdigest()


@dataclasses.dataclass
class ActRun:
    exit: int
    comments: list[dict]
    log: str
    seconds: float


@dataclasses.dataclass
class ActRepo:
    """A git repository of the pull requests (`path`), with everything act needs beside it in `work`."""

    path: Path
    work: Path
    api: GitHubStandIn

    @classmethod
    def create(cls, work: Path, source: Path = REPO, prepare: Callable[[Path], object] | None = None) -> ActRepo:
        """A copy of `source` (its tracked files and new ones, as a clone would see this worktree), changed by
        `prepare(path)` (a team's data in place of the repository's own, say), committed on `main`, with
        `origin/main` pointing at it as a checkout with full history has it."""
        work.mkdir(parents=True, exist_ok=True)
        path = work / "repo"
        listed = subprocess.run(["git", "-C", str(source), "ls-files", "-z", "--cached", "--others",
                                 "--exclude-standard"], capture_output=True, check=True).stdout
        for name in sorted(set(filter(None, listed.decode().split("\0")))):
            origin = source / name
            if origin.is_file() and not origin.is_symlink():
                (path / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(origin, path / name)
        if prepare is not None:
            prepare(path)
        repo = cls(path, work, GitHubStandIn())
        repo.git("init", "--quiet", "--initial-branch", "main")
        repo.git("remote", "add", "origin", f"https://github.com/{REPOSITORY}.git")  # never fetched
        repo.commit("base")
        return repo

    def git(self, *args: str) -> str:
        env = {"PATH": os.environ["PATH"], "HOME": str(self.work), "GIT_CONFIG_GLOBAL": os.devnull,
               "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "dev", "GIT_AUTHOR_EMAIL": "dev@example.com",
               "GIT_COMMITTER_NAME": "dev", "GIT_COMMITTER_EMAIL": "dev@example.com", "LANG": "C.UTF-8"}
        return subprocess.run(["git", "-C", str(self.path), *args], capture_output=True, text=True, check=True,
                              env=env, timeout=120).stdout.strip()

    def branch(self, name: str, start: str = "main") -> None:
        self.git("switch", "--quiet", "-C", name, start)

    def commit(self, message: str) -> str:
        self.git("add", "--all")
        self.git("commit", "--quiet", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD")

    def hydrate(self) -> None:
        """`tfjobgen hydrate` in the repository, with its own generator, as a developer runs it before pushing."""
        subprocess.run([sys.executable, "-m", "tfjobgen", "hydrate"], cwd=self.path, check=True, capture_output=True,
                       env={**os.environ, "PYTHONPATH": str(self.path / "generator")}, timeout=300)

    def seed_programs_cache(self) -> str:
        """The programs' cache entry a run on main would have saved, under the key gitops.yml computes: this
        machine's built etcd, Kubernetes and KWOK, hard-linked. Returns the key."""
        key = f"cluster-programs-Linux-{hash_files(self.path / 'cluster-tools' / 'versions.yaml')}"
        entry = self.work / "actions-cache" / key / "0"
        for name in PLACEMENT_FAMILIES:
            family = next(f for f in programs.families() if f.name == name)
            if not family.is_built():
                raise programs.ToolsMissing(f"{name} ({family.module} {family.version}) is not built: run "
                                            "`make cluster-tools`")
            entry.mkdir(parents=True, exist_ok=True)
            subprocess.run(["cp", "-al", str(family.installed_in), str(entry / family.installed_in.name)], check=True)
        return key

    def close(self) -> None:
        self.api.close()


def python_envs() -> Path:
    """Where setup-python's environments are kept between runs, outside every clone."""
    from ..kit import caches

    return caches.folder("act-python", PYTHON_ENVS_ENV)


def python_env_key(checkout: Path, workflow: Path, job: str | None) -> str:
    """What decides the packages a job's `pip install` puts in setup-python's environment, hashed."""
    digest = hashlib.sha256(f"{sys.version}\0{job}\0".encode())
    for path in (workflow, checkout / "constraints.txt", checkout / "pyproject.toml", checkout / "requirements.txt"):
        digest.update(hashlib.sha256(path.read_bytes() if path.is_file() else b"-").digest())
    return digest.hexdigest()[:32]


def _restore_python_env(kept: Path, run: Path) -> None:
    """A copy of a kept environment as this run's (run/python), hard-linked (pip replaces files, never writes
    into them). What names the run it was made in (its interpreter's links into that run's tool cache,
    pyvenv.cfg, the scripts' `#!` lines) is moved to this run: written anew, so the kept files stay as they are."""
    venv = run / "python"
    subprocess.run(["cp", "-al", str(kept), str(venv)], check=True, capture_output=True)
    made_in = (kept / ".made-in").read_text().strip()
    for path in [venv / "pyvenv.cfg", *(venv / "bin").iterdir()]:
        if path.is_symlink():
            target = os.readlink(path)
            if target.startswith(made_in + "/"):
                path.unlink()
                path.symlink_to(str(run) + target[len(made_in):])
        elif path.is_file():
            text = path.read_bytes()
            if made_in.encode() in text[:4096] and (path.name == "pyvenv.cfg" or text.startswith(b"#!")):
                fresh = path.with_name(path.name + ".moved")
                fresh.write_bytes(text.replace(made_in.encode() + b"/", str(run).encode() + b"/"))
                fresh.chmod(path.stat().st_mode)
                os.replace(fresh, path)


def _keep_python_env(run: Path, kept: Path) -> None:
    """The run's environment kept under its key, unless another run kept one first (a rename: never half-kept)."""
    venv = run / "python"
    if kept.exists() or not (venv / "pyvenv.cfg").is_file():  # no setup-python in the job
        return
    (venv / ".made-in").write_text(f"{run}\n")
    kept.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{kept.name}-", dir=kept.parent))
    try:
        subprocess.run(["cp", "-al", str(venv), str(staging / "env")], check=True, capture_output=True)
        with contextlib.suppress(OSError):  # another run kept it meanwhile: theirs stays
            os.rename(staging / "env", kept)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    for old in kept.parent.iterdir():  # the pins and workflows of two weeks ago: about 340 MB each
        if old.is_dir() and old.name[0] != "." and time.time() - old.stat().st_mtime > 14 * 86400:
            shutil.rmtree(old, ignore_errors=True)


def run_pr(repo: ActRepo, base: str, head: str, *, number: int = 1, workflow: str = "gitops.yml",
           job: str | None = None, timeout: float = RUN_TIMEOUT, crd_mirror: Path = CRD_MIRROR,
           job_env: dict[str, str] | None = None, keep_python: bool = True) -> ActRun:
    """Run `workflow` under act on pull request #`number` from `head` into `base`: (exit, the PR's comments
    on the API stand-in, act's log, wall seconds). act is stopped (its process group) on timeout and Ctrl-C.
    `job_env`: variables every step of the job sees (pip's PIP_FIND_LINKS, say). `keep_python`: start from, or
    keep, setup-python's environment of this workflow, job and pins (python_envs); off, the job installs
    everything, as for a package whose version stays while its content changes (a wheel of this checkout)."""
    act = act_binary()
    repo.branch(head, head)  # the working tree act copies is the head commit
    repo.git("update-ref", f"refs/remotes/origin/{base}", base)
    repo.git("update-ref", f"refs/remotes/origin/{head}", head)
    run = repo.work / f"run-{int(time.time() * 1000)}"
    home, tool_cache = run / "home", run / "act" / "tool_cache"
    home.mkdir(parents=True)
    _python_in_tool_cache(tool_cache)
    event = run / "event.json"
    head_sha, base_sha = repo.git("rev-parse", head), repo.git("rev-parse", base)
    event.write_text(json.dumps({
        "action": "synchronize", "number": number,
        "pull_request": {"number": number, "head": {"ref": head, "sha": head_sha}, "base": {"ref": base, "sha": base_sha}},
        "repository": {"full_name": REPOSITORY, "name": REPOSITORY.split("/")[1],
                       "owner": {"login": REPOSITORY.split("/")[0]}}}, indent=1))
    empty = run / "empty"
    empty.write_text("")
    workflow_path = repo.path / ".github" / "workflows" / workflow
    venv = run / "python"  # setup-python's environment (the stand-in makes one there unless one is there)
    kept = python_envs() / python_env_key(repo.path, workflow_path, job) if keep_python else None
    if kept is not None and kept.is_dir():
        _restore_python_env(kept, run)
        os.utime(kept)  # in use: not pruned
    command = [act, "pull_request", "--workflows", str(workflow_path), "--eventpath", str(event),
               "--platform", PLATFORM, "--no-cache-server", "--action-cache-path", str(run / "act"),
               "--action-offline-mode", "--env-file", str(empty), "--secret-file", str(empty), "--var-file", str(empty),
               "--secret", "GITHUB_TOKEN=act-standin-token",
               "--env", f"GITHUB_API_URL={repo.api.url}", "--env", f"GITHUB_REPOSITORY={REPOSITORY}",
               "--env", f"ACT_STANDIN_CACHE={repo.work / 'actions-cache'}",
               "--env", f"TFJOBGEN_CRD_MIRROR={crd_mirror}", "--env", f"ACT_STANDIN_PYTHON_ENV={venv}"]
    for action in sorted(remote_actions(workflow_path)):
        name = action.partition("@")[0]
        if name == "actions/checkout":
            continue
        command += ["--local-repository", f"{action}={ACTIONS / STAND_INS[name]}"]
    for name, value in sorted((job_env or {}).items()):
        command += ["--env", f"{name}={value}"]
    if job:
        command += ["--job", job]
    # A short TMPDIR of the run's own, as a runner's /tmp: a pytest session inside the job (test.yml's fast job)
    # makes its folders under it, and a Unix socket's path must fit 108 bytes (tests/test_files.py). Under the
    # machine's temporary folder, not a test session's, which would make it long again.
    short_temp = Path(tempfile.mkdtemp(prefix="act-", dir=os.environ.get("TFJOBGEN_TESTS_MACHINE_TEMP")))
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8", "TMPDIR": str(short_temp),
           "PIP_CACHE_DIR": os.environ.get("PIP_CACHE_DIR") or str(Path.home() / ".cache" / "pip"),
           "PIP_DISABLE_PIP_VERSION_CHECK": "1",
           "ACT_DISABLE_VERSION_CHECK": "1"}  # else act asks api.nektosact.com for notices at every run
    for name in ("PYENV_ROOT", "PIP_CONFIG_FILE", "PIP_INDEX_URL", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"):
        if os.environ.get(name):
            env[name] = os.environ[name]
    user_pip_conf = Path.home() / ".config" / "pip" / "pip.conf"
    if "PIP_CONFIG_FILE" not in env and user_pip_conf.is_file():
        env["PIP_CONFIG_FILE"] = str(user_pip_conf)  # this machine's pip settings (its certificates), as HOME moved
    log_path = run / "act.log"
    started = time.monotonic()
    try:
        with open(log_path, "w", encoding="utf-8") as log, _stopped_on_exit(
                subprocess.Popen(command, cwd=repo.path, env=env, stdout=log, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, start_new_session=True)) as process:
            try:
                code = process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                code = -1
    finally:
        shutil.rmtree(short_temp, ignore_errors=True)
    seconds = time.monotonic() - started
    if kept is not None:
        _keep_python_env(run, kept)
    return ActRun(code, repo.api.comments_on(REPOSITORY, number), log_path.read_text(errors="replace"), seconds)


def _python_in_tool_cache(tool_cache: Path) -> None:
    """This machine's Python where a runner's tool cache has it (Python/<version>/x64), for setup-python."""
    version = ".".join(map(str, sys.version_info[:3]))
    target = tool_cache / "Python" / version / "x64"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.symlink_to(Path(sys.base_prefix), target_is_directory=True)


@contextlib.contextmanager
def _stopped_on_exit(process: subprocess.Popen):
    """The process, whose whole group (act and every step it started) is stopped when the block ends:
    SIGTERM first, so tfjobgen's local clusters shut down, then SIGKILL."""
    try:
        yield process
    finally:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # what is left of the group, even after act itself exited
        process.wait()


"""`tfjobgen hydrate` on every supported install of tfjobgen, on one tree. A benchmark, not a test.

    .venv/bin/python benchmarks/install_hydrate.py [--jobs 300] [--runs 3] [--rev REV] [--image]

The tree: this repository's overlays, its generator/ and schemas/, and its ten jobs plus JOBS generated ones
(tfjobgen/harness/synthetic.py: twenty teams, every topology), hydrated once, so that each timed `hydrate`
finds nothing to change (what CI's `hydrate --check` and a pull request without job changes cost). The
code is this checkout's working tree, or REV's (`--rev 72dbccb`: the figures before a change), copied to a
folder of its own: "another checkout of the same commit". Then, in interleaved rounds, hydrate through:

- the tree's own generator/ on the path (what `make venv` in that checkout installs: an editable install);
- an editable install of another checkout of the same code (that copy's generator/ on the path), as a
  second worktree whose .venv is the first one's gets;
- the wheel (`python -m build --no-isolation` of that copy) in a fresh venv outside the repository,
  installed offline from it and the venv's wheelhouse (`make venv` keeps it);
- with --image, the Argo CD sidecar image `make images` built (TFJOBGEN_IMAGES_CACHE picks the image cache),
  run with runc on a read-only root as user 999, the tree bind-mounted at /repo: once as plugin.yaml runs
  tfjobgen (the tree's generator/ on PYTHONPATH), once with only the image's installed tfjobgen.

For each, how build.py built each overlay (in-process, or kustomize on N shares, each starting the
plugin and an interpreter), then the seconds. Bytecode is compiled first everywhere, as a checkout has
it after its first run and pip writes it for a wheel. Prints a Markdown table; docs/benchmarks.md
records a run. Everything it makes is in one temporary folder, removed at the end.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "generator"))  # this checkout's harness, whatever editable install the venv has

from tfjobgen.harness import synthetic  # noqa: E402
WHEEL_SOURCES = ("generator/tfjobgen", "schemas", "plugins", "cluster-tools", "README.md", "pyproject.toml",
                 ".gitignore")
TREE_SOURCES = ("bases", "overlays")  # the tree's, of the same revision as its generator
WHEELHOUSE = Path(sys.prefix) / "wheelhouse"
IMAGE_ROOT = "/repo"
SIDECAR_UID = 999  # argocd/plugin: the cmp-server's user

MODES = """
import json, sys
from pathlib import Path
from tfjobgen.gitops import build, layout, tree
root = Path.cwd()
in_process = build._runs_this_generator(root)
modes = {}
for name in tree.overlay_names(root):
    plan = layout.read(root, "overlays/" + name)
    mode = build.mode_of(plan, in_process)
    modes[name] = [mode, len(layout.shares(plan, plan.files())) if mode == build.SHARDS else 0]
print(json.dumps({"in_process": in_process, "modes": modes, "package": str(Path(build.__file__).parents[1])}))
"""


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run(command: list, cwd: Path | None = None, env: dict | None = None) -> str:
    proc = subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"install_hydrate: {' '.join(map(str, command))} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return proc.stdout


def clean_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, **extra}


def copy_source(destination: Path, rev: str | None) -> Path:
    """The files the wheel is built from and the overlays, of the working tree or of `rev`: a checkout of its own."""
    destination.mkdir(parents=True)
    if rev:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", rev, *WHEEL_SOURCES,
                                  *TREE_SOURCES],
                                 capture_output=True, check=False)
        if archive.returncode:
            sys.exit(f"install_hydrate: git archive {rev}: {archive.stderr.decode().strip()}")
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(destination, filter="data")
    else:
        for name in (*WHEEL_SOURCES, *TREE_SOURCES):
            source = REPO / name
            if source.is_dir():
                shutil.copytree(source, destination / name, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(source, destination / name)
    return destination


def make_tree(root: Path, source: Path, jobs: int) -> Path:
    """This repository's ten jobs and `jobs` generated ones, with the source's generator/, schemas/, plugins/ and
    overlays."""
    synthetic.write_repo(root, jobs=jobs + 10)
    for name in ("generator", "schemas", "plugins", *TREE_SOURCES):
        shutil.rmtree(root / name, ignore_errors=True)
        shutil.copytree(source / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def compile_bytecode(*folders: Path) -> None:
    run([sys.executable, "-m", "compileall", "-q", *folders], env=clean_env(PYTHONDONTWRITEBYTECODE=""))


def wheel_venv(scratch: Path, source: Path) -> Path:
    """The source's wheel, installed offline into a fresh venv outside the repository; returns its bin/."""
    if not any(WHEELHOUSE.glob("*.whl")):
        sys.exit(f"install_hydrate: {WHEELHOUSE} has no wheels of tfjobgen's dependencies: run `make venv`")
    epoch = run(["git", "-C", REPO, "log", "-1", "--format=%ct"]).strip()
    run([sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", scratch / "dist", source],
        env=clean_env(SOURCE_DATE_EPOCH=epoch))
    run([sys.executable, "-m", "venv", scratch / "venv"])
    run([scratch / "venv" / "bin" / "pip", "install", "--quiet", "--disable-pip-version-check", "--no-index",
         "--find-links", scratch / "dist", "--find-links", WHEELHOUSE, "tfjobgen"])
    return scratch / "venv" / "bin"


class Sidecar:
    """The plugin image unpacked into a runc bundle; each run is one container, the tree at /repo."""

    def __init__(self, scratch: Path, tree: Path):
        from tfjobgen.artifacts.images import catalog, oci, store

        image = store.built(catalog.PLUGIN)
        if image is None:
            sys.exit(f"install_hydrate: no {catalog.PLUGIN} image in {store.cache_root()}: run `make images`")
        for tool in ("runc", "umoci"):
            if not shutil.which(tool):
                sys.exit(f"install_hydrate: --image needs {tool} (apt-get install {tool}) and root")
        self.image, self.folder = image, scratch / "bundle"
        for folder, _, names in os.walk(tree):  # the cmp-server's user owns the checkout Argo CD hands it
            for name in [".", *names]:
                os.chown(os.path.join(folder, name), SIDECAR_UID, SIDECAR_UID)
        self.folder.mkdir()
        run(["umoci", "raw", "unpack", "--image", f"{image.layout}:{image.tag}", self.folder / "rootfs"])
        run(["runc", "spec", "--bundle", self.folder])
        _, manifest = oci.manifest(image.layout, image.tag)
        image_config = json.loads(oci.blob(image.layout, manifest["config"]["digest"]).read_text())["config"]
        # The sidecar as repo-server-patch.yaml runs it: the image's environment, user 999, a read-only root,
        # its own /tmp, and (Argo CD's checkout) the tree; run_in_image sets only the command.
        config = json.loads((self.folder / "config.json").read_text())
        config["process"].update(terminal=False, cwd=IMAGE_ROOT, noNewPrivileges=True,
                                 user={"uid": SIDECAR_UID, "gid": SIDECAR_UID},
                                 env=[*image_config.get("Env", []), "TMPDIR=/tmp"])
        config["process"].pop("oomScoreAdj", None)
        config["root"] = {"path": "rootfs", "readonly": True}
        config["mounts"] += [
            {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev", "mode=1777"]},
            {"destination": IMAGE_ROOT, "type": "bind", "source": str(tree), "options": ["rbind", "rw"]}]
        (self.folder / "config.json").write_text(json.dumps(config))

    def command(self, script: str) -> list:
        """A command line that runs `script` with bash in the image, in /repo: this program itself, via --in-image."""
        return [sys.executable, __file__, "--in-image", str(self.folder), "--script", script]


def run_in_image(folder: Path, script: str) -> int:
    """One container of the bundle at `folder` (Sidecar made its config): `script` under bash in /repo."""
    config = json.loads((folder / "config.json").read_text())
    config["process"]["args"] = ["bash", "-c", script]
    (folder / "config.json").write_text(json.dumps(config))
    state, name = folder.parent / "runc-state", f"tfjobgen-bench-{os.getpid()}"
    try:
        proc = subprocess.run(["runc", "--root", str(state), "run", "--bundle", str(folder), name],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True)
    finally:
        subprocess.run(["runc", "--root", str(state), "delete", "--force", name], capture_output=True)
        shutil.rmtree(state, ignore_errors=True)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    return proc.returncode


def timed_in_rounds(runs: int, actions: dict[str, tuple[list, dict]], cwd: Path) -> dict[str, list[float]]:
    """Each action once per round, the order rotating, so the machine's drift falls on each alike."""
    times: dict[str, list[float]] = {label: [] for label in actions}
    labels = list(actions)
    for round_ in range(runs):
        for label in labels[round_ % len(labels):] + labels[:round_ % len(labels)]:
            command, env = actions[label]
            start = time.perf_counter()
            run(command, cwd=cwd, env=env)
            times[label].append(time.perf_counter() - start)
            progress(f"  round {round_ + 1}/{runs}: {label}: {times[label][-1]:.2f} s")
    return times


def share_cost(tree: Path, scratch: Path, runs: int) -> dict[str, list[float]]:
    """What one share of a SHARDS build costs (the first of seed-80c), as build.py runs it: kustomize with the tree's
    plugin (the private copy: sh, then build.py's `tfjobgen` wrapper, sh, then the interpreter with the tree's
    generator/); kustomize with the echo plugin (kustomize's own part); the plugin alone on that share's intents;
    the interpreter alone."""
    from tfjobgen.gitops import build, layout

    plan = layout.read(tree, "overlays/seed-80c")
    share = layout.shares(plan, plan.files())[0]
    folder = layout.write_share(tree, plan, share, scratch / "share", with_others=True)
    profile = tree / plan.profile
    with build.plugin_environment(tree) as env, build.plugin_environment(tree, echo=True) as echo_env:
        kustomize = build.kustomize_command()
        intents = run([*kustomize, folder], cwd=scratch / "share", env=echo_env)
        wrapper = Path(env["PATH"].split(os.pathsep)[0]) / "tfjobgen"
        actions = {
            "kustomize with the plugin": lambda: run([*kustomize, folder], cwd=scratch / "share", env=env),
            "kustomize with the echo plugin": lambda: run([*kustomize, folder], cwd=scratch / "share", env=echo_env),
            "the plugin alone (tfjobgen krm)": lambda: subprocess.run([wrapper, "krm", profile], input=intents,
                                                                      capture_output=True, text=True, check=True),
            "python -c pass": lambda: run([sys.executable, "-c", "pass"]),
        }
        times: dict[str, list[float]] = {label: [] for label in actions}
        for _ in range(runs):
            for label, action in actions.items():
                start = time.perf_counter()
                action()
                times[label].append(time.perf_counter() - start)
    progress(f"  one share: {len(share)} job files, {sum(layout.weight(i) for i in plan.intents if i.file in share)} "
             "objects' weight")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=300, help="generated jobs beside the repository's ten")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rev", help="measure this revision's generator instead of the working tree's")
    parser.add_argument("--image", action="store_true", help="also the Argo CD sidecar image (make images; root)")
    parser.add_argument("--share-cost", action="store_true",
                        help="also what one kustomize share of a SHARDS build costs, and its parts")
    parser.add_argument("--in-image", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--script", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.in_image:
        sys.exit(run_in_image(args.in_image, args.script))

    with tempfile.TemporaryDirectory(prefix="tfjobgen-install-bench-") as scratch_name:
        scratch = Path(scratch_name)
        progress(f"the code: {args.rev or 'the working tree'}; a tree of {args.jobs} + 10 jobs ...")
        source = copy_source(scratch / "checkout", args.rev)
        tree = make_tree(scratch / "tree", source, args.jobs)
        compile_bytecode(source / "generator", tree / "generator")
        python = Path(sys.executable)
        own = clean_env(PYTHONPATH=str(tree / "generator"))
        run([python, "-m", "tfjobgen", "hydrate"], cwd=tree, env=own)  # rendered/ as committed
        progress("the wheel, in a fresh venv ...")
        venv_bin = wheel_venv(scratch, source)
        installs = {
            "the tree's own generator/ (make venv in that checkout)": ([python, "-m", "tfjobgen"], own),
            "an editable install of another checkout of the same code": (
                [python, "-m", "tfjobgen"], clean_env(PYTHONPATH=str(source / "generator"))),
            "the wheel in a venv elsewhere": ([venv_bin / "tfjobgen"], clean_env()),  # run as venv/bin/python -m
        }
        if args.image:
            progress("the Argo CD sidecar image, unpacked ...")
            sidecar = Sidecar(scratch, tree)
            installs["the sidecar image, as plugin.yaml runs it (the tree's generator/ first)"] = (
                ["SIDECAR", f'export PYTHONPATH="{IMAGE_ROOT}/generator"; '], clean_env())
            installs["the sidecar image's installed tfjobgen alone"] = (["SIDECAR", ""], clean_env())

        def command(label: str, *python_args: str) -> list:
            """`python -m tfjobgen ARGS` (or `python ARGS`, python_args starting with -c) through that install."""
            argv, _ = installs[label]
            python_args = python_args if python_args[0] == "-c" else ("-m", "tfjobgen", *python_args)
            if argv[0] == "SIDECAR":
                return sidecar.command(argv[1] + "exec python3 " + shlex.join(python_args))
            if argv[0] == venv_bin / "tfjobgen":
                return [venv_bin / "python", *python_args]
            return [python, *python_args]

        modes = {label: json.loads(run(command(label, "-c", MODES), cwd=tree, env=env).strip().splitlines()[-1])
                 for label, (_, env) in installs.items()}
        actions = {label: (command(label, "hydrate"), env) for label, (_, env) in installs.items()}
        times = timed_in_rounds(args.runs, actions, tree)
        shares = share_cost(tree, scratch, max(args.runs, 5)) if args.share_cost else {}

    print(f"\n`tfjobgen hydrate`, nothing to change, {args.jobs} + 10 jobs, {args.runs} runs each "
          f"(code: {args.rev or 'working tree'})\n")
    print("| install | tfjobgen runs from | in-process | how each overlay was built | median | min | max |")
    print("| --- | --- | --- | --- | ---: | ---: | ---: |")
    for label, values in times.items():
        found = modes[label]
        built = ", ".join(f"{o}: {m}" + (f" ({n} shares)" if n else "") for o, (m, n) in found["modes"].items())
        where = found["package"].replace(str(scratch), "$TMP")
        print(f"| {label} | `{where}` | {'yes' if found['in_process'] else 'no'} | {built} | "
              f"{statistics.median(values):.2f} s | {min(values):.2f} s | {max(values):.2f} s |")

    if shares:
        print(f"\nOne share of a SHARDS build (seed-80c's first, about {layout_weight()} objects), {len(next(iter(shares.values())))} runs\n")
        print("| process | median | min | max |\n| --- | ---: | ---: | ---: |")
        for label, values in shares.items():
            print(f"| {label} | {statistics.median(values):.3f} s | {min(values):.3f} s | {max(values):.3f} s |")


def layout_weight() -> int:
    from tfjobgen.gitops import layout

    return layout.SHARD_WEIGHT


if __name__ == "__main__":
    main()

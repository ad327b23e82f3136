"""Building the images: the stages they share, each image's recipe, and `tfjobgen images build|list`.

    stages   base (Debian by mmdebstrap, user 65532)  ->  deps (pinned wheels, precompiled)  ->  the image's
             own layer (tfjobgen, and for the plugin kustomize, plugin.yaml, user 999). The base and each
             deps stage are cached by their input digests (recipe.py): a tfjobgen change rebuilds one
             small layer; the runtime and the plugin share the base layer (the same blob).
    pause    single_binary_image(): one layer, one static binary (cluster-tools' pause); Prometheus and the
             operator's config reloader the same way.
    entry    single_binary_image() of cluster-tools' entry, at ENTRY_PATH, run as 65532.
    fixture  the runtime's base and deps stages and a layer with a team's training script: no tfjobgen.

Needs root (mmdebstrap --mode=root, chroot, mount), Debian's mmdebstrap and umoci, and the network to
Debian's archive and the Python package index while a stage is built; nothing once all are cached.
"""

from __future__ import annotations

import dataclasses
import datetime
import fcntl
import json
import os
import shutil
import sys
import tarfile
import tempfile
import time
from pathlib import Path, PurePosixPath

from ...shared import contract
from .. import programs
from . import catalog, oci, recipe, rootfs, store
from .steps import BuildFailed, Steps, ToolMissing, need

STAGE_TAG = "stage"
SITE = recipe.SITE_PACKAGES
PAUSE_ENTRYPOINT = ("/pause",)
PAUSE_USER = "65535:65535"  # upstream's pause image runs as nobody
ENTRY_PATH = "/tfjobgen-entry"  # where the entry image holds the binary its init container copies (`copy`)
PROMETHEUS_ENTRYPOINT = ("/bin/prometheus",)  # the operator gives only arguments, as to upstream's image
RELOADER_ENTRYPOINT = ("/bin/prometheus-config-reloader",)
MONITORING_USER = "65534:65534"  # upstream's Prometheus images run as nobody
IMAGE_ENV = {"PATH": rootfs.ENV["PATH"], "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1"}


class InputMissing(Exception):
    """Something an image is made of is not built (kustomize, pause: `make cluster-tools`)."""


@dataclasses.dataclass(frozen=True)
class Stage:
    folder: Path

    @property
    def layout(self) -> Path:
        return self.folder / "layout"

    @property
    def tree(self) -> Path:
        """The stage's files: the base's whole root, a deps stage's overlay upper folder (its layer)."""
        return self.folder / "tree"

    def packages(self) -> list[str]:
        return (self.folder / "packages.txt").read_text().splitlines()

    def layer_bytes(self) -> list[int]:
        """The uncompressed size of each layer of its image."""
        return json.loads((self.folder / "stage.json").read_text())["layer_bytes"]


# ---- stages --------------------------------------------------------------------------------------

def _stage_folder(kind: str, key: str) -> Path:
    return store.cache_root() / "stages" / f"{kind}-{key[:16]}"


def _finish_stage(staged: Path, target: Path, kind: str, packages: list[str], layer_bytes: list[int]) -> Stage:
    (staged / "packages.txt").write_text("".join(f"{p}\n" for p in packages))
    (staged / "stage.json").write_text(json.dumps({"layer_bytes": layer_bytes}) + "\n")
    for old in target.parent.glob(f"{kind}-*"):  # an earlier key's stage: only the current one is kept
        if old != target:
            shutil.rmtree(old, ignore_errors=True)
    staged.rename(target)
    return Stage(target)


def _staging(parent: Path, kind: str) -> Path:
    parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{kind}-", dir=parent))


def base(steps: Steps) -> Stage:
    """Debian bookworm minbase + python3 (recipe.INCLUDE), the nonroot user: the first layer of both images."""
    target = _stage_folder("base", recipe.base_key())
    if (target / "stage.json").is_file():
        steps.stage(f"base: cached ({target.name})")
        return Stage(target)
    need(["mmdebstrap", "umoci", "unshare", "tar"])
    staged = _staging(target.parent, "base")
    try:
        oci.new(steps, staged / "layout", STAGE_TAG)
        tree = staged / "tree"
        steps.stage(f"base: mmdebstrap {recipe.SUITES[0]} {recipe.VARIANT} + {', '.join(recipe.INCLUDE)} ...")
        since = rootfs.mark()
        rootfs.debian(steps, tree, store.cache_root() / "debs")
        rootfs.add_user(tree, "nonroot", recipe.NONROOT, "/home/nonroot", "/usr/sbin/nologin")
        (tree / "home/nonroot").mkdir(mode=0o755)
        os.chown(tree / "home/nonroot", recipe.NONROOT, recipe.NONROOT)
        # apt's lock and partial/ come back from the .deb cache (sync-in) with the mtime and owner of the build
        # that made them: a cold and a warm build differed there (mtime in the prototype, partial/'s owner
        # here: _apt or root). apt makes both again when it needs them.
        (tree / "var/cache/apt/archives/lock").unlink(missing_ok=True)
        shutil.rmtree(tree / "var/cache/apt/archives/partial", ignore_errors=True)
        rootfs.clamp_newer(tree, since, recipe.BASE_EPOCH)
        steps.stage("base: layer")
        size = rootfs.layer_tar(steps, tree, staged / "layer.tar")
        oci.add_layer(steps, staged / "layout", STAGE_TAG, staged / "layer.tar", recipe.BASE_EPOCH,
                      f"mmdebstrap --variant={recipe.VARIANT} {recipe.SUITES[0]} + {','.join(recipe.INCLUDE)}")
        (staged / "layer.tar").unlink()
        return _finish_stage(staged, target, "base", rootfs.debian_packages(tree), [size])
    finally:
        shutil.rmtree(staged, ignore_errors=True)


def deps(steps: Steps, label: str, extras: tuple[str, ...], below: Stage) -> Stage:
    """tfjobgen's requirements with `extras`, pinned by constraints.txt, precompiled: a layer on the base."""
    target = _stage_folder(f"deps-{label}", recipe.deps_key(extras))
    if (target / "stage.json").is_file():
        steps.stage(f"deps: cached ({target.name})")
        return Stage(target)
    need(["umoci", "unshare", "tar"])
    wanted = recipe.requirements(extras)
    steps.stage(f"deps: wheels for {' '.join(wanted)} ...")
    wheelhouse(steps, wanted)
    staged = _staging(target.parent, f"deps-{label}")
    try:
        oci.copy(below.layout, staged / "layout")
        inputs = staged / "inputs"
        inputs.mkdir()
        shutil.copyfile(recipe.REPO / "constraints.txt", inputs / "constraints.txt")
        steps.stage("deps: pip install + compileall in the chroot ...")
        _overlay(steps, staged, [below.tree], inputs, recipe.BASE_EPOCH, [
            {"run": [*_pip(), "install", "--no-index", "--find-links", "/mnt", "--no-compile",
                     "--break-system-packages", "--root-user-action=ignore", "-c", "/srv/constraints.txt", *wanted]},
            {"run": ["python3", "-m", "compileall", "-q", "-j", "2", "--invalidation-mode", "unchecked-hash", SITE]},
        ])
        _leave_out_unused(staged / "tree" / SITE.lstrip("/"))
        steps.stage("deps: layer")
        size = rootfs.layer_tar(steps, staged / "tree", staged / "layer.tar")
        oci.add_layer(steps, staged / "layout", STAGE_TAG, staged / "layer.tar", recipe.BASE_EPOCH,
                      f"pip install {' '.join(wanted)} (constraints.txt)")
        (staged / "layer.tar").unlink()
        packages = below.packages() + rootfs.python_packages(staged / "tree" / SITE.lstrip("/"))
        return _finish_stage(staged, target, f"deps-{label}", packages, below.layer_bytes() + [size])
    finally:
        shutil.rmtree(staged, ignore_errors=True)


def _leave_out_unused(site: Path) -> None:
    """recipe.UNUSED, removed from the layer's own files (the overlay's upper folder) before it is archived."""
    for pattern in recipe.UNUSED:
        for path in sorted(site.glob(pattern)):
            shutil.rmtree(path)


def _pip() -> list[str]:
    """pip run from its wheel in the wheelhouse (mounted at /mnt): the images carry no pip."""
    version = recipe.PIP.split("==")[1]
    return ["python3", f"/mnt/pip-{version}-py3-none-any.whl/pip"]


def _overlay(steps: Steps, staged: Path, lowers: list[Path], inputs: Path, epoch: int, actions: list[dict]) -> None:
    """Run `actions` on an overlay over `lowers` (top first), the wheelhouse at /mnt and `inputs` at /srv,
    both read-only; staged/tree becomes the layer: only additions, every mtime `epoch`."""
    for name in ("tree", "work", "merged"):
        (staged / name).mkdir()
    rootfs.run(steps, {
        "root": str(staged / "merged"),
        "overlay": {"lower": [str(p) for p in lowers], "upper": str(staged / "tree"), "work": str(staged / "work")},
        "binds": [[str(store.cache_root() / "wheelhouse"), "/mnt", True], [str(inputs), "/srv", True]],
        "env": {**rootfs.ENV, "SOURCE_DATE_EPOCH": str(epoch)},
        "steps": actions,
    })
    shutil.rmtree(staged / "work")
    (staged / "merged").rmdir()
    rootfs.tidy_upper(staged / "tree")
    rootfs.check_upper(staged / "tree")
    rootfs.clamp_all(staged / "tree", epoch)


def wheelhouse(steps: Steps, wanted: list[str]) -> None:
    """Every pinned wheel `wanted` needs (and pip's), downloaded into the cache's wheelhouse."""
    target = [] if sys.version_info[:2] == tuple(map(int, recipe.PYTHON.split("."))) else [
        # another Python here: ask for the image's (untested; the prototype's host had 3.11)
        "--python-version", recipe.PYTHON, "--implementation", "cp", "--abi", f"cp{recipe.PYTHON.replace('.', '')}",
        *(a for minor in range(36, 4, -1) for a in ("--platform", f"manylinux_2_{minor}_x86_64")),
        "--platform", "manylinux2014_x86_64", "--platform", "manylinux2010_x86_64", "--platform", "manylinux1_x86_64"]
    steps.run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
               "--only-binary=:all:", *target, "-c", recipe.REPO / "constraints.txt",
               "-d", store.cache_root() / "wheelhouse", *wanted, recipe.PIP],
              env={"PIP_CACHE_DIR": str(store.cache_root() / "pip")})


def tfjobgen_wheel(steps: Steps, target: Path) -> Path:
    """tfjobgen's wheel from the clone's sources; byte-identical per commit (hatchling honours SOURCE_DATE_EPOCH)."""
    with tempfile.TemporaryDirectory(prefix="tfjobgen-wheel-") as source:
        for path in recipe.sources():
            copy = Path(source) / path.relative_to(recipe.REPO)
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, copy)
        steps.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps",
                   source, "-w", target],
                  env={"SOURCE_DATE_EPOCH": str(recipe.commit_epoch()), "PIP_CACHE_DIR": str(store.cache_root() / "pip")})
    (wheel,) = target.glob("tfjobgen-*.whl")
    return wheel


# ---- the images ----------------------------------------------------------------------------------

def runtime(steps: Steps) -> store.BuiltImage:
    """tfjobgen-runtime: Debian + python3, the pinned runtime dependencies (tensorflow-cpu), tfjobgen; runs
    `python -m tfjobgen.runtime` (contract.RUNTIME_COMMAND) as 65532:65532."""
    name, tag = catalog.RUNTIME, catalog.tag(catalog.RUNTIME)
    key = recipe.runtime_key(contract.RUNTIME_COMMAND)
    base_stage = base(steps)
    deps_stage = deps(steps, "runtime", ("runtime",), base_stage)
    epoch = recipe.commit_epoch()
    return _app_image(steps, name, tag, key, [deps_stage.tree, base_stage.tree], deps_stage, epoch, [], {
        "user": f"{recipe.NONROOT}:{recipe.NONROOT}", "env": IMAGE_ENV, "entrypoint": contract.RUNTIME_COMMAND,
        "workdir": "/"})


def plugin(steps: Steps) -> store.BuiltImage:
    """tfjobgen-argocd-plugin: argocd/plugin/Dockerfile's recipe on the runtime's base layer: the generator's
    dependencies and tfjobgen, kustomize (cluster-tools' build of the release Argo CD ships), plugin.yaml
    where argocd-cmp-server reads it, user 999."""
    from .. import programs

    try:
        kustomize = programs.program("kustomize")
    except (programs.ToolsMissing, KeyError) as err:
        raise InputMissing(f"{catalog.PLUGIN} needs kustomize: {err}") from None
    name, tag = catalog.PLUGIN, catalog.tag(catalog.PLUGIN)
    key = recipe.plugin_key(kustomize)
    base_stage = base(steps)
    deps_stage = deps(steps, "plugin", (), base_stage)
    uid = recipe.ARGOCD_USER
    day = recipe.BASE_EPOCH // 86400
    home = "/home/argocd"
    extra = [
        {"install": str(kustomize), "to": "/usr/local/bin/kustomize", "mode": 0o755, "owner": [0, 0]},
        {"append": "/etc/passwd", "text": f"argocd:x:{uid}:{uid}::{home}:/bin/sh\n"},
        {"append": "/etc/group", "text": f"argocd:x:{uid}:\n"},
        {"append": "/etc/shadow", "text": f"argocd:!:{day}:0:99999:7:::\n"},
        *({"mkdir": path, "mode": 0o755, "owner": [uid, uid]}
          for path in (home, f"{home}/cmp-server", f"{home}/cmp-server/config")),
        {"install": str(recipe.REPO / "argocd/plugin/plugin.yaml"), "to": f"{home}/cmp-server/config/plugin.yaml",
         "mode": 0o644, "owner": [uid, uid]},
    ]
    return _app_image(steps, name, tag, key, [deps_stage.tree, base_stage.tree], deps_stage, recipe.commit_epoch(),
                      extra, {"user": str(uid), "env": {**IMAGE_ENV, "HOME": home}, "entrypoint": (),
                              "workdir": home}, extra_packages=[f"kustomize {programs.family_of('kustomize').version}"])


def _app_image(steps: Steps, name: str, tag: str, key: str, lowers: list[Path], below: Stage, epoch: int,
               extra: list[dict], config: dict, extra_packages: list[str] = ()) -> store.BuiltImage:
    """The image's own layer on `below`: tfjobgen's wheel installed and precompiled, then `extra` steps."""
    need(["umoci", "unshare", "tar"])
    staged = store.staging(name)
    try:
        inputs = staged / "work" / "inputs"
        inputs.mkdir(parents=True)
        steps.stage("tfjobgen: wheel")
        wheel = tfjobgen_wheel(steps, inputs)
        layout = staged / "layout"
        oci.copy(below.layout, layout)
        steps.stage(f"tfjobgen: pip install {wheel.name} + compileall in the chroot ...")
        _overlay(steps, staged / "work", lowers, inputs, epoch, [
            {"run": [*_pip(), "install", "--no-index", "--find-links", "/mnt", "--no-compile", "--no-deps",
                     "--break-system-packages", "--root-user-action=ignore", f"/srv/{wheel.name}"]},
            {"run": ["python3", "-m", "compileall", "-q", "-j", "2", "--invalidation-mode", "unchecked-hash",
                     f"{SITE}/tfjobgen"]},
            {"run": [*_pip(), "check"]},
            *extra,
        ])
        steps.stage("tfjobgen: layer, config, archive")
        size = rootfs.layer_tar(steps, staged / "work" / "tree", staged / "work" / "layer.tar")
        oci.add_layer(steps, layout, STAGE_TAG, staged / "work" / "layer.tar", epoch,
                      f"pip install --no-deps {wheel.name}" + (", kustomize, plugin.yaml, user" if extra else ""),
                      new_tag=tag)
        oci.remove_tag(steps, layout, STAGE_TAG)
        oci.configure(steps, layout, tag, epoch, config["user"], config["env"], config["entrypoint"], config["workdir"],
                      {"org.opencontainers.image.title": name, "org.opencontainers.image.version": tag,
                       "org.opencontainers.image.revision": recipe.revision()})
        oci.gc(steps, layout)
        packages = below.packages() + rootfs.python_packages(staged / "work" / "tree" / SITE.lstrip("/"))
        packages += list(extra_packages)
        shutil.rmtree(staged / "work")
        return _finish_image(steps, staged, name, tag, key, epoch, packages, below.layer_bytes() + [size])
    finally:
        shutil.rmtree(staged, ignore_errors=True)


def single_binary_image(binary: Path, name: str, tag: str, entrypoint: tuple[str, ...] | list[str],
                        user: str = PAUSE_USER, steps: Steps | None = None, repository: str = "") -> store.BuiltImage:
    """An image of one layer holding one static binary at entrypoint[0] (mode 0755, owner 0), that entrypoint,
    `user`. Cached under the image cache's `name` folder by the binary's digest; `repository` is the name a
    runtime gives it (default: catalog.repository(name))."""
    entrypoint = tuple(entrypoint)
    steps = steps or Steps(name, store.cache_root() / "logs" / f"{name}.log")
    key = recipe.single_binary_key(binary, name, tag, entrypoint, user)
    found = store.built(name)
    if found and store.inputs_of(name) == key:
        return found
    need(["umoci", "tar"])
    staged = store.staging(name)
    try:
        layer = staged / "layer.tar"
        _one_file_tar(binary, entrypoint[0], layer)
        layout = staged / "layout"
        oci.new(steps, layout, tag)
        oci.add_layer(steps, layout, tag, layer, recipe.BASE_EPOCH, f"{binary.name} ({recipe.file_digest(binary)[:12]})")
        oci.configure(steps, layout, tag, recipe.BASE_EPOCH, user, {}, entrypoint, "/",
                      {"org.opencontainers.image.title": name, "org.opencontainers.image.version": tag})
        oci.gc(steps, layout)
        size = layer.stat().st_size
        layer.unlink()
        return _finish_image(steps, staged, name, tag, key, recipe.BASE_EPOCH,
                             [f"binary {entrypoint[0]} sha256:{recipe.file_digest(binary)}"], [size],
                             f"{repository}:{tag}" if repository else None)
    finally:
        shutil.rmtree(staged, ignore_errors=True)


def _one_file_tar(binary: Path, path: str, target: Path) -> None:
    parts = path.strip("/").split("/")
    with tarfile.open(target, "w", format=tarfile.PAX_FORMAT) as tar:
        for depth in range(1, len(parts)):
            info = tarfile.TarInfo("/".join(parts[:depth]))
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, recipe.BASE_EPOCH
            tar.addfile(info)
        info = tarfile.TarInfo("/".join(parts))
        info.size, info.mode, info.mtime = binary.stat().st_size, 0o755, recipe.BASE_EPOCH
        with open(binary, "rb") as handle:
            tar.addfile(info, handle)


def pause(steps: Steps) -> store.BuiltImage:
    """registry.k8s.io/pause:3.10.1 from cluster-tools' pause binary."""
    from .. import programs

    try:
        binary = programs.program("pause")
    except programs.ToolsMissing as err:
        raise InputMissing(str(err)) from None
    except KeyError:
        raise InputMissing("pause is not built: run `make cluster-tools` (no family of cluster-tools/versions.yaml "
                           "builds it yet)") from None
    return single_binary_image(binary, catalog.PAUSE, catalog.PAUSE_TAG, PAUSE_ENTRYPOINT, PAUSE_USER, steps)


def entry(steps: Steps) -> store.BuiltImage:
    """tfjobgen-entry: cluster-tools' entry binary alone; pods run `/tfjobgen-entry copy <emptyDir path>`."""
    return single_binary_image(_program_of(catalog.ENTRY, "entry"), catalog.ENTRY, catalog.tag(catalog.ENTRY),
                               (ENTRY_PATH,), f"{recipe.NONROOT}:{recipe.NONROOT}", steps)


def _program_of(image: str, program: str) -> Path:
    """The cluster-tools program an image is made of; InputMissing, naming both, when it is not built."""
    try:
        return programs.program(program)
    except (programs.ToolsMissing, KeyError) as err:
        raise InputMissing(f"{image} needs cluster-tools' {program}: {err}") from None


def _folders(files: dict[str, Path]) -> list[str]:
    """Every folder above the files' paths in the image, below /opt, parents first."""
    found = set()
    for at in files:
        parent = PurePosixPath(at).parent
        while str(parent) not in ("/", "/opt"):
            found.add(str(parent))
            parent = parent.parent
    return sorted(found, key=lambda folder: (folder.count("/"), folder))


def team_fixture(steps: Steps) -> store.BuiltImage:
    """tfjobgen-team-fixture: a team's image as the node tier needs one: Debian, python3, the runtime's pinned
    dependencies (tensorflow-cpu), tf-keras (recipe.TF_KERAS, for the keras-fit example), the team's scripts
    (recipe.TEAM_SCRIPTS); nothing of tfjobgen. No entrypoint:
    the job's spec.command says what runs."""
    name, tag = catalog.TEAM_FIXTURE, catalog.tag(catalog.TEAM_FIXTURE)
    base_stage = base(steps)
    deps_stage = deps(steps, "runtime", ("runtime",), base_stage)
    need(["umoci", "unshare", "tar"])
    staged = store.staging(name)
    try:
        inputs = staged / "work" / "inputs"
        inputs.mkdir(parents=True)
        layout = staged / "layout"
        oci.copy(deps_stage.layout, layout)
        steps.stage(f"team: {recipe.TF_KERAS} and the training scripts")
        steps.run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
                   "--only-binary=:all:", "-d", store.cache_root() / "wheelhouse", recipe.TF_KERAS],
                  env={"PIP_CACHE_DIR": str(store.cache_root() / "pip")})
        _overlay(steps, staged / "work", [deps_stage.tree, base_stage.tree], inputs, recipe.BASE_EPOCH, [
            {"run": [*_pip(), "install", "--no-index", "--find-links", "/mnt", "--no-compile", "--no-deps",
                     "--break-system-packages", "--root-user-action=ignore", recipe.TF_KERAS]},
            {"run": ["python3", "-m", "compileall", "-q", "-j", "2", "--invalidation-mode", "unchecked-hash",
                     f"{SITE}/tf_keras"]},
            *({"mkdir": folder, "mode": 0o755, "owner": [0, 0]} for folder in _folders(recipe.TEAM_SCRIPTS)),
            *({"install": str(recipe.REPO / source), "to": at, "mode": 0o644, "owner": [0, 0]}
              for at, source in sorted(recipe.TEAM_SCRIPTS.items()))])
        size = rootfs.layer_tar(steps, staged / "work" / "tree", staged / "work" / "layer.tar")
        oci.add_layer(steps, layout, STAGE_TAG, staged / "work" / "layer.tar", recipe.BASE_EPOCH,
                      "a team's training script", new_tag=tag)
        oci.remove_tag(steps, layout, STAGE_TAG)
        oci.configure(steps, layout, tag, recipe.BASE_EPOCH, f"{recipe.NONROOT}:{recipe.NONROOT}", IMAGE_ENV, (),
                      "/", {"org.opencontainers.image.title": name, "org.opencontainers.image.version": tag})
        oci.gc(steps, layout)
        packages = (deps_stage.packages() + rootfs.python_packages(staged / "work" / "tree" / SITE.lstrip("/"))
                    + [f"script {at}" for at in sorted(recipe.TEAM_SCRIPTS)])
        shutil.rmtree(staged / "work")
        return _finish_image(steps, staged, name, tag, recipe.team_fixture_key(), recipe.BASE_EPOCH, packages,
                             deps_stage.layer_bytes() + [size])
    finally:
        shutil.rmtree(staged, ignore_errors=True)
def prometheus(steps: Steps) -> store.BuiltImage:
    """prometheus:v3.5.0 from cluster-tools' build of Prometheus' module (Debian's 2.42 has no kubernetes_sd)."""
    return single_binary_image(_program_of(catalog.PROMETHEUS, "prometheus"), catalog.PROMETHEUS,
                               catalog.tag(catalog.PROMETHEUS), PROMETHEUS_ENTRYPOINT, MONITORING_USER, steps)


def config_reloader(steps: Steps) -> store.BuiltImage:
    """prometheus-config-reloader:v0.85.0 from cluster-tools' build of the operator's module."""
    return single_binary_image(_program_of(catalog.RELOADER, "prometheus-config-reloader"), catalog.RELOADER,
                               catalog.tag(catalog.RELOADER), RELOADER_ENTRYPOINT, MONITORING_USER, steps)


def _finish_image(steps: Steps, staged: Path, name: str, tag: str, key: str, epoch: int, packages: list[str],
                  layer_bytes: list[int], reference: str | None = None) -> store.BuiltImage:
    layout = staged / "layout"
    oci.archive(steps, layout, staged / "image.tar", epoch)
    (staged / "packages.txt").write_text("".join(f"{p}\n" for p in packages))
    digest, manifest = oci.manifest(layout, tag)
    meta = {"name": name, "tag": tag, "reference": reference or catalog.reference(name), "digest": digest,
            "compressed_bytes": oci.compressed_bytes(layout, tag), "uncompressed_bytes": sum(layer_bytes),
            "layers": [{"digest": layer["digest"], "size": layer["size"], "tar_bytes": size}
                       for layer, size in zip(manifest["layers"], layer_bytes)],
            "built_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "build_seconds": round(steps.elapsed())}
    return store.install(staged, name, meta, key)


# ---- the command ---------------------------------------------------------------------------------

RECIPES = {catalog.RUNTIME: runtime, catalog.PLUGIN: plugin, catalog.PAUSE: pause, catalog.ENTRY: entry,
           catalog.TEAM_FIXTURE: team_fixture, catalog.PROMETHEUS: prometheus, catalog.RELOADER: config_reloader}
# The images `make images` skips with a notice when what they are made of is not built.
OPTIONAL = (catalog.PAUSE, catalog.PLUGIN, catalog.ENTRY, catalog.PROMETHEUS, catalog.RELOADER)


def _current_key(name: str) -> str | None:
    """The input digest the image would be built from now (None: an input is missing)."""
    from .. import programs

    try:
        if name == catalog.RUNTIME:
            return recipe.runtime_key(contract.RUNTIME_COMMAND)
        if name == catalog.PLUGIN:
            return recipe.plugin_key(programs.program("kustomize"))
        if name == catalog.ENTRY:
            return recipe.single_binary_key(programs.program("entry"), catalog.ENTRY, catalog.tag(catalog.ENTRY),
                                            (ENTRY_PATH,), f"{recipe.NONROOT}:{recipe.NONROOT}")
        if name == catalog.TEAM_FIXTURE:
            return recipe.team_fixture_key()
        if name == catalog.PROMETHEUS:
            return recipe.single_binary_key(programs.program("prometheus"), catalog.PROMETHEUS,
                                            catalog.tag(catalog.PROMETHEUS), PROMETHEUS_ENTRYPOINT, MONITORING_USER)
        if name == catalog.RELOADER:
            return recipe.single_binary_key(programs.program("prometheus-config-reloader"), catalog.RELOADER,
                                            catalog.tag(catalog.RELOADER), RELOADER_ENTRYPOINT, MONITORING_USER)
        return recipe.single_binary_key(programs.program("pause"), catalog.PAUSE, catalog.PAUSE_TAG, PAUSE_ENTRYPOINT,
                                        PAUSE_USER)
    except (programs.ToolsMissing, KeyError):
        return None


def build_all(names: list[str], list_only: bool = False, quiet: bool = False) -> int:
    """Build what is missing or out of date; print a table. Exit 1 when a named image (or the runtime)
    could not be built."""
    from ...kit import table

    chosen = names or list(catalog.NAMES)
    for name in chosen:
        catalog.check(name)
    rows, failed = [], False
    try:
        store.check_cache(writing=not list_only)
    except programs.CacheUnusable as err:
        print(f"tfjobgen images: {err}", file=sys.stderr)
        return 1
    if shutil.which(recipe.GIT) is None:  # else FileNotFoundError deep in the first key
        print("tfjobgen images: git is not installed: the images' inputs include the repository's HEAD commit, "
              "which git reads (apt-get install --no-install-recommends git)", file=sys.stderr)
        return 1
    with _lock(list_only):
        for name in chosen:
            started = time.monotonic()
            image, state = store.built(name), "not built"
            key = _current_key(name)
            if image and key and store.inputs_of(name) == key:
                state = "cached"
            elif list_only:
                state = "out of date" if image else "not built"
                if store.problem_of(name):
                    state, failed = "unreadable", True
                    print(f"tfjobgen images: {store.problem_of(name)}; `tfjobgen images build {name}` replaces it",
                          file=sys.stderr)
            else:
                steps = Steps(name, store.cache_root() / "logs" / f"{name}.log", quiet)
                try:
                    image, state = RECIPES[name](steps), "built"
                except InputMissing as err:
                    image, state = None, "not built"
                    print(f"tfjobgen images: {err}", file=sys.stderr)
                    failed |= bool(names) or name not in OPTIONAL
                except (BuildFailed, ToolMissing, OSError) as err:
                    image, state, failed = None, "FAILED", True
                    tail = "\n  ".join(steps.tail()) if isinstance(err, BuildFailed) else ""
                    print(f"tfjobgen images: {name}: {err}" + (f"\n  {tail}\n(full log: {steps.log})" if tail else ""),
                          file=sys.stderr)
                    if isinstance(err, ToolMissing):
                        break
            rows.append([name, image.tag if image else catalog.tag(name),
                         image.digest.split(":")[1][:12] if image else "-",
                         f"{image.compressed_bytes / 2**20:.1f} MiB" if image else "-", state,
                         "-" if list_only else f"{time.monotonic() - started:.0f}s"])
    print(table.render(["IMAGE", "TAG", "DIGEST", "SIZE", "STATE", "TIME"], rows))
    print(f"images in {store.cache_root()}")
    return 1 if failed else 0


class _lock:
    """One build at a time per cache (two test sessions may start `make images` together)."""

    def __init__(self, shared: bool):
        self.shared = shared

    def __enter__(self):
        root = store.cache_root()
        self.handle = None
        if self.shared:  # a listing: it makes nothing, and reads a cache it may not write (or none at all)
            try:
                self.handle = open(root / ".lock", "rb")
            except OSError:
                return self
        else:
            root.mkdir(parents=True, exist_ok=True)
            self.handle = open(root / ".lock", "w")
        mode = fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX
        try:
            fcntl.flock(self.handle, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"tfjobgen images: waiting for another build in {root} ...", file=sys.stderr, flush=True)
            fcntl.flock(self.handle, mode)
        return self

    def __exit__(self, *exc):
        if self.handle:
            self.handle.close()

"""A repository of many jobs, made from this repository's own, for benchmarks and scale tests.

    write_repo(root, jobs=1000)
    run_every_namespace(root); admit_every_team(root)   # for a copy of a repository that routes namespaces

writes, under root: this repository's bases/, overlays/ and plugins/ (both real
overlays: seed-80c expands the jobs untouched, prod-96c patches two of them and
re-points an image), its ten job files, and jobs-10 variants of them: new names,
teams (namespaces team-00 ... team-19), sizes, topologies and QoS classes, drawn
from a seeded random generator, so the same arguments always give the same
files. About a fifth are colocated (one Job per task); the others make four to
seven objects each, so 1,000 jobs make about ten thousand objects.
"""

from __future__ import annotations

import random
import re
import shutil
from pathlib import Path

import yaml

from .sample import REPO, SAMPLE

SEED = 20261123
TEAMS = 20
COPIED = ("bases", "overlays", "plugins")
CLUSTERS = ("seed-80c", "prod-96c")  # the sample's overlays


def _templates() -> list[dict]:
    paths = sorted(p for p in (SAMPLE / "jobs").glob("*.yaml") if p.name != "kustomization.yaml")
    return [yaml.safe_load(p.read_text()) for p in paths]


def variant(template: dict, index: int, rng: random.Random) -> dict:
    """A new job like `template`: its own name and team, and sizes that fit the seed's servers."""
    job = yaml.safe_load(yaml.safe_dump(template))  # a deep copy
    job["metadata"] = {"name": f"{template['metadata']['name']}-{index:04d}", "namespace": f"team-{index % TEAMS:02d}",
                       "labels": {"team": f"team-{index % TEAMS:02d}"}}
    spec = job["spec"]
    topology = spec.setdefault("topology", {})
    star = spec.get("protocol", "grpc") != "grpc"
    if topology.get("mode") == "colocated":
        ps = rng.choice([1, 2, 3])
        workers = ps * topology.get("workersPerServer", 10)
    else:
        topology["mode"] = rng.choice(["isolated", "spread", "spread", "none"]) if not star else "isolated"
        ps = rng.choice([1, 2, 4, 5, 10])
        workers = ps * 8 if star else rng.choice([4, 10, 20, 50, 100])
    spec["roles"]["ps"]["replicas"] = ps
    spec["roles"]["worker"]["replicas"] = workers
    if not star and topology["mode"] != "colocated" and rng.random() < 0.3:
        spec["qos"] = "shared"
        spec["roles"]["worker"]["cpu"] = rng.choice(["500m", "1500m", 3])
    image, _, tag = spec["image"].rpartition(":")
    spec["image"] = f"{image}:{tag}.{index % 5}"
    model_dir = (spec.get("training") or {}).get("modelDir", "")
    if "://" in model_dir:
        # A checkpoint folder of its own, on one cluster: the overlays give only the original its second folder,
        # and two clusters writing one folder are refused. Not drawn from `rng`, so the other draws stay as they were.
        meta = job["metadata"]
        spec["training"]["modelDir"] = f"{model_dir.rstrip('/')}/{meta['namespace']}/{meta['name']}"
        spec["clusters"] = [CLUSTERS[index % len(CLUSTERS)]]
    return job


# The jobs prod-96c patches: a repository without them would fail its patch checks.
PATCHED = ("deeprec-starserver.yaml", "wide-deep.yaml")


def job_texts(jobs: int, seed: int = SEED, originals: tuple[str, ...] | None = None) -> dict[str, str]:
    """File name -> text of every job file: this repository's own (or only `originals`), then variants."""
    rng = random.Random(seed)
    templates = _templates()
    colocated = [t for t in templates if t["spec"].get("topology", {}).get("mode") == "colocated"]
    others = [t for t in templates if t not in colocated]
    texts = {p.name: p.read_text() for p in sorted((SAMPLE / "jobs").glob("*.yaml"))
             if p.name != "kustomization.yaml" and (originals is None or p.name in originals)}
    for index in range(len(texts), jobs):
        template = rng.choice(colocated) if rng.random() < 0.2 else rng.choice(others)
        job = variant(template, index, rng)
        texts[f"{job['metadata']['name']}.yaml"] = yaml.safe_dump(job, sort_keys=False)
    return texts


def run_every_namespace(root: Path) -> None:
    """The variants are spread over twenty teams of their own: every cluster of root's overlays runs every
    namespace (their profiles' spec.namespaces, the sample's two, would leave the variants on none)."""
    for profile in (root / "overlays").glob("*/cluster-profile.yaml"):
        profile.write_text(re.sub(r"(?m)^  namespaces: .*\n", "", profile.read_text()))


def admit_every_team(root: Path) -> None:
    """root's AppProject (argocd/base/project.yaml) admits the variants' teams on every cluster, as a platform
    team adds a destination per team; without them `diff` refuses every variant's namespace."""
    path = root / "argocd" / "base" / "project.yaml"
    project = yaml.safe_load(path.read_text())
    project["spec"]["destinations"] += [{"name": cluster, "namespace": f"team-{team:02d}"}
                                        for cluster in CLUSTERS for team in range(TEAMS)]
    path.write_text(yaml.safe_dump(project, sort_keys=False))


def write_repo(root: Path, jobs: int = 1000, seed: int = SEED, originals: tuple[str, ...] | None = None) -> Path:
    """A repository at root with `jobs` job files and this repository's overlays; returns root.

    `originals` keeps only those of this repository's job files (at least PATCHED), for small trees.
    """
    root.mkdir(parents=True, exist_ok=True)
    for name in COPIED:
        source = REPO if name == "plugins" else SAMPLE  # the tool's plugin, the sample's data
        shutil.copytree(source / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    run_every_namespace(root)
    folder = root / "jobs"
    folder.mkdir()
    texts = job_texts(jobs, seed, originals)
    for name, text in texts.items():
        (folder / name).write_text(text)
    (folder / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
        + "".join(f"- {name}\n" for name in sorted(texts)))
    return root

"""`tfjobgen hydrate`, `tfjobgen build` and `tfjobgen diff`, registered with the CLI (cli.FEATURE_COMMANDS).

Nothing here imports more than argparse until a command runs.
"""

from __future__ import annotations

import sys


def register(commands) -> None:
    hydrate = commands.add_parser(
        "hydrate", help="rewrite rendered/ (rendered-manifests mode for Argo CD), from the repository root",
        description="Build every overlay and write rendered/<cluster>/<namespace>/<job>.yaml. Nothing is written "
                    "unless every overlay builds and passes the checks that protect running jobs.")
    hydrate.add_argument("--check", action="store_true",
                         help="write nothing; exit 1 when rendered/ is stale (what CI runs)")
    hydrate.set_defaults(run=_hydrate)

    built = commands.add_parser(
        "build", help="print what Argo CD gets from one overlay (the config management plugin runs this)",
        description="Build one overlay as `tfjobgen hydrate` does, run the checks that protect running jobs, and "
                    "print the objects (with Argo CD's annotations) as YAML; print nothing and exit 1 when the build "
                    "or a check fails. With --namespace, only that namespace's jobs: one Application per cluster "
                    "and team.")
    built.add_argument("overlay", metavar="OVERLAY", help="the overlay folder, such as overlays/seed-80c or .")
    built.add_argument("--namespace", metavar="NAMESPACE", help="only the jobs of this namespace (a team)")
    built.add_argument("--repo", metavar="ROOT",
                       help="the repository root (default: the nearest folder above OVERLAY with overlays/ and jobs/)")
    built.set_defaults(run=_build)

    diff = commands.add_parser(
        "diff", help="what a change does to each cluster's jobs, compared with a git revision (Markdown)",
        description="Build every overlay at BASE_REF (read from git, no network) and in the working tree, and "
                    "report jobs added, removed and changed, with validation problems. Exit 1 when the change "
                    "has errors.")
    diff.add_argument("base", metavar="BASE_REF", help="the revision to compare with, such as origin/main")
    diff.add_argument("-o", "--output", metavar="FILE", help="write the report here (default: stdout)")
    diff.add_argument("--crds", metavar="DIR",
                      help="folder of CustomResourceDefinition YAML files to validate custom resources against")
    diff.add_argument("--no-place", dest="place", action="store_false",
                      help="skip placing the added and changed jobs on a local cluster of each overlay's profile "
                           "(on by default when `make cluster-tools` has built its programs)")
    diff.set_defaults(run=_diff)


def _hydrate(args) -> int:
    from pathlib import Path

    from . import build, hydrate

    try:
        return hydrate.run(Path.cwd(), args.check)
    except build.ToolMissing as err:
        print(f"tfjobgen hydrate: {err}", file=sys.stderr)
        return 2


def _build(args) -> int:
    from pathlib import Path

    from ..expand import emit
    from . import build, hydrate, tree

    folder = Path(args.overlay).resolve()
    root = Path(args.repo).resolve() if args.repo else tree.find_root(folder)
    if root is None or folder.parent != root / "overlays":
        print(f"tfjobgen build: {args.overlay} is not an overlay folder overlays/<cluster> of a repository with "
              "overlays/ and jobs/", file=sys.stderr)
        return 2
    selection = build.Selection(namespaces=frozenset({args.namespace})) if args.namespace else build.EVERYTHING
    try:
        objects, problems = hydrate.delivered(root, [folder.name], selection)
    except build.ToolMissing as err:
        print(f"tfjobgen build: {err}", file=sys.stderr)
        return 2
    for problem in problems:
        print(problem.format(), file=sys.stderr)
    errors = sum(p.is_error for p in problems)
    if errors or folder.name not in objects:
        print(f"tfjobgen build: {errors} error(s); refusing to hand this build to Argo CD (nothing was printed)",
              file=sys.stderr)
        return 1
    sys.stdout.write(emit.to_yaml(objects[folder.name]))
    return 0


def _diff(args) -> int:
    from pathlib import Path

    from . import build, diff, tree

    try:
        return diff.run(Path.cwd(), args.base, args.output, args.crds, place=args.place)
    except (build.ToolMissing, tree.GitError) as err:
        print(f"tfjobgen diff: {err}", file=sys.stderr)
        return 2

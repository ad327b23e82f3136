"""`tfjobgen hydrate`, `build`, `diff` and `init`, registered with the CLI (cli.FEATURE_COMMANDS).

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

    init = commands.add_parser(
        "init", help="write a new jobs-only repository for a team (overlays, jobs/, pipeline, Argo CD objects)",
        description="Write a jobs repository into DIR (new or empty): an overlay and ClusterProfile per cluster, "
                    "jobs/ with one example, the jobs pipeline, the Argo CD objects, pre-commit, tfjobgen pinned "
                    "in requirements.txt, and rendered/ already current. Asks for what the flags leave out when "
                    "run in a terminal.")
    init.add_argument("folder", metavar="DIR", help="where the repository goes (absent or empty)")
    init.add_argument("--cluster", action="append", default=[], metavar="NAME:CPU:MEMORY[:RESERVED]",
                      help="a cluster and its servers, such as prod-64c:64:512Gi:2 (repeat for each cluster)")
    init.add_argument("--namespace", metavar="TEAM", help="the team's namespace, where its jobs run")
    init.add_argument("--registry", default="", metavar="REGISTRY/PATH",
                      help="where the team's images live, such as harbor.corp.example/ml")
    init.add_argument("--monitoring-namespace", default="", metavar="NAMESPACE",
                      help="the Prometheus Operator's namespace (leave out: no monitoring objects)")
    init.add_argument("--kubernetes", default="1.30", metavar="1.N",
                      help="the oldest Kubernetes minor release the clusters run (default: 1.30)")
    init.add_argument("--repo-url", default="https://git.example.com/your-team/training-jobs.git",
                      help="where Argo CD reads the new repository")
    init.set_defaults(run=_init)


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
    from . import build, clusters, hydrate, tree

    folder = Path(args.overlay).resolve()
    root = Path(args.repo).resolve() if args.repo else tree.find_root(folder)
    if root is None or folder.parent != root / "overlays":
        print(f"tfjobgen build: {args.overlay} is not an overlay folder overlays/<cluster> of a repository with "
              "overlays/ and jobs/", file=sys.stderr)
        return 2
    if args.namespace is not None:
        jobs, _ = tree.job_files(root)  # an unreadable job file: the build says where
        wrong = clusters.namespace_problem(root, args.namespace, clusters.read(root, [folder.name])[0], jobs)
        if wrong:
            print(f"tfjobgen build: --namespace: {wrong}", file=sys.stderr)
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

    from ..kit import files
    from . import build, diff, tree

    try:
        return diff.run(Path.cwd(), args.base, args.output, args.crds, place=args.place)
    except (build.ToolMissing, tree.GitError, files.WriteFailed) as err:  # the last: a scratch copy's file
        print(f"tfjobgen diff: {err}", file=sys.stderr)
        return 2


def _init(args) -> int:
    from pathlib import Path

    from . import scaffold

    try:
        clusters = [scaffold.parse_cluster(text) for text in args.cluster or _ask(
            "clusters, as NAME:CPU:MEMORY[:RESERVED] separated by spaces (such as prod-64c:64:512Gi:2)", "--cluster"
        ).split()]
        namespace = args.namespace or _ask("the team's namespace (such as ranking)", "--namespace")
        answers = scaffold.Answers(tuple(clusters), namespace, args.registry, args.monitoring_namespace,
                                   args.kubernetes, args.repo_url)
        problems = scaffold.run(Path(args.folder), answers)
    except scaffold.InitError as err:
        print(f"tfjobgen init: {err}", file=sys.stderr)
        return 1
    for problem in problems:
        print(problem.format(), file=sys.stderr)
    if any(p.is_error for p in problems):
        print("tfjobgen init: the new repository does not build (above); nothing was written", file=sys.stderr)
        return 1
    return 0


def _ask(question: str, flag: str) -> str:
    """An answer typed in a terminal; without one, the flag that gives it."""
    from . import scaffold

    if not sys.stdin.isatty():
        raise scaffold.InitError(f"{flag} is missing (and there is no terminal to ask in)")
    try:
        answer = input(f"{question}: ").strip()
    except EOFError:
        answer = ""
    if not answer:
        raise scaffold.InitError(f"no answer for {flag}")
    return answer

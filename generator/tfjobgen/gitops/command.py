"""`tfjobgen hydrate` and `tfjobgen diff`, registered with the CLI (cli.FEATURE_COMMANDS).

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

    diff = commands.add_parser(
        "diff", help="what a change does to each cluster's jobs, compared with a git revision (Markdown)",
        description="Build every overlay at BASE_REF (read from git, no network) and in the working tree, and "
                    "report jobs added, removed and changed, with validation problems. Exit 1 when the change "
                    "has errors.")
    diff.add_argument("base", metavar="BASE_REF", help="the revision to compare with, such as origin/main")
    diff.add_argument("-o", "--output", metavar="FILE", help="write the report here (default: stdout)")
    diff.add_argument("--crds", metavar="DIR",
                      help="folder of CustomResourceDefinition YAML files to validate custom resources against")
    diff.set_defaults(run=_diff)


def _hydrate(args) -> int:
    from pathlib import Path

    from . import build, hydrate

    try:
        return hydrate.run(Path.cwd(), args.check)
    except build.ToolMissing as err:
        print(f"tfjobgen hydrate: {err}", file=sys.stderr)
        return 2


def _diff(args) -> int:
    from pathlib import Path

    from . import build, diff, tree

    try:
        return diff.run(Path.cwd(), args.base, args.output, args.crds)
    except (build.ToolMissing, tree.GitError) as err:
        print(f"tfjobgen diff: {err}", file=sys.stderr)
        return 2

"""`tfjobgen images ...`, registered with the CLI (cli.FEATURE_COMMANDS).

    tfjobgen images build [NAME...]   build what is missing or out of date (make images); a table
    tfjobgen images list [NAME...]    what is built, and whether it is current; builds nothing

Nothing here imports more than argparse until a command runs.
"""

from __future__ import annotations

import sys


def register(commands) -> None:
    images = commands.add_parser(
        "images", help="container images built without a Docker engine (mmdebstrap, umoci): make images",
        description="Build tfjobgen's container images as OCI layouts and oci-archive tars under "
                    "~/.cache/tfjobgen/images (TFJOBGEN_IMAGES_CACHE): tfjobgen-runtime, tfjobgen-argocd-plugin, "
                    "registry.k8s.io/pause from cluster-tools' pause binary, tfjobgen-entry from its entry binary, and the "
                    "node tier's fixture tfjobgen-team-fixture (docs/images.md).")
    actions = images.add_subparsers(dest="action", required=True, metavar="ACTION")
    for action, text in (("build", "build the images that are missing or out of date (runs as root)"),
                         ("list", "say what is built; build nothing")):
        parser = actions.add_parser(action, help=text)
        parser.add_argument("names", nargs="*", metavar="NAME",
                            help="tfjobgen-runtime, tfjobgen-argocd-plugin, pause, tfjobgen-entry, tfjobgen-team-fixture "
                                 "(default: all)")
        parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
        parser.set_defaults(run=_run, list_only=action == "list")


def _run(args) -> int:
    from . import build, catalog

    try:
        return build.build_all(args.names, list_only=args.list_only, quiet=args.quiet)
    except catalog.UnknownImage as err:
        print(f"tfjobgen images: {err}", file=sys.stderr)
        return 2

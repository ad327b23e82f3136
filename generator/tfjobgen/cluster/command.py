"""`tfjobgen cluster ...`, registered with the CLI (cli.FEATURE_COMMANDS).

    tfjobgen cluster tools [FAMILY...] [--on-request] [--list]   build the cluster's programs (make cluster-tools)
    tfjobgen cluster up --profile FILE [--nodes N] [--real-nodes N [--monitoring]] [--kubernetes RELEASE]
                        [--name NAME] [--argocd REPO [--argocd-mode ...]]
    tfjobgen cluster down [--name NAME]
    tfjobgen cluster list

`tfjobgen place`, which starts clusters of its own, is place/command.py.
Nothing here imports more than argparse until a command runs.
"""

from __future__ import annotations

import sys

EXIT_OK, EXIT_FAILED = 0, 1


def register(commands) -> None:
    from .home import DEFAULT_NAME

    cluster = commands.add_parser(
        "cluster", help="a local Kubernetes cluster shaped as a cluster profile (real control plane, KWOK nodes)",
        description="Start and stop a local cluster: etcd, kube-apiserver, kube-controller-manager, kube-scheduler "
                    "and KWOK's fake kubelets, built from Go modules by `make cluster-tools` (docs/cluster.md).")
    actions = cluster.add_subparsers(dest="action", required=True, metavar="ACTION")

    tools = actions.add_parser("tools", help="build the cluster's programs that are not built yet")
    tools.add_argument("families", nargs="*", metavar="FAMILY",
                       help="only these (default: all of versions.yaml but those built on request)")
    tools.add_argument("--on-request", action="store_true",
                       help="also the families versions.yaml builds only on request (on_request: true; make releases)")
    tools.add_argument("--list", action="store_true", help="say what is built; build nothing")
    tools.set_defaults(run=_tools)

    up = actions.add_parser(
        "up", help="start a cluster shaped as a profile; print its kubeconfig's path",
        description="Start a local cluster with the profile's nodes (count, CPU, memory, labels, taints, GPUs) and "
                    "PriorityClasses. Returns once every node is Ready; the last line on stdout is the kubeconfig's "
                    "path. The cluster runs until `tfjobgen cluster down`.")
    up.add_argument("--profile", metavar="FILE", help="ClusterProfile file (default: the embedded profile)")
    up.add_argument("--nodes", type=node_count, metavar="N",
                    help="nodes of the main group, and of every pool the profile does not count")
    up.add_argument("--name", default=DEFAULT_NAME, help=f"the cluster's name (default: {DEFAULT_NAME})")
    up.add_argument("--real-nodes", type=_real_nodes, default=0, metavar="N",
                    help="make the first N nodes of the main group real: kubelet, containerd, CNI, CoreDNS, "
                         "kube-router and a registry with the images of `make images` (root; docs/nodes.md)")
    up.add_argument("--monitoring", action="store_true",
                    help="also run the Prometheus Operator and a Prometheus pod in the profile's monitoring namespace "
                         "on a real node, scraping what the profile's jobs render (needs --real-nodes and the "
                         "images of `make images`; docs/observability.md)")
    up.add_argument("--kubernetes", default="", metavar="RELEASE",
                    help="the control plane's Kubernetes release, a minor (1.30) or exact (v1.30.14) one of "
                         "cluster-tools/versions.yaml (default: the kubernetes family's; docs/releases.md)")
    up.add_argument("--argocd", metavar="REPO",
                    help="also run Argo CD, syncing this cluster's Applications from the git repository REPO "
                         "(a path or file:// URL; its checked-out branch) with the repository's argocd/ objects")
    up.add_argument("--argocd-mode", choices=["plugin", "rendered"],
                    help="which ApplicationSet of argocd/ to apply (default: plugin)")
    up.add_argument("--argocd-plugin-image", action="store_true",
                    help="run the plugin's argocd-cmp-server in the tfjobgen-argocd-plugin image of `make images`, "
                         "with runc, as the repo-server's sidecar (root; default: a local process)")
    up.add_argument("--quiet", action="store_true", help="no progress on stderr")
    up.set_defaults(run=_up)

    down = actions.add_parser("down", help="stop a cluster and remove its files")
    down.add_argument("--name", default=DEFAULT_NAME, help=f"the cluster's name (default: {DEFAULT_NAME})")
    down.set_defaults(run=_down)

    listed = actions.add_parser("list", help="the local clusters and their kubeconfigs")
    listed.set_defaults(run=_list)


def whole_number(text: str, least: str, most: int | None = None, why_most: str = "") -> int:
    """A flag's count: argparse prints the message after the flag's name (`argument --orders: ...`)."""
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: {least}")
    if most is not None and value > most:
        raise argparse.ArgumentTypeError(f"{value}: {why_most}")
    return value


def node_count(text: str) -> int:
    from .shape import MAX_NODES

    return whole_number(text, "a cluster needs at least 1 node", MAX_NODES,
                         f"a local cluster holds at most {MAX_NODES} nodes")


def _real_nodes(text: str) -> int:
    from .nodes.network import MAX_REAL_NODES

    if text.strip() == "0":
        return 0
    return whole_number(text, "0 or more real nodes", MAX_REAL_NODES,
                         f"at most {MAX_REAL_NODES} real nodes fit the cluster's bridge")


def _tools(args) -> int:
    from ..artifacts import go_build

    return go_build.build_all(args.families, list_only=args.list, on_request=args.on_request)


def _up(args) -> int:
    from ..artifacts import programs
    from ..expand import pipeline
    from . import control, processes, shape
    from .controllers import argocd
    from .nodes import bring_up, network

    def say(line: str) -> None:
        if not args.quiet:
            print(f"cluster {args.name}: {line}", file=sys.stderr, flush=True)

    def warn(line: str) -> None:
        print(f"cluster {args.name}: {line}", file=sys.stderr, flush=True)

    try:
        if (args.argocd_mode or args.argocd_plugin_image) and not args.argocd:
            flag = "--argocd-mode" if args.argocd_mode else "--argocd-plugin-image"
            raise argocd.ArgoCDError(f"{flag} needs --argocd REPO")
        gitops = argocd.source(args.argocd, args.argocd_mode or "plugin", args.argocd_plugin_image) \
            if args.argocd else None
        state = control.up(pipeline.load_profile(args.profile), args.nodes, args.name, say, warn, gitops,
                           real_nodes=args.real_nodes, kubernetes=args.kubernetes, monitoring=args.monitoring)
    except (control.ClusterError, argocd.ArgoCDError, programs.ToolsMissing, processes.StartFailed, TimeoutError,
            shape.TooManyNodes, bring_up.NodesError, network.NetworkError) as err:
        print(f"tfjobgen cluster up: {err}", file=sys.stderr)
        return EXIT_FAILED
    print(state.kubeconfig)
    return EXIT_OK


def _down(args) -> int:
    from . import control

    try:
        stopped = control.down(args.name)
    except control.ClusterError as err:
        print(f"tfjobgen cluster down: {err}", file=sys.stderr)
        return EXIT_FAILED
    print(f"cluster {args.name}: stopped {len(stopped)} process(es), removed its files", file=sys.stderr)
    return EXIT_OK


def _list(args) -> int:
    """The clusters of the home; one line on stderr for each entry that is not one (a link, a folder `up` did not
    make) or whose state cannot be read, and exit 1 then: the others are listed all the same."""
    from ..kit import table
    from . import home, processes

    rows, skipped = [], []
    try:
        names = home.names()
    except home.HomeUnusable as err:
        print(f"tfjobgen cluster list: {err}", file=sys.stderr)
        return EXIT_FAILED
    for name in names:
        try:
            folder = home.folder(name)
            if not home.made_by_up(folder):
                skipped.append(f"{folder} was not made by `tfjobgen cluster up` (it has no {home.MARKER_FILE}): "
                               "not listed")
                continue
            state = home.load(name)
        except home.NameRefused as err:
            skipped.append(f"{home.shown(name)} in {home.clusters_root()}: {err.problem}")
            continue
        except home.StateUnreadable as err:
            skipped.append(f"{err}; `tfjobgen cluster down --name {name}` stops it")
            continue
        alive = len(processes.running(folder))
        rows.append([name, state.profile_name if state else "-", (state.kubernetes or "-") if state else "-",
                     state.nodes if state else "-",
                     len(state.real_nodes) if state else "-",
                     f"{alive} running" if state else "starting or broken", state.kubeconfig if state else "-"])
    print(table.render(["NAME", "PROFILE", "KUBERNETES", "NODES", "REAL", "PROCESSES", "KUBECONFIG"], rows) if rows
          else "no local clusters")
    for line in skipped:
        print(f"tfjobgen cluster list: {line}", file=sys.stderr)
    return EXIT_FAILED if skipped else EXIT_OK

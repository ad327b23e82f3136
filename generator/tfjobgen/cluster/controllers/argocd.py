"""Argo CD beside a local cluster: `tfjobgen cluster up ... --argocd REPO [--argocd-mode plugin|rendered]`.

Argo CD's own parts run as local processes of the cluster, marked like the control plane so that
`cluster down` stops them (its development setup, the Procfile, runs them the same way):

    redis-server                       Debian's, on a free port of 127.0.0.1, nothing saved to disk
    argocd-repo-server                 clones REPO over file://, hands plugin sources to the cmp-server
    argocd-cmp-server                  the repository's argocd/plugin/plugin.yaml, read where it lies, with
                                       PATH holding only bash, python3 (this venv's) and kustomize (what the
                                       sidecar image holds) and no network (its own network namespace);
                                       with --argocd-plugin-image, in the tfjobgen-argocd-plugin image
                                       itself, under runc (plugin_sidecar.py)
    argocd-application-controller      reconciles every few seconds (TIMING below)
    argocd-applicationset-controller

Then it applies, as a user following docs/gitops.md would: Argo CD's CRDs and configuration from the
release (the cluster-tools assets), the repository's health checks (argocd/argocd-cm-patch.yaml), this
cluster registered under the profile's name (a ServiceAccount token, as `argocd cluster add` makes),
the namespaces the AppProject names for it, and argocd/<mode> built by kustomize with settings.yaml
pointing at REPO. The ApplicationSet's list is cut to this cluster's destinations: the other clusters
of the AppProject are not registered here.
"""

from __future__ import annotations

import base64
import json
import secrets
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ...artifacts import programs
from .. import processes
from ..processes import Component
from .base import install, load_yaml_files, wait_healthy

MODES = ("plugin", "rendered")
NAMESPACE = "argocd"
PROGRAMS = ["argocd", "kustomize"]
API = "argoproj.io/v1alpha1"
# A commit is seen within a period of seconds: the controller compares every app this often, the
# repo-server forgets a branch's commit as soon, and a failed build shows at once rather than after the
# 180 s in which Argo CD keeps an app's last good state. Set in Argo CD's ConfigMaps, handed to the
# processes as environment variables as Argo CD's own manifests map them.
TIMING = {"argocd-cm": {"timeout.reconciliation": "5s", "timeout.reconciliation.jitter": "0s"},
          # A Go duration: Argo CD parses this key with time.ParseDuration (a bare "180", as its example
          # argocd-cmd-params-cm.yaml shows, is refused with a warning and the default kept).
          "argocd-cmd-params-cm": {"controller.repo.error.grace.period.seconds": "5s"}}
FROM_CONFIG = {"ARGOCD_RECONCILIATION_TIMEOUT": ("argocd-cm", "timeout.reconciliation"),
               "ARGOCD_RECONCILIATION_JITTER": ("argocd-cm", "timeout.reconciliation.jitter"),
               "ARGOCD_REPO_ERROR_GRACE_PERIOD_SECONDS": ("argocd-cmd-params-cm",
                                                          "controller.repo.error.grace.period.seconds")}
MANAGER = "tfjobgen-cluster"
START_TIMEOUT = 90.0
SOCKET_PATH_LIMIT = 107  # sun_path


class ArgoCDError(Exception):
    """One line for the user: REPO unusable, a program missing, argocd/ that cannot be applied."""


@dataclass(frozen=True)
class Source:
    """The git repository Argo CD reads, and the mode whose ApplicationSet is applied."""

    root: Path
    revision: str  # the branch checked out there
    mode: str = "plugin"
    image: bool = False  # the cmp-server in the plugin image of `make images` (runc), not a local process

    @property
    def url(self) -> str:
        return self.root.as_uri()


def source(repo: str, mode: str, image: bool = False) -> Source:
    """REPO (a path or a file:// URL) checked before anything starts."""
    if mode not in MODES:
        raise ArgoCDError(f"--argocd-mode {mode!r}: use one of {', '.join(MODES)}")
    path = Path(repo[len("file://"):] if repo.startswith("file://") else repo).expanduser()
    if not path.is_dir():
        raise ArgoCDError(f"--argocd {repo}: no such folder (a local git repository: a path or a file:// URL)")
    root = path.resolve()
    top = _git(root, "rev-parse", "--show-toplevel")
    if top is None or Path(top).resolve() != root:
        raise ArgoCDError(f"--argocd {repo}: not the top folder of a git repository")
    branch = _git(root, "symbolic-ref", "--short", "-q", "HEAD")
    if not branch:
        raise ArgoCDError(f"--argocd {repo}: HEAD is detached; check out a branch (Argo CD follows a branch)")
    for needed in (f"argocd/{mode}/kustomization.yaml", "argocd/base/settings.yaml", "argocd/plugin/plugin.yaml"):
        if not (root / needed).is_file():
            raise ArgoCDError(f"--argocd {repo}: {needed} is missing (the repository's Argo CD objects)")
    if image:
        from . import plugin_sidecar

        try:
            plugin_sidecar.image()
        except plugin_sidecar.SidecarError as err:
            raise ArgoCDError(str(err)) from None
    return Source(root, branch, mode, image)


def check(source: Source, cluster: str) -> None:
    """Before anything starts: the programs, and argocd/<mode> giving this cluster an Application."""
    check_programs()
    built_objects(source, cluster)


def check_programs() -> None:
    """The programs Argo CD needs here, or ToolsMissing saying how to get them."""
    lacking = programs.missing(PROGRAMS)
    if lacking:
        raise programs.ToolsMissing(f"{', '.join(lacking)} not built: run `make cluster-tools` "
                                 f"(binaries go to {programs.cache_root()})")
    if shutil.which("redis-server") is None:
        raise programs.ToolsMissing("redis-server is not installed (Argo CD's cache): apt-get install redis-server")


def _git(root: Path, *args: str) -> str | None:
    try:
        proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


# ---- starting --------------------------------------------------------------------------------------

def start(context, source: Source) -> dict:
    """Start Argo CD beside the cluster of `context` (context.py) and apply argocd/<mode>.

    What the cluster's state records of it: mode, repository, revision, Applications, namespaces.
    """
    folder = context.files.home / "argocd"
    for sub in ("bin", "plugins", "home", "redis", "tls", "ssh", "gnupg", "tmp-repo-server", "tmp-cmp-server"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    plugin = _plugin_name(source.root / "argocd" / "plugin" / "plugin.yaml")
    plugin_socket = folder / "plugins" / f"{plugin}.sock"
    if len(str(plugin_socket)) > SOCKET_PATH_LIMIT:
        raise ArgoCDError(f"the plugin's socket path {plugin_socket} is longer than {SOCKET_PATH_LIMIT} characters: "
                          "use a shorter --name or TFJOBGEN_CLUSTER_HOME")
    redis_port, repo_port, repo_metrics, controller_metrics, appset_metrics, appset_probe, appset_webhook = \
        context.ports("redis", "repo-server", "repo-server metrics", "application-controller metrics",
                      "applicationset-controller metrics", "applicationset-controller probe",
                      "applicationset-controller webhook")

    context.say("Argo CD: redis")
    redis = context.launch(Component("redis", [
        shutil.which("redis-server"), "--port", str(redis_port), "--bind", "127.0.0.1", "--protected-mode", "yes",
        "--save", "", "--appendonly", "no", "--dir", str(folder / "redis"), "--loglevel", "warning",
        "--set-proc-title", "no"]))  # its title would overwrite the environment, and the mark `cluster down` finds
    processes.wait_for(redis, lambda: _redis_ping(redis_port), START_TIMEOUT, f"PONG on 127.0.0.1:{redis_port}")

    context.say("Argo CD: CRDs, configuration, this cluster registered")
    family = programs.family_of("argocd")
    install(context.objects, [o for o in load_yaml_files(family.asset("manifests/crds"))
                              if o["kind"] == "CustomResourceDefinition"])
    context.objects.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}, manager=MANAGER)
    settings = _configuration(context, family, source)
    _register_cluster(context)

    common = {
        "KUBECONFIG": str(context.files.kubeconfig), "ARGOCD_FAKE_IN_CLUSTER": "true",
        "HOME": str(folder / "home"), "ARGOCD_TLS_DATA_PATH": str(folder / "tls"),
        "ARGOCD_SSH_DATA_PATH": str(folder / "ssh"), "ARGOCD_GNUPGHOME": str(folder / "gnupg"),
        "ARGOCD_GPG_ENABLED": "false", "ARGOCD_PLUGINSOCKFILEPATH": str(folder / "plugins"),
        **{variable: settings[config_map][key] for variable, (config_map, key) in FROM_CONFIG.items()},
    }
    argocd = str(programs.program("argocd"))
    redis_address, repo_address = f"127.0.0.1:{redis_port}", f"127.0.0.1:{repo_port}"
    logs = ["--logformat", "text", "--loglevel", "info"]

    context.say(f"Argo CD: repo-server, cmp-server (plugin {plugin}), application-controller, "
                "applicationset-controller")
    repo_server = context.launch(Component("argocd-repo-server", [
        argocd, "--address", "127.0.0.1", "--port", str(repo_port), "--metrics-address", "127.0.0.1",
        "--metrics-port", str(repo_metrics), "--redis", redis_address, *logs],
        env={**common, "ARGOCD_BINARY_NAME": "argocd-repo-server", "TMPDIR": str(folder / "tmp-repo-server"),
             "ARGOCD_ASK_PASS_SOCK": str(folder / "ask-pass.sock")}))
    if source.image:  # the sidecar container as repo-server-patch.yaml makes it, its plugin.yaml the image's
        from . import plugin_sidecar

        try:
            sidecar = plugin_sidecar.command(folder / "sidecar", programs.program("argocd"), folder / "plugins",
                                             (processes.MARKER, str(context.files.home)), logs)
        except plugin_sidecar.SidecarError as err:
            raise ArgoCDError(str(err)) from None
        cmp_server = context.launch(Component("argocd-cmp-server", sidecar, env=plugin_sidecar.environment()))
    else:
        cmp_server = context.launch(Component("argocd-cmp-server", [
            *_without_network(), argocd, "--config-dir-path", str(source.root / "argocd" / "plugin"), *logs],
            env={"ARGOCD_BINARY_NAME": "argocd-cmp-server", "ARGOCD_PLUGINSOCKFILEPATH": str(folder / "plugins"),
                 "PATH": str(_sidecar_path(folder / "bin")), "HOME": str(folder / "home"),
                 "TMPDIR": str(folder / "tmp-cmp-server")}))
    controller = context.launch(Component("argocd-application-controller", [
        argocd, "--namespace", NAMESPACE, "--redis", redis_address, "--repo-server", repo_address,
        "--metrics-port", str(controller_metrics), *logs],
        env={**common, "ARGOCD_BINARY_NAME": "argocd-application-controller"}))
    appset = context.launch(Component("argocd-applicationset-controller", [
        argocd, "--namespace", NAMESPACE, "--argocd-repo-server", repo_address,
        "--metrics-addr", f"127.0.0.1:{appset_metrics}", "--probe-addr", f"127.0.0.1:{appset_probe}",
        "--webhook-addr", f"127.0.0.1:{appset_webhook}", *logs],
        env={**common, "ARGOCD_BINARY_NAME": "argocd-applicationset-controller"}))

    wait_healthy(repo_server, repo_metrics, "/healthz?full=true", START_TIMEOUT)
    processes.wait_for(cmp_server, plugin_socket.exists, START_TIMEOUT, f"its socket {plugin_socket}")
    wait_healthy(controller, controller_metrics, "/healthz", START_TIMEOUT)
    # It registers no health check: its probe server answering (404) means the manager has started.
    processes.wait_for(appset, lambda: _answers(appset_probe), START_TIMEOUT, f"its probe server on {appset_probe}")

    applications = apply(context.objects, source, context.profile.name)
    context.say(f"Argo CD: {len(applications)} Application(s) in {source.mode} mode, from {source.url} "
                f"branch {source.revision}")
    return {"mode": source.mode, "repoURL": source.url, "revision": source.revision, "namespace": NAMESPACE,
            "applications": applications, "plugin": plugin, "pluginImage": source.image}


def _answers(port: int) -> bool:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1):
            return True
    except urllib.error.HTTPError:
        return True


def _redis_ping(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=1) as connection:
        connection.sendall(b"PING\r\n")
        return connection.recv(16).startswith(b"+PONG")


def _plugin_name(plugin_yaml: Path) -> str:
    """`<metadata.name>-<spec.version>`: what Applications name, and the socket the cmp-server listens on."""
    import yaml

    config = yaml.safe_load(plugin_yaml.read_text())
    name, version = config["metadata"]["name"], (config.get("spec") or {}).get("version")
    return f"{name}-{version}" if version else name


def _configuration(context, family: programs.Family, source: Source) -> dict[str, dict]:
    """argocd-cm and the other configuration objects of the release, in namespace argocd; their data by name.

    argocd-cm gets the repository's argocd-cm-patch.yaml merged in, as docs/gitops.md says to; both
    ConfigMaps get TIMING.
    """
    import yaml

    patch_file = source.root / "argocd" / "argocd-cm-patch.yaml"
    patch = (yaml.safe_load(patch_file.read_text()) or {}).get("data") or {} if patch_file.is_file() else {}
    settings = {}
    for obj in load_yaml_files(family.asset("manifests/base/config")):
        if obj["kind"] not in ("ConfigMap", "Secret"):
            continue  # its kustomization.yaml
        name = obj["metadata"]["name"]
        obj["metadata"]["namespace"] = NAMESPACE
        if obj["kind"] == "ConfigMap":
            obj["data"] = settings[name] = {**(obj.get("data") or {}), **(patch if name == "argocd-cm" else {}),
                                            **TIMING.get(name, {})}
        elif name == "argocd-secret":
            # What argocd-server writes at its first start (it does not run here); the ApplicationSet
            # controller's settings are incomplete without it.
            obj["stringData"] = {"server.secretkey": secrets.token_urlsafe(32)}
        context.objects.apply(obj, manager=MANAGER)
    return settings


def _register_cluster(context) -> None:
    """This cluster in Argo CD under the profile's name, as `argocd cluster add` registers one: a
    ServiceAccount with cluster-admin and its token, the API server's address and CA."""
    objects, name = context.objects, context.profile.name
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "argocd-manager",
                                                                          "namespace": "kube-system"}}
    objects.apply(account, manager=MANAGER)
    objects.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                   "metadata": {"name": "argocd-manager-role-binding"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
                   "subjects": [{"kind": "ServiceAccount", "name": "argocd-manager", "namespace": "kube-system"}]},
                  manager=MANAGER)
    objects.apply({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
                   "metadata": {"name": "argocd-manager-token", "namespace": "kube-system",
                                "annotations": {"kubernetes.io/service-account.name": "argocd-manager"}}},
                  manager=MANAGER)
    from ...kube.api import wait_until

    token = wait_until(lambda: ((objects.get("v1", "Secret", "argocd-manager-token", "kube-system") or {})
                                .get("data") or {}).get("token"), 30, "the argocd-manager ServiceAccount's token")
    kubeconfig = json.loads(context.files.kubeconfig.read_text())
    cluster = kubeconfig["clusters"][0]["cluster"]
    config = {"bearerToken": base64.b64decode(token).decode(),
              "tlsClientConfig": {"caData": cluster["certificate-authority-data"]}}
    objects.apply({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                   "metadata": {"name": f"cluster-{name}", "namespace": NAMESPACE,
                                "labels": {"argocd.argoproj.io/secret-type": "cluster"}},
                   "stringData": {"name": name, "server": cluster["server"], "config": json.dumps(config)}},
                  manager=MANAGER)


def _without_network() -> list[str]:
    """A prefix that runs a program in a network namespace of its own (nothing but a down loopback)."""
    unshare = shutil.which("unshare") or "unshare"  # by its path: the plugin server's PATH is the sidecar's
    for prefix in ([unshare, "--net"], [unshare, "--user", "--map-root-user", "--net"]):
        try:
            if subprocess.run([*prefix, "true"], capture_output=True, timeout=10).returncode == 0:
                return [*prefix, "--"]
        except (OSError, subprocess.TimeoutExpired):
            continue
    raise ArgoCDError("cannot run the plugin server without network: `unshare --net` is not permitted here")


def _sidecar_path(folder: Path) -> Path:
    """A folder with what the plugin's sidecar image holds: bash, python3 and kustomize, nothing else.

    python3 is this virtual environment's (tfjobgen's dependencies; the plugin runs the commit's own
    generator/), through a script because a symbolic link to a venv's python leaves the venv.
    """
    import sys

    bash = shutil.which("bash") or "/bin/bash"
    (folder / "python3").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (folder / "python3").chmod(0o755)
    for name, target in (("bash", bash), ("kustomize", str(programs.program("kustomize")))):
        link = folder / name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target)
    return folder


# ---- what is applied -------------------------------------------------------------------------------

def built_objects(source: Source, cluster: str) -> list[dict]:
    """argocd/<mode> as kustomize builds it after settings.yaml was set to REPO and its branch, the
    ApplicationSet's list cut to `cluster`'s destinations (the only cluster registered here)."""
    import yaml

    with tempfile.TemporaryDirectory(prefix="tfjobgen-argocd-") as scratch:
        copy = Path(scratch) / "argocd"
        shutil.copytree(source.root / "argocd", copy)
        settings_file = copy / "base" / "settings.yaml"
        settings = yaml.safe_load(settings_file.read_text())
        settings["data"].update(repoURL=source.url, revision=source.revision)
        settings_file.write_text(yaml.safe_dump(settings, sort_keys=False))
        proc = subprocess.run([str(programs.program("kustomize")), "build", str(copy / source.mode)],
                              capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise ArgoCDError(f"kustomize build argocd/{source.mode}: "
                          f"{(proc.stderr.strip().splitlines() or ['failed, and said nothing'])[-1]}")
    objects = [o for o in yaml.safe_load_all(proc.stdout) if o]
    for obj in objects:
        if obj["kind"] != "ApplicationSet":
            continue
        for generator in obj["spec"].get("generators") or []:
            if "list" in generator:
                elements = [e for e in generator["list"].get("elements") or [] if e.get("name") == cluster]
                if not elements:
                    raise ArgoCDError(f"argocd/base/project.yaml names no destination on cluster {cluster!r} "
                                      "(the profile's name): no Application would run here")
                generator["list"]["elements"] = elements
    return objects


def selected(generator: dict) -> list[dict]:
    """A list generator's elements that its selector keeps (matchExpressions In and NotIn, matchLabels): the
    ones the ApplicationSet controller makes Applications of. The AppProject's dashboards namespace is a
    destination that the selector leaves out."""
    def keeps(element: dict) -> bool:
        selector = generator.get("selector") or {}
        if any(str(element.get(k)) != str(v) for k, v in (selector.get("matchLabels") or {}).items()):
            return False
        for expression in selector.get("matchExpressions") or []:
            inside = str(element.get(expression["key"], "")) in [str(v) for v in expression.get("values") or []]
            if (expression["operator"] == "In" and not inside) or (expression["operator"] == "NotIn" and inside):
                return False
        return True
    return [e for e in generator["list"].get("elements") or [] if keeps(e)]


def _destination_namespaces(built: list[dict], cluster: str) -> set[str]:
    """The namespaces the AppProject lets Applications use on `cluster`."""
    return {d["namespace"] for o in built if o["kind"] == "AppProject"
            for d in o["spec"].get("destinations") or [] if d.get("name") == cluster}


def apply(objects, source: Source, cluster: str, timeout: float = 60) -> list[str]:
    """Apply argocd/<mode> (the AppProject and ApplicationSet) for `cluster`, with the namespaces its
    destinations name; the Applications the ApplicationSet made, once it made them all."""
    from kubernetes.client.exceptions import ApiException

    from ...kube.api import wait_until

    built = built_objects(source, cluster)
    appsets = {o["metadata"]["name"]: sum(len(selected(g)) for g in o["spec"]["generators"] if "list" in g)
               for o in built if o["kind"] == "ApplicationSet"}
    for namespace in sorted(_destination_namespaces(built, cluster)):
        objects.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}, manager=MANAGER)
    for obj in built:
        try:
            objects.apply(obj, manager=MANAGER)
        except ApiException as err:
            message = (json.loads(err.body or "{}") if err.body else {}).get("message") or err.reason
            raise ArgoCDError(f"argocd/{source.mode}: {obj['kind']} {obj['metadata']['name']} refused: {message}") \
                from None

    def made() -> list[str] | None:
        owned: dict[str, list[str]] = {}
        for app in objects.list(API, "Application", NAMESPACE):
            for owner in app["metadata"].get("ownerReferences") or []:
                if owner["kind"] == "ApplicationSet":
                    owned.setdefault(owner["name"], []).append(app["metadata"]["name"])
        if all(len(owned.get(name, [])) >= count for name, count in appsets.items()):
            return sorted(n for name in appsets for n in owned.get(name, []))
        return None

    return wait_until(made, timeout, f"the Applications of ApplicationSet {', '.join(sorted(appsets))}")

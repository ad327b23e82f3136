"""`tfjobgen init DIR`: a new jobs-only repository for a platform team, green on its first commit.

    DIR/
      README.md                        what the repository is, and the commands a team runs
      requirements.txt                 tfjobgen pinned as a package (no copy of its code)
      jobs/                            one example job, sized to fit every cluster, and its kustomization
      bases/                           what every overlay starts from (tfjobgen's own files)
      overlays/<cluster>/              a kustomization and a ClusterProfile per cluster
      plugins/                         the kustomize exec plugin that runs `tfjobgen krm`
      argocd/                          the AppProject, both delivery modes, the one-time bootstrap
      rendered/                        what `tfjobgen hydrate` writes, already current
      .github/workflows/jobs.yml       the jobs pipeline (validate, build, CRDs, diff, hydrate --check), and
      .github/scripts/                 the steps it runs that are not tfjobgen commands (this repository's own)
      .pre-commit-config.yaml          `tfjobgen validate jobs/` before each commit

`plan` is pure: the answers in, every file's bytes out (tfjobgen's own files are read once, at the
edge, by `tool_files`). `run` writes them all or none: into a fresh folder beside DIR, checked by
hydrate there, then renamed into place.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .. import __version__
from ..inputs import kubernetes_syntax, quantity, schema
from ..inputs.problems import Problem

# The files of this repository a team's repository carries as they are (relative to the tool's root).
TOOL_FILES = ("bases/kustomization.yaml", "bases/trainingjob-fields.yaml",
              "plugins/tfjobgen.dev/v1alpha1/clusterprofile/ClusterProfile",
              "argocd/README.md", "argocd/argocd-cm-patch.yaml", "argocd/base/kustomization.yaml",
              "argocd/rendered/kustomization.yaml", "argocd/rendered/applicationset.yaml",
              "argocd/plugin/kustomization.yaml", "argocd/plugin/applicationset.yaml",
              "argocd/plugin/plugin.yaml", "argocd/plugin/repo-server-patch.yaml",
              "argocd/bootstrap/kustomization.yaml", "argocd/bootstrap/project.yaml",
              "argocd/bootstrap/application.yaml",
              # the jobs pipeline's own steps, as this repository's gitops.yml runs them
              ".github/scripts/fetch_crds.py", ".github/scripts/pr_comment.py", ".github/scripts/check_output.py")
EXECUTABLE = ("plugins/tfjobgen.dev/v1alpha1/clusterprofile/ClusterProfile",)


class InitError(Exception):
    """A wrong answer or a folder init must not write into: one line that says what would be right."""


@dataclass(frozen=True)
class ClusterShape:
    """One cluster, as `--cluster NAME:CPU:MEMORY[:RESERVED]` gives it."""

    name: str
    cpu: int
    memory: str
    reserved: int = 1

    @property
    def usable(self) -> int:
        return self.cpu - self.reserved


@dataclass(frozen=True)
class Answers:
    clusters: tuple[ClusterShape, ...]
    namespace: str  # the team's namespace: every cluster runs it
    registry: str = ""  # where the team's images live ("" keeps tfjobgen's example registry)
    monitoring_namespace: str = ""  # "" leaves monitoring off
    kubernetes: str = "1.30"
    repo_url: str = "https://git.example.com/your-team/training-jobs.git"
    requirement: str = f"tfjobgen=={__version__}"


def parse_cluster(text: str) -> ClusterShape:
    """`NAME:CPU:MEMORY[:RESERVED]`, such as prod-64c:64:512Gi:2, or InitError saying what is wrong."""
    parts = text.split(":")
    example = "such as prod-64c:64:512Gi:2 (name, cores per server, memory per server, cores the kubelet keeps)"
    if len(parts) not in (3, 4):
        raise InitError(f"--cluster {text!r}: expected NAME:CPU:MEMORY[:RESERVED], {example}")
    name, cpu, memory = parts[:3]
    if kubernetes_syntax.dns_label_problem(name):
        raise InitError(f"--cluster {text!r}: the name {name!r} must be a DNS-1123 label (lower-case letters, "
                        f"digits and '-'), {example}")
    if not cpu.isdigit() or int(cpu) < 2:
        raise InitError(f"--cluster {text!r}: CPU {cpu!r} must be a whole number of cores, 2 or more, {example}")
    parsed = quantity.parse(memory)
    if parsed is None or parsed <= 0:
        raise InitError(f"--cluster {text!r}: memory {memory!r} must be a Kubernetes quantity such as 512Gi")
    reserved = parts[3] if len(parts) == 4 else "1"
    if not reserved.isdigit() or not 1 <= int(reserved) < int(cpu):
        raise InitError(f"--cluster {text!r}: RESERVED {reserved!r} must be a whole number of cores from 1 to "
                        f"{int(cpu) - 1} (the static CPU manager needs at least one)")
    return ClusterShape(name, int(cpu), memory, int(reserved))


def check(answers: Answers) -> None:
    """Every answer held to the rule of what consumes it, or InitError."""
    if not answers.clusters:
        raise InitError("no cluster: give at least one --cluster NAME:CPU:MEMORY[:RESERVED]")
    names = [c.name for c in answers.clusters]
    if len(set(names)) != len(names):
        raise InitError(f"two clusters share a name ({', '.join(sorted(names))}): each overlay needs its own")
    if kubernetes_syntax.dns_label_problem(answers.namespace):
        raise InitError(f"--namespace {answers.namespace!r} must be a DNS-1123 label such as ranking")
    if answers.monitoring_namespace and kubernetes_syntax.dns_label_problem(answers.monitoring_namespace):
        raise InitError(f"--monitoring-namespace {answers.monitoring_namespace!r} must be a DNS-1123 label")
    if answers.monitoring_namespace == answers.namespace:
        raise InitError(f"--monitoring-namespace {answers.monitoring_namespace!r} is the team's own namespace: "
                        "Prometheus runs in a namespace of its own")
    releases = schema.load(schema.CLUSTER_PROFILE)["properties"]["spec"]["properties"]["kubernetesVersion"]["pattern"]
    if not re.match(releases, answers.kubernetes):  # the profile's own rule, said in init's words
        raise InitError(f"--kubernetes {answers.kubernetes!r}: a minor release from 1.30 on, such as 1.34")
    if answers.registry and (answers.registry != answers.registry.strip("/") or " " in answers.registry):
        raise InitError(f"--registry {answers.registry!r}: a registry and path such as harbor.corp.example/ml")


# ---- the files -------------------------------------------------------------------------------------

def tool_files() -> dict[str, bytes]:
    """tfjobgen's own files a team's repository carries, from the installed package or this checkout."""
    from ..shared import package_data

    files = {}
    for name in TOOL_FILES:
        try:
            with open(package_data.find(name), "rb") as handle:
                files[name] = handle.read()
        except OSError as err:
            raise InitError(f"tfjobgen's own {name} cannot be read ({err.strerror}): reinstall tfjobgen from its "
                            "wheel or a checkout") from None
    return files


def plan(answers: Answers, tools: dict[str, bytes]) -> dict[str, bytes]:
    """Every file of the new repository (rendered/ excepted: hydrate writes it), by path."""
    files = dict(tools)
    files["README.md"] = _readme(answers)
    files["requirements.txt"] = _text(f"""\
        # tfjobgen, pinned: `pip install -r requirements.txt` (the jobs pipeline does the same). Bump it in a pull
        # request of its own: the pipeline's diff then shows what the new release changes in every job.
        # It comes from your package index (PIP_INDEX_URL, or PIP_FIND_LINKS pointing at the wheel of
        # `make dist`), or name the release by tag: tfjobgen @ git+https://github.com/<org>/tfjobgen@v{__version__}
        {answers.requirement}
        """)
    files["jobs/kustomization.yaml"] = _text("""\
        # Every TrainingJob of this repository: a new job file is listed here (`tfjobgen validate jobs/` says so).
        apiVersion: kustomize.config.k8s.io/v1beta1
        kind: Kustomization
        resources:
        - example.yaml
        """)
    files["jobs/example.yaml"] = _example_job(answers)
    for cluster in answers.clusters:
        files[f"overlays/{cluster.name}/kustomization.yaml"] = _text(f"""\
            # Cluster {cluster.name}: every job of jobs/ that runs here (cluster-profile.yaml's spec.namespaces,
            # and each job's spec.clusters), expanded by tfjobgen for this cluster's servers.
            apiVersion: kustomize.config.k8s.io/v1beta1
            kind: Kustomization
            resources:
            - ../../bases
            transformers:
            - cluster-profile.yaml
            """)
        files[f"overlays/{cluster.name}/cluster-profile.yaml"] = _profile(answers, cluster)
    files["argocd/base/settings.yaml"] = _text(f"""\
        # Where Argo CD reads this repository, and how: kustomize copies these values into the AppProject, the
        # ApplicationSet and the bootstrap Application. Local-config: never applied to a cluster.
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: tfjobgen-gitops-settings
          annotations:
            config.kubernetes.io/local-config: "true"
        data:
          repoURL: {answers.repo_url}
          revision: main
          # rendered (Argo CD syncs rendered/, no plugin) or plugin (the sidecar builds overlays/).
          mode: rendered
        """)
    files["argocd/base/project.yaml"] = _project(answers)
    files[".github/workflows/jobs.yml"] = _workflow(answers)
    files[".pre-commit-config.yaml"] = _text("""\
        # Checks job files before each commit: pip install pre-commit && pre-commit install
        repos:
        - repo: local
          hooks:
          - id: tfjobgen-validate
            name: tfjobgen validate jobs/ (every job against the profile of each cluster it runs on)
            entry: tfjobgen validate jobs/
            language: system
            files: ^(jobs|overlays)/
            pass_filenames: false
        """)
    files[".gitignore"] = _text("""\
        .venv/
        __pycache__/
        """)
    return files


def _text(text: str) -> bytes:
    import textwrap

    return textwrap.dedent(text).encode()


def _readme(answers: Answers) -> bytes:
    clusters = "\n".join(f"| `{c.name}` | {c.cpu} cores ({c.reserved} kept by the kubelet), {c.memory} |"
                         for c in answers.clusters)
    return _text(f"""\
        # Training jobs of team `{answers.namespace}`

        Distributed TensorFlow training jobs, one file each under `jobs/`, expanded by
        [tfjobgen](https://github.com/example-org/tfjobgen) for each cluster and synced by Argo CD.

        | cluster | servers |
        | --- | --- |
        """) + clusters.encode() + _text(f"""

        ## Add a job

        ```sh
        python -m venv .venv && .venv/bin/pip install -r requirements.txt && . .venv/bin/activate
        cp jobs/example.yaml jobs/my-job.yaml        # edit it; list it in jobs/kustomization.yaml
        tfjobgen validate jobs/                      # against every cluster it runs on
        tfjobgen hydrate                             # rendered/: what Argo CD syncs
        git checkout -b my-job && git add -A && git commit -m "my-job" && git push
        ```

        The pull request's pipeline (`.github/workflows/jobs.yml`) validates every job against each cluster's
        profile, builds every cluster, checks the objects against their CRDs, and posts `tfjobgen diff`: what
        the change does to each cluster's jobs. A job runs on every cluster whose profile lists its namespace
        (`spec.namespaces`); `spec.clusters: [{answers.clusters[0].name}]` keeps it to the clusters it names.

        ## Argo CD, once

        Set `repoURL` in `argocd/base/settings.yaml`, register each cluster under its overlay's name
        (`argocd cluster add CONTEXT --name <cluster>`), then `kubectl apply -k argocd/bootstrap`. From then on
        the AppProject and the ApplicationSet follow this repository: a new cluster or team is a pull request.
        """)


def _example_job(answers: Answers) -> bytes:
    smallest = min(c.usable for c in answers.clusters)
    ps_cpu, worker_cpu = max(1, min(4, smallest // 4)), max(1, min(4, smallest // 4))
    image = f"{answers.registry}/tfjobgen-runtime:{__version__}" if answers.registry \
        else f"registry.example.com/ml/tfjobgen-runtime:{__version__}"
    return _text(f"""\
        # An example job: 2 parameter servers and 4 workers running tfjobgen's own training program on a
        # synthetic wide & deep model. Copy it for a job of your own (docs: tfjobgen's reference.md).
        apiVersion: tfjobgen.dev/v1alpha1
        kind: TrainingJob
        metadata:
          name: example
          namespace: {answers.namespace}
        spec:
          image: {image}
          roles:
            ps: {{replicas: 2, cpu: {ps_cpu}, memory: 8Gi}}
            worker: {{replicas: 4, cpu: {worker_cpu}, memory: 4Gi}}
            chief: {{cpu: 1, memory: 2Gi}}
          topology:
            mode: spread
        """)


def _profile(answers: Answers, cluster: ClusterShape) -> bytes:
    monitoring = ""
    if answers.monitoring_namespace:
        monitoring = (f"  # The Prometheus Operator runs in {answers.monitoring_namespace}: every job gets a PodMonitor,"
                      " alerts and a dashboard.\n"
                      f"  monitoring: {{enabled: true, namespace: {answers.monitoring_namespace}}}\n")
    return _text(f"""\
        # Cluster {cluster.name}: {cluster.cpu}-core / {cluster.memory} servers, the kubelet keeping {cluster.reserved} core(s).
        apiVersion: tfjobgen.dev/v1alpha1
        kind: ClusterProfile
        metadata:
          name: {cluster.name}
        spec:
          node: {{cpu: {cluster.cpu}, reservedCpus: {cluster.reserved}, memory: {cluster.memory}}}
          # The teams this cluster runs: keep it equal to this cluster's destinations in argocd/base/project.yaml.
          namespaces: [{answers.namespace}]
          kubernetesVersion: "{answers.kubernetes}"
          cpuManager:
            # Where the kubelet runs --cpu-manager-policy=static (cpuset pods go only there).
            nodeSelector: {{kubernetes.io/os: linux}}
        """) + monitoring.encode()


def _project(answers: Answers) -> bytes:
    destinations = "".join(f"  - {{name: {c.name}, namespace: {answers.namespace}}}\n" for c in answers.clusters)
    monitoring = ("  - {group: monitoring.coreos.com, kind: PodMonitor}\n"
                  "  - {group: monitoring.coreos.com, kind: PrometheusRule}\n") if answers.monitoring_namespace else ""
    return _text("""\
        # The AppProject every training Application belongs to: per cluster, the namespaces its jobs run in (each
        # line is also one Application, tfjobgen-<cluster>-<namespace>), nothing cluster-scoped, and only the
        # kinds the rendered jobs hold. Keep each cluster's namespaces equal to its profile's spec.namespaces.
        apiVersion: argoproj.io/v1alpha1
        kind: AppProject
        metadata:
          name: tfjobgen
          namespace: argocd
          annotations:
            # The namespace the profiles put Grafana dashboards in, when not the team's (docs/gitops.md): it
            # needs a destination per cluster, and the ApplicationSets make no Application for it.
            tfjobgen.dev/dashboards-namespace: ""
        spec:
          description: Distributed TensorFlow training jobs generated by tfjobgen from jobs/
          sourceRepos:
          - REPLACED-BY-settings.yaml
          destinations:
        """) + destinations.encode() + _text("""\
          clusterResourceWhitelist: []
          namespaceResourceWhitelist:
          - {group: "", kind: ConfigMap}
          - {group: "", kind: Service}
          - {group: batch, kind: Job}
          - {group: networking.k8s.io, kind: NetworkPolicy}
        """) + monitoring.encode()


def _workflow(answers: Answers) -> bytes:
    """The jobs pipeline: this repository's gitops.yml (its steps, scripts and order), with tfjobgen installed
    from requirements.txt instead of from source, and no placement preview (its programs are built from
    tfjobgen's own repository; tests/gitops/test_init.py holds the two workflows to the same steps)."""
    return _text("""\
        # The jobs pipeline, on every pull request that touches a job, an overlay or tfjobgen's pin: every job
        # against each cluster's profile, every cluster built, the output against Kubernetes' schemas and the CRDs
        # it uses, `tfjobgen diff` posted as one comment (updated on each push). It never runs tfjobgen's tests.
        name: jobs

        on:
          pull_request:
            paths: ["jobs/**", "overlays/**", "bases/**", "plugins/**", "argocd/**", "rendered/**",
                    "requirements.txt", ".github/workflows/jobs.yml", ".github/scripts/**"]
          push:
            branches: [main]

        permissions:
          contents: read

        concurrency:
          group: jobs-${{ github.ref }}
          cancel-in-progress: true

        jobs:
          jobs:
            name: validate, build, diff
            runs-on: ubuntu-24.04
            timeout-minutes: 15
            permissions:
              contents: read
              pull-requests: write  # the diff comment
            steps:
            - name: Check out (with history, so the base branch can be read)
              uses: actions/checkout@v6
              with:
                fetch-depth: 0

            - uses: actions/setup-python@v6
              with:
                python-version: "3.11"

            - name: Install kubectl (its kustomize builds the overlays tfjobgen cannot expand itself)
              uses: azure/setup-kubectl@v4
              with:
                version: v1.32.4

            - name: Install tfjobgen (requirements.txt pins it) and kubernetes-validate (the output check)
              run: python -m pip install --disable-pip-version-check -r requirements.txt kubernetes-validate

            - name: Fetch the CRDs the output is checked against (the releases tfjobgen was tested with)
              run: python .github/scripts/fetch_crds.py "$RUNNER_TEMP/crds"

            # The diff comes first and always runs, so a broken job file still gets its file:line comment.
            - name: Semantic diff against the base branch
              id: diff
              if: github.event_name == 'pull_request'
              env:
                BASE_REF: ${{ github.base_ref }}
              run: |
                report="$RUNNER_TEMP/tfjobgen-diff.md"
                set +e
                tfjobgen diff "origin/$BASE_REF" --crds "$RUNNER_TEMP/crds" -o "$report" --no-place
                echo "exit=$?" >> "$GITHUB_OUTPUT"
                set -e
                cat "$report" >> "$GITHUB_STEP_SUMMARY"

            - name: Post the diff as one pull-request comment (updated on each push)
              if: always() && github.event_name == 'pull_request' && steps.diff.outcome == 'success'
              continue-on-error: true  # pull requests from forks get a read-only token: the step summary has it
              env:
                GITHUB_TOKEN: ${{ github.token }}
              run: python .github/scripts/pr_comment.py "$RUNNER_TEMP/tfjobgen-diff.md"

            - name: Validate every job
              if: ${{ !cancelled() }}
              run: tfjobgen validate jobs/

            - name: Build every overlay; rendered/ is current
              if: ${{ !cancelled() }}
              run: tfjobgen hydrate --check

            - name: Check the output against Kubernetes' schemas and every CRD it uses
              if: ${{ !cancelled() }}
              run: python .github/scripts/check_output.py "$RUNNER_TEMP/crds"

            - name: Fail when the diff found errors
              if: always() && steps.diff.outputs.exit != '' && steps.diff.outputs.exit != '0'
              env:
                DIFF_EXIT: ${{ steps.diff.outputs.exit }}
              run: |
                echo "tfjobgen diff exited $DIFF_EXIT: its problems are listed, with file and line, in the comment"
                exit 1
        """)


# ---- writing ---------------------------------------------------------------------------------------

def run(folder: Path, answers: Answers, out=None) -> list[Problem]:
    """Write the repository into `folder` (absent or empty), hydrated: all of it, or nothing."""
    from . import hydrate

    out = out or sys.stdout
    check(answers)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise InitError(f"{folder} is not empty: init writes a new repository into an empty or new folder "
                        "(choose another, or remove what is there)")
    files = plan(answers, tool_files())
    parent = folder.resolve().parent
    if not parent.is_dir():
        raise InitError(f"{parent} does not exist: create it first")
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.tfjobgen-init-", dir=parent))
    try:
        for name, data in files.items():
            path = staging / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            if name in EXECUTABLE:
                path.chmod(0o755)
        wanted, problems = hydrate.render_tree(staging)
        if any(p.is_error for p in problems):
            return problems  # a bug of init's own, or answers no profile can hold: nothing is written
        for name, data in wanted.items():
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
            (staging / name).write_bytes(data)
        if folder.exists():
            folder.rmdir()  # empty, checked above: rename needs the name free
        os.rename(staging, folder)
    except OSError as err:
        raise InitError(f"cannot write {folder}: {err.strerror or err}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    print(f"wrote {folder}: {len(files) + len(wanted)} files, {len(answers.clusters)} cluster(s), "
          f"jobs of namespace {answers.namespace}", file=out)
    return problems

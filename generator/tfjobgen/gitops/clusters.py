"""Jobs and clusters across the repository: where each job goes, and the mistakes only the whole tree shows.

A cluster's build applies inputs/routing.py's rule to the jobs it is given. What one build cannot see,
the repository can:

- a job that names a cluster no overlay has, or that no cluster runs;
- a destination of the AppProject that no job uses any more: a team's last job on a cluster was
  removed, and its Application would get an empty set (`no_job_left`, the one answer `diff`,
  `hydrate` and `build` give);
- a namespace a profile runs that the AppProject does not let Argo CD sync there;
- a dashboards namespace (spec.monitoring.dashboards.namespace) the AppProject does not permit on that
  cluster, or does not name as not a team's (policy.DASHBOARDS_ANNOTATION), so the ApplicationSet would
  make it an Application;
- one job on two clusters writing one checkpoint directory (`shared_model_dirs`).

`validate` also checks each job against the profile of every cluster it runs on here (`validate`);
`hydrate`, `build` and `diff` ask the rest.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from ..concerns import labels
from ..inputs import intents, routing, source
from ..inputs.problems import InvalidInput, Problem
from . import policy, tree
from .object_meta import group_kind


@dataclass(frozen=True)
class Cluster:
    """One overlay and what its ClusterProfile says about routing."""

    overlay: str  # the folder under overlays/: the cluster's name in Argo CD
    name: str  # its ClusterProfile's metadata.name: the name spec.clusters uses
    namespaces: tuple[str, ...] | None  # spec.namespaces (None: every namespace)
    allow_no_jobs: bool
    profile_file: str  # relative to the root ("" when the overlay holds no readable profile)
    namespaces_lines: tuple[int, ...] = ()  # the line of each of spec.namespaces in profile_file
    dashboards_namespace: str = ""  # where its jobs' Grafana dashboards go, when not in the job's namespace
    dashboards_line: int = 0

    def runs(self, job: tree.JobFile) -> bool:
        return routing.goes_to(job.namespace, job.clusters, self.name, self.namespaces)


def profile_file(root: Path, overlay: str) -> Path | None:
    """The file of overlays/<overlay> that holds its ClusterProfile (the first one, by name)."""
    for path in sorted((root / tree.OVERLAYS / overlay).glob("*.y*ml")):
        try:
            documents = source.parse_documents(source.read_text(str(path)), str(path))
        except InvalidInput:
            continue
        if any(intents.kind_of(d.data) == "profile" for d in documents):
            return path
    return None


def read(root: Path, overlays: list[str] | None = None) -> list[Cluster]:
    """Every overlay's routing. An overlay whose profile cannot be read runs every job: its build says why."""
    from ..expand import pipeline

    found = []
    for overlay in tree.overlay_names(root) if overlays is None else overlays:
        path = profile_file(root, overlay)
        try:
            profile = pipeline.load_profile(str(path)) if path else None
        except InvalidInput:
            profile = None
        if profile is None:
            found.append(Cluster(overlay, overlay, None, True, ""))
        else:
            lines = tuple(profile.origin.line_of(f"spec.namespaces[{i}]") for i in range(len(profile.namespaces or ())))
            monitoring = profile.monitoring
            dashboards = (monitoring.dashboard_namespace or "") if monitoring.enabled and monitoring.dashboards else ""
            found.append(Cluster(overlay, profile.name, profile.namespaces, profile.allow_no_jobs,
                                 path.relative_to(root).as_posix(), lines, dashboards,
                                 profile.origin.line_of("spec.monitoring.dashboards.namespace")))
    return found


def namespace_problem(root: Path, namespace: str, cluster: Cluster, jobs: list[tree.JobFile]) -> str:
    """Why `tfjobgen build --namespace NAMESPACE` of `cluster` is asked for something no Application is, ""
    otherwise: not a namespace at all, or one the cluster does not run and the AppProject does not send a
    team to there (a typo; the ones it runs are named, the closest first). A cluster whose profile runs every
    namespace runs those of its jobs. A destination without jobs is no_job_left's to answer. `jobs`: all of
    jobs/."""
    import difflib
    from fnmatch import fnmatchcase

    from ..inputs import kubernetes_syntax

    wrong = kubernetes_syntax.dns_label_problem(namespace)
    if wrong:
        return f"{namespace!r} is not a namespace: {wrong}"
    runs = cluster.namespaces if cluster.namespaces is not None else sorted(
        {job.namespace for job in jobs_on(jobs, cluster)})
    projects = policy.projects(root)
    if any(namespace == project.dashboards_namespace for project in projects) and namespace not in runs:
        return (f"{namespace} is where the AppProject's teams put their dashboards ({policy.DASHBOARDS_ANNOTATION}), "
                "not a team: each team's build carries its jobs' dashboards")
    destined = any(fnmatchcase(namespace, pattern) for project in projects
                   for pattern in project.destinations(cluster.overlay))
    if namespace in runs or destined:
        return ""
    where = (f"{cluster.profile_file} lists in spec.namespaces" if cluster.namespaces is not None
             else "its profile runs every namespace, and its jobs are in")
    close = difflib.get_close_matches(namespace, runs, n=1)
    hint = f": did you mean {close[0]}?" if close else ":"
    return (f"cluster {cluster.overlay} does not run namespace {namespace}{hint} {where} "
            f"{', '.join(runs) or 'none'} (an Application's namespace is a destination of the AppProject)")


def jobs_on(jobs: list[tree.JobFile], cluster: Cluster) -> list[tree.JobFile]:
    return [job for job in jobs if cluster.runs(job)]


def check(root: Path, jobs: list[tree.JobFile], found: list[Cluster]) -> list[Problem]:
    """Jobs that go to no cluster or to one that does not exist, and destinations no job uses (`jobs`: all
    of jobs/)."""
    return (check_jobs(jobs, found) + _unused_destinations(root, jobs, found) + _undestined_namespaces(root, found)
            + _dashboards_destinations(root, found))


def check_jobs(jobs: list[tree.JobFile], found: list[Cluster]) -> list[Problem]:
    """Jobs that go to no cluster, or name one that does not exist."""
    problems = []
    names = sorted(c.name for c in found)
    for job in jobs:
        for index, cluster in enumerate(job.clusters or ()):
            if cluster not in names:
                problems.append(Problem(
                    f"no overlay runs a cluster named {cluster} (the clusters are {', '.join(names) or 'none'}, "
                    "the metadata.name of each overlays/<cluster>/ profile): name one of them, or add "
                    f"overlays/{cluster}/ for the new cluster", f"spec.clusters[{index}]", file=job.file,
                    line=job.clusters_line))
        if job.clusters is None and found and not any(c.runs(job) for c in found):
            runs = "; ".join(f"{c.name}: {', '.join(c.namespaces or ())}" for c in found)
            problems.append(Problem(
                f"job '{job.name}' runs on no cluster: no ClusterProfile runs namespace {job.namespace} ({runs}). "
                f"Add {job.namespace} to the spec.namespaces of the cluster it is for (and a destination "
                "to argocd/base/project.yaml), or name the cluster in spec.clusters",
                "metadata.namespace", file=job.file, line=job.namespace_line or job.line))
    return problems


def _unused_destinations(root: Path, jobs: list[tree.JobFile], found: list[Cluster]) -> list[Problem]:
    by_overlay = {c.overlay: c for c in found}
    problems = []
    for project in policy.projects(root):
        for cluster, namespace in project.destination_pairs():
            if cluster not in by_overlay or any(ch in namespace for ch in "*?[!"):
                continue  # a pattern, or a cluster this repository does not build: nothing to compare
            if namespace == project.dashboards_namespace:
                continue  # Grafana's, not a team's: the ApplicationSet makes no Application for it
            if not any(job.namespace == namespace for job in jobs_on(jobs, by_overlay[cluster])):
                problems.append(no_job_left(root, by_overlay[cluster], namespace))
    return problems


def _undestined_namespaces(root: Path, found: list[Cluster]) -> list[Problem]:
    """A namespace a profile runs that the AppProject does not send Argo CD to on that cluster."""
    from fnmatch import fnmatchcase

    problems = []
    for project in policy.projects(root):
        for cluster in found:
            if not cluster.namespaces or not cluster.profile_file:
                continue
            patterns = project.destinations(cluster.overlay)
            for index, namespace in enumerate(cluster.namespaces):
                if not any(fnmatchcase(namespace, p) for p in patterns):
                    problems.append(Problem(
                        f"cluster {cluster.overlay} runs namespace {namespace}, but AppProject {project.name} "
                        f"({project.file}) has no destination {{name: {cluster.overlay}, namespace: {namespace}}}, so "
                        "Argo CD would refuse to sync its jobs: add that destination, or take the namespace out "
                        "of this list", f"spec.namespaces[{index}]", file=cluster.profile_file,
                        line=cluster.namespaces_lines[index]))
    return problems


def _dashboards_destinations(root: Path, found: list[Cluster]) -> list[Problem]:
    """A profile's dashboards namespace must be a destination of the cluster (the team's Application writes
    the dashboards there), and the one the AppProject's annotation names (else the ApplicationSet, whose list
    is the destinations, would make it an Application with nothing to sync)."""
    from fnmatch import fnmatchcase

    problems = []
    for project in policy.projects(root):
        for cluster in found:
            namespace = cluster.dashboards_namespace
            if not namespace or (cluster.namespaces and namespace in cluster.namespaces):
                continue  # none, or a team's own namespace: its Application is that team's
            at = {"field": "spec.monitoring.dashboards.namespace", "file": cluster.profile_file,
                  "line": cluster.dashboards_line}
            if not any(fnmatchcase(namespace, p) for p in project.destinations(cluster.overlay)):
                problems.append(Problem(
                    f"cluster {cluster.overlay} puts dashboards in namespace {namespace}, but AppProject "
                    f"{project.name} ({project.file}) has no destination {{name: {cluster.overlay}, namespace: "
                    f"{namespace}}}, so Argo CD would refuse to sync every team's Application there: add that "
                    "destination", **at))
            elif project.dashboards_namespace != namespace:
                now = f" (it names {project.dashboards_namespace})" if project.dashboards_namespace else ""
                problems.append(Problem(
                    f"cluster {cluster.overlay} puts dashboards in namespace {namespace}, which AppProject "
                    f"{project.name} ({project.file}) does not name as Grafana's{now}: the ApplicationSet would "
                    f"make it an Application of its own. Set metadata.annotations "
                    f"{policy.DASHBOARDS_ANNOTATION}: {namespace} there (one dashboards namespace for every "
                    "cluster)", **at))
    return problems


def no_job_left(root: Path, cluster: Cluster, namespace: str) -> Problem:
    """A team with no job left on a cluster that the AppProject still sends it to: the one answer of
    `diff`, `hydrate` and `build` (the Argo CD plugin), placed at that destination."""
    project_file, line, where = "", 0, "spec.destinations"
    for project in policy.projects(root):
        for index, pair in enumerate(project.destination_pairs()):
            if pair == (cluster.overlay, namespace) and not project_file:
                project_file, line = project.file, project.line_of(f"destinations[{index}]")
                where = f"spec.destinations[{index}]"
    listed = (f" and {namespace} from {cluster.profile_file}'s spec.namespaces"
              if cluster.namespaces and namespace in cluster.namespaces else "")
    return Problem(
        f"no job of namespace {namespace} runs on cluster {cluster.overlay}, but the AppProject still sends that "
        f"team there ({{name: {cluster.overlay}, namespace: {namespace}}}): its Application "
        f"tfjobgen-{cluster.overlay}-{namespace} would get an empty set, which Argo CD refuses to sync "
        f"(allowEmpty: false), so retired jobs would keep running. In this pull request remove that destination"
        f"{listed}; after the merge, `argocd app delete tfjobgen-{cluster.overlay}-{namespace} --cascade` stops "
        "what it still runs", where, file=project_file or "argocd/base/project.yaml", line=line)


def shared_model_dirs(jobs: list[tree.JobFile], found: list[Cluster], built: dict[str, list[dict] | None],
                      as_built=None) -> list[Problem]:
    """A job that runs on two clusters with one spec.training.modelDir: two trainings, one checkpoint folder.

    `built`: per overlay, its intents as the overlay patched them, so an overlay that patches modelDir
    for its cluster is the documented way out. A job a build did not keep (None, a build of some jobs
    only, an overlay not built) is looked up with `as_built(overlay)`, only for a job the files alone
    would refuse; without an answer, the job file's value counts.
    """
    def patched_values(data: list[dict] | None) -> dict[str, str]:
        values = {}
        for document in data or []:
            spec = document.get("spec") if isinstance(document.get("spec"), dict) else {}
            training = spec.get("training") if isinstance(spec.get("training"), dict) else {}
            ref = intents.ref_of(document)
            values[f"{ref.namespace}/{ref.name}"] = str(training.get("modelDir") or "")
        return values

    known = {overlay: patched_values(data) for overlay, data in built.items()}
    asked: set[str] = set()
    problems = []
    for job in jobs:
        runs_on = [c.overlay for c in found if c.runs(job)]
        if not job.model_dir or len(runs_on) < 2:
            continue
        where: dict[str, list[str]] = {}
        for overlay in runs_on:
            if job.key not in known.get(overlay, {}) and as_built is not None and overlay not in asked:
                asked.add(overlay)  # one kustomize run per overlay at most
                known.setdefault(overlay, {}).update(patched_values(as_built(overlay)))
            value = known.get(overlay, {}).get(job.key, job.model_dir)
            if value:
                where.setdefault(value, []).append(overlay)
        for value, overlays in sorted(where.items()):
            if len(overlays) > 1:
                problems.append(Problem(
                    f"job '{job.name}' runs on {' and '.join(overlays)} with one modelDir ({value}): the two "
                    "trainings would write one checkpoint directory. Name one cluster in spec.clusters, or give "
                    "each cluster its own path with a patch of spec.training.modelDir in its overlay",
                    "spec.training.modelDir", file=job.file, line=job.model_dir_line))
    return problems


def validate(root: Path, found: list[intents.Intent], overlays: list[Cluster], whole: bool = True,
             name_clusters: bool = True, projects: bool = False) -> list[Problem]:
    """Every job checked against the profile of each cluster it runs on, as each cluster's build checks it (but
    as written: an overlay's patches are applied by the build). A problem only some of a job's clusters have
    names them (`name_clusters`), so a job that fits one cluster and not another says which. With `whole`
    (`found` is all of jobs/), a cluster left with no job is refused as its build would refuse it. With
    `projects`, what a job makes that the AppProject would not sync there is said at the job (`refused_kinds`;
    `diff` asks policy.check of the whole build instead)."""
    from ..expand import pipeline

    every_project = policy.projects(root) if projects else []
    clusters_of: dict[str, list[str]] = {}  # problem identity -> the clusters that report it
    first: dict[str, Problem] = {}
    runs: dict[tuple[str, str], list[str]] = {}  # job (file, name) -> the clusters it runs on
    for cluster in overlays:
        if not cluster.profile_file:
            continue
        try:
            profile = pipeline.load_profile(str(root / cluster.profile_file))
        except InvalidInput as err:
            found_problems = [tree.relative(p, root) for p in err.problems]
        else:
            mine, found_problems = pipeline.for_cluster(found, profile)
            for intent in mine:
                runs.setdefault((intent.file, intent.name), []).append(cluster.overlay)
            if mine:
                expansion = pipeline.expand(mine, profile)
                found_problems += expansion.problems
                found_problems += refused_kinds(every_project, cluster.overlay, mine, expansion.objects)
            elif whole and not profile.allow_no_jobs:
                found_problems.append(dataclasses.replace(
                    pipeline.no_jobs(0, len(found), profile.name), file=cluster.profile_file))
        for problem in (tree.relative(p, root) for p in found_problems):
            key = problem.format()
            first.setdefault(key, problem)
            clusters_of.setdefault(key, []).append(cluster.overlay)
    result = []
    for key, problem in first.items():
        named = clusters_of[key]
        job_clusters = runs.get((problem.file, problem.ref.name if problem.ref else ""), [])
        said = any(f"'{name}'" in problem.message for name in named)  # capacity messages name the profile
        if name_clusters and len(overlays) > 1 and job_clusters and set(named) != set(job_clusters) and not said:
            problem = dataclasses.replace(problem, message=f"{problem.message} (on {', '.join(named)})")
        result.append(problem)
    return result



def refused_kinds(projects: list[policy.Project], cluster: str, jobs: list[intents.Intent],
                  objects: list[list[dict]]) -> list[Problem]:
    """Per job, each kind it makes (`objects`: each job's) that an AppProject sending Argo CD to `cluster` does not
    permit, at the field that asks for it: spec.<component> when the object's app.kubernetes.io/component is a
    field of the job (spec.tensorboard), else the job as a whole."""
    problems = []
    for project in (p for p in projects if p.destinations(cluster)):  # no destination at all: check says so
        for intent, made in zip(jobs, objects):
            said = set()
            for obj in made:
                scope = policy.refuses(project, obj)
                group, kind = group_kind(obj)
                if not scope or (group, kind) in said:
                    continue
                said.add((group, kind))
                meta = obj.get("metadata") or {}
                component = str((meta.get("labels") or {}).get(labels.COMPONENT, ""))
                spec = intent.data.get("spec") if isinstance(intent.data.get("spec"), dict) else {}
                field = f"spec.{component}" if component and component in spec else ""
                turn_off = f"or turn {field} off for this cluster (a patch in its overlay)" if field else \
                    "or run the job elsewhere"
                problems.append(intent.locate(Problem(
                    f"AppProject {project.name} does not permit kind {kind} (group '{group}') in its {scope} "
                    f"({project.file}), so Argo CD would refuse to sync cluster {cluster}: this job makes {kind} "
                    f"{meta.get('namespace', '')}/{meta.get('name', '')}. Add {{group: {group or chr(34) * 2}, "
                    f"kind: {kind}}} to the project's {scope}, {turn_off}", field)))
    return problems

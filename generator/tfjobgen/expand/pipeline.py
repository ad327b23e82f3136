"""The pipeline, in one place: load -> validate -> plan -> render -> emit.

    intents --validate--> TrainingJob --plan--> JobPlan --render--> objects --emit--> YAML / JSON

The "load" section below reads files; emitting happens at the edges (cli.py,
krm.py, emit.py). Everything from validate to render is pure: the same intents
and profile always give the same objects. Nothing is emitted when any intent
has an error, so a bad pull request never produces a partial set of objects
that Argo CD could prune against.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from .. import backends
from ..addons import monitoring, tensorboard
from ..concerns import (container, environment, gang, jobplan, labels, lifecycle, limits, names, podspec, qos, storage,
                        topology, volumes)
from ..inputs import intents, routing, schema, source, trainingjob
from ..inputs import profile as profile_rules
from ..inputs.intents import Intent
from ..inputs.problems import WARNING, InvalidInput, Problem, ResourceRef, has_errors
from ..inputs.profile import KIND as PROFILE_KIND
from ..inputs.profile import ClusterProfile, ProfileSource, cluster_profile, default_profile
from . import emit

# ---- load -------------------------------------------------------------------

class MissingPath(Exception):
    """A path given on the command line is not there; the message is the one line every command prints."""


def load_given(paths: list[str]) -> tuple[list[Intent], list[Problem]]:
    """load_intents of the paths a command was given; MissingPath when one of them is not there."""
    try:
        return load_intents(paths)
    except FileNotFoundError as err:
        raise MissingPath(f"no such file or folder: {err.filename}") from None


def load_intents(paths: list[str], relative_to: str | None = None) -> tuple[list[Intent], list[Problem]]:
    """The intents in files and folders, and problems of files that could not be read or parsed, or that
    were named (not found in a folder) and hold no TrainingJob.

    Files are named as given, or relative to `relative_to` (a repository root) with '/'.
    """
    found, problems, seen = [], [], set()
    for path in paths:
        named = not os.path.isdir(path)  # a folder's files may hold anything else a kustomization lists
        try:
            listed = intents.files([path])
        except InvalidInput as err:  # a folder that cannot be listed
            problems += err.problems
            continue
        for file in listed:
            real = os.path.realpath(file)
            if real in seen:  # the same file named twice (a folder and a file in it): read once
                continue
            seen.add(real)
            shown = os.path.relpath(file, relative_to).replace(os.sep, "/") if relative_to else file
            try:
                documents = source.parse_file(file, shown)
            except InvalidInput as err:
                problems += err.problems
                continue
            these = [Intent(d.data, shown, d) for d in documents if intents.is_intent(d.data)]
            if named and not these:
                problems.append(_no_intent_in(shown, documents))
            elif named and len(these) < len(documents):
                problems += _passed_over(shown, documents)
            found += these
    return found, problems


_JOB_FILE = f"a job file has apiVersion: {trainingjob.API_VERSION} and kind: {trainingjob.KIND}"


def _passed_over(file: str, documents: list[source.Document]) -> list[Problem]:
    """Documents beside the intents of a file named on the command line: said, as tfjobgen uses only the intents
    (kustomize, reading the same file as a resource, passes them through)."""
    problems = []
    for document in documents:
        if intents.is_intent(document.data):
            continue
        held = _held(document.data, "a document without kind")
        advice = ("name it with --profile" if intents.kind_of(document.data) == "profile" else
                  "kustomize build passes it through; give it a file of its own to keep the job file to jobs")
        problems.append(Problem(f"{held} is not a TrainingJob: tfjobgen reads only the jobs of this file and "
                                f"passes over it; {advice}", file=file, line=document.line_of("kind"), severity=WARNING))
    return problems


def _held(data, nameless: str = "a mapping without kind") -> str:
    """What a document is, for a message about a file that holds something else: its kind and name, or its
    shape."""
    if isinstance(data, list):
        return "a YAML list"
    if not isinstance(data, dict):
        return "a single value"
    ref = intents.ref_of(data)
    return " ".join(part for part in (ref.kind or nameless, ref.name) if part)


def _no_intent_in(file: str, documents: list[source.Document]) -> Problem:
    """A file named on the command line that holds no TrainingJob: say what it holds instead."""
    if not documents:
        return Problem(f"no TrainingJob here: the file is empty; {_JOB_FILE}", file=file)
    first, held = documents[0], _held(documents[0].data)
    if not isinstance(first.data, dict):
        return Problem(f"no TrainingJob here: the file holds {held}; a job is a mapping with apiVersion: "
                       f"{trainingjob.API_VERSION} and kind: {trainingjob.KIND}", file=file, line=first.start_line)
    advice = "name it with --profile" if intents.kind_of(first.data) == "profile" else _JOB_FILE
    return Problem(f"no TrainingJob here: the file holds {held}; {advice}", file=file,
                   line=first.line_of("kind"))


def empty_folders(paths: list[str], found: list[Intent]) -> list[Problem]:
    """Folders named on the command line in which no file holds a TrainingJob."""
    problems = []
    for folder in (p for p in paths if os.path.isdir(p)):
        inside = os.path.join(os.path.abspath(folder), "")
        if any(os.path.abspath(intent.file).startswith(inside) for intent in found):
            continue
        try:
            count = len(intents.files([folder]))
        except InvalidInput:
            continue  # load_intents said why it cannot be listed
        problems.append(Problem(
            f"no TrainingJob in the {count} YAML file(s) under this folder (in a folder, files without a "
            f"TrainingJob are passed over, as other resources of a kustomization); {_JOB_FILE}", file=folder))
    return problems


def load_profile(path: str | None) -> ClusterProfile:
    """The profile in `path` (its only ClusterProfile document), or the embedded default."""
    if path is None:
        return default_profile()
    documents = source.parse_documents(source.read_text(path), path)
    found = [d for d in documents if intents.kind_of(d.data) == "profile"]
    if len(found) != 1:
        raise InvalidInput([_not_one_profile(path, documents, found)])
    return profile_from(found[0].data, path, found[0])


_PROFILE_FILE = f"a profile file holds one mapping with apiVersion: {trainingjob.API_VERSION} and kind: {PROFILE_KIND}"


def _not_one_profile(path: str, documents: list[source.Document], found: list[source.Document]) -> Problem:
    """Why `path` is no profile, in terms of what it does hold (a job, a list, two profiles, nothing)."""
    if len(found) > 1:
        names = ", ".join(str(intents.ref_of(d.data).name) for d in found)
        return Problem(f"{len(found)} {PROFILE_KIND}s in one file ({names}): a profile file describes one cluster; "
                       "give each its own file", file=path, line=found[1].start_line)
    if not documents:
        return Problem(f"no {PROFILE_KIND} here: the file is empty; {_PROFILE_FILE}", file=path)
    first, held = documents[0], _held(documents[0].data)
    if not isinstance(first.data, dict):
        return Problem(f"no {PROFILE_KIND} here: the file holds {held}; {_PROFILE_FILE}", file=path,
                       line=first.start_line)
    advice = ("name the job file as an argument, and its cluster's profile with --profile"
              if intents.kind_of(first.data) == "intent" else _PROFILE_FILE)
    return Problem(f"no {PROFILE_KIND} here: the file holds {held}; {advice}", file=path, line=first.line_of("kind"))


def profile_from(data: dict, file: str = "", document: source.Document | None = None) -> ClusterProfile:
    """A profile that fits its schema. Its rules (`check_profile`) are reported once per build by
    `expand`, at the user's file and line, and no job is rendered against a profile with errors."""
    problems = schema.check(data, schema.CLUSTER_PROFILE, document.written if document else {})
    if problems:
        raise InvalidInput([
            p.located(file, document.line_of(p.field) if document else 0,
                      ResourceRef(trainingjob.API_VERSION, PROFILE_KIND, intents.ref_of(data).name))
            for p in problems])
    return cluster_profile(data, ProfileSource(file, document))


# Rules about the profile alone, checked once per build rather than once per job. A concern
# module with such rules lists its `check_profile(profile) -> problems` here.
PROFILE_CHECKS = (profile_rules.check, gang.check_profile, qos.check_profile, environment.check_profile)


def check_profile(profile: ClusterProfile) -> list[Problem]:
    """Every profile rule, each problem placed at the profile's file and line when it has them."""
    return _in_profile(profile, [p for check in PROFILE_CHECKS for p in check(profile)])


def _in_profile(profile: ClusterProfile, problems: list[Problem]) -> list[Problem]:
    ref = ResourceRef(trainingjob.API_VERSION, PROFILE_KIND, profile.name)
    return [p.located(profile.origin.file, profile.origin.line_of(p.field), ref) for p in problems]


def check_all(found: list[Intent], profile: ClusterProfile) -> tuple[list[trainingjob.TrainingJob | None], list[Problem]]:
    """The profile, then every intent: the typed jobs (None where an intent has errors, all None when the
    profile has) and every problem, each said once per build."""
    problems = check_profile(profile)
    if has_errors(problems):  # every job's rules read the profile: a broken one checks no job
        return [None for _ in found], problems
    jobs = []
    for intent in found:
        job, more = validate(intent, profile)
        jobs.append(job)
        problems += more
    problems += duplicates(found)
    # Profile warnings that matter only to some jobs (CPU-manager nodes, to cpuset jobs): once, on the profile.
    problems += _in_profile(profile, qos.check_profile_for(profile, [job for job in jobs if job is not None]))
    return jobs, problems


# ---- validate ---------------------------------------------------------------

def validate(intent: Intent, profile: ClusterProfile) -> tuple[trainingjob.TrainingJob | None, list[Problem]]:
    """The typed job (None when it has errors) and every problem found, located in its file."""
    problems = schema.check(intent.data, schema.TRAINING_JOB, intent.document.written if intent.document else {})
    if problems:
        return None, [intent.locate(p) for p in problems]
    job = trainingjob.training_job(schema.with_defaults(intent.data, schema.TRAINING_JOB),
                                   frozenset(intent.data["spec"]))
    backend = backends.get(job.backend)
    problems += names.check(job, backend.naming) + names.check_fully_qualified(job, profile, backend.naming)
    for check in (labels.check, container.check, volumes.check, storage.check):
        problems += check(job)
    if job.model is not None:  # spec.model, for `tfjobgen plan`; imported only for the jobs that have one
        from ..concerns import workload

        problems += workload.check(job)
    for check in (container.check_image, qos.check, topology.check, environment.check, lifecycle.check, tensorboard.check,
                  podspec.check, monitoring.check, backend.check):
        problems += check(job, profile)
    problems += gang.check(job, profile, backend.one_object)
    if not has_errors(problems):  # sizes are worth computing only for a job that is otherwise right
        problems += limits.check(job, profile, backend.naming)
        if profile.node_count is not None or any(p.node_count is not None for p in profile.node_pools.values()):
            from ..concerns import capacity  # only where the profile counts nodes, so that Pending is known

            problems += capacity.check(job, profile)
    problems = [intent.locate(p) for p in problems]
    return (None if has_errors(problems) else job), problems


def duplicates(found: list[Intent]) -> list[Problem]:
    """A job name used by more than one intent of the build, in any namespaces (intents.duplicate_names)."""
    return intents.duplicate_names(found)


def no_jobs(objects: int, elsewhere: int = 0, cluster: str = "") -> Problem:
    """A build without a single intent for its cluster, refused unless the profile allows it
    (`elsewhere`: the intents of the build that run on other clusters)."""
    if elsewhere:
        what = (f"none of the {elsewhere} TrainingJob(s) of this build runs on cluster {cluster} (their "
                "spec.clusters, or this profile's spec.namespaces, send them to other clusters)")
    else:
        what = f"no TrainingJob among the {objects} objects of this build"
    return Problem(f"{what}; refusing to emit a set without jobs (Argo CD would prune every running job). Set "
                   "allowNoJobs: true in the ClusterProfile if this cluster is meant to run no job")


def for_cluster(found: list[Intent], profile: ClusterProfile) -> tuple[list[Intent], list[Problem]]:
    """The intents that run on the profile's cluster (inputs/routing.py), and each one that names the cluster
    although the profile does not run its namespace. The embedded profile is no cluster's: every job is for it."""
    if profile.embedded:
        return list(found), []
    mine, problems = [], []
    for intent in found:
        if routing.runs_on(intent.data, profile.name, profile.namespaces):
            wrong = routing.conflict(intent.data, profile.name, profile.namespaces)
            if wrong:
                problems.append(intent.locate(wrong))
            else:
                mine.append(intent)
    return mine, problems


# ---- plan, render -------------------------------------------------------------

@dataclass
class Expansion:
    """What a set of intents became: per intent, its typed job and its objects (None and [] when anything
    failed), and every problem. The commands built on the pipeline take all three from here."""

    objects: list[list[dict]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    jobs: list[trainingjob.TrainingJob | None] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not has_errors(self.problems)

    def in_order(self) -> list[dict]:
        """Every object of every job, in the order `kustomize build` prints them (emit.kustomize_order)."""
        return emit.kustomize_order([obj for objects in self.objects for obj in objects])


def expand(intents: list[Intent], profile: ClusterProfile, others: list[dict] = ()) -> Expansion:
    """Validate every intent, then plan and render them all, or nothing if any has an error.

    `others` are the build's other objects: a generated object may not take one's name.
    """
    jobs, problems = check_all(intents, profile)
    if not has_errors(problems):
        objects = [render(job, profile) for job in jobs]
        problems += collisions(objects, intents, list(others))
    if has_errors(problems):
        return Expansion([[] for _ in intents], _sorted(problems), [None for _ in intents])
    return Expansion(objects, _sorted(problems), jobs)


# The add-ons: objects a job gets whichever backend runs its pods, each `objects(plan)` returning none
# when neither the job nor the profile asks for them. No backend knows them: render adds them after the
# backend's objects, in this order.
ADD_ONS = (tensorboard.objects, monitoring.objects)


def render(job: trainingjob.TrainingJob, profile: ClusterProfile) -> list[dict]:
    """Plan one valid job, let its backend encode the plan as Kubernetes objects, then add each add-on's."""
    backend = backends.get(job.backend)
    planned = jobplan.build(job, profile, backend.naming)
    return backend.encode(planned) + [obj for add_on in ADD_ONS for obj in add_on(planned)]


def collisions(expanded: list[list[dict]], intents: list[Intent], others: list[dict]) -> list[Problem]:
    """Generated objects that share a kind, namespace and name with another object of the build."""
    owner: dict[tuple, str] = {}
    for item in others:
        owner.setdefault(_identity(item), "an object already in the build")
    problems = []
    for intent, objects in zip(intents, expanded):
        for obj in objects:
            key = _identity(obj)
            if key in owner:
                problems.append(intent.locate(Problem(
                    f"generates {key[0]} {key[1]}/{key[2]}, which {owner[key]} also defines", "metadata.name")))
            owner.setdefault(key, f"TrainingJob {intent.ref.namespace}/{intent.ref.name}")
    return problems


def _identity(obj: Any) -> tuple:
    ref = intents.ref_of(obj)  # text whatever the document holds
    return (ref.kind, ref.namespace, ref.name)


def _sorted(problems: list[Problem]) -> list[Problem]:
    return sorted(problems, key=lambda p: (p.file, p.line, p.field, p.message))

"""The KRM function: expands every TrainingJob among the items it is given.

Two calling conventions, one behaviour:

- KRM Functions Specification (kpt, `kustomize build --enable-exec`): a
  ResourceList on stdin, a ResourceList on stdout, `functionConfig` is the
  ClusterProfile (absent: the embedded default).
- kustomize legacy exec plugin (`kubectl kustomize --enable-alpha-plugins`):
  argv[1] is the ClusterProfile file, stdin the build's objects as a YAML
  stream, stdout the transformed stream (YAML written as kustomize writes it).

It is a transformer, not a generator: intents are ordinary resources of the
build and are replaced by what they expand to. If the function does not run
(kustomize without --enable-exec skips exec functions silently), the intents
come out unchanged and `kubectl apply` fails loudly on the unknown kind,
instead of an empty set that Argo CD would prune against.

Errors: a `results` entry per problem and exit code 1 (kustomize ignores
results, not exit codes); the same problems go to stderr, one per line.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys

from ..concerns import labels
from ..inputs import intents, source
from ..inputs.intents import Intent
from ..inputs.problems import ERROR, WARNING, InvalidInput, Problem, has_errors, visible
from ..inputs.profile import KIND as PROFILE_KIND
from ..inputs.profile import ClusterProfile
from . import emit, pipeline

_DOC_SPLIT = re.compile(r"^---[ \t]*$\n?", re.MULTILINE)
# config.k8s.io/* are kyaml's legacy names; kustomize hands a user's config.kubernetes.io/path on under it.
_PATH_ANNOTATIONS = ("internal.config.kubernetes.io/path", "config.kubernetes.io/path", "config.k8s.io/path")
_INDEX_ANNOTATIONS = ("internal.config.kubernetes.io/index", "config.kubernetes.io/index", "config.k8s.io/index")


def _path_annotation(item: dict) -> tuple[str, str]:
    """(the annotation's key, its value) of the first path annotation an item carries; ("", "") for none."""
    meta = item.get("metadata") if isinstance(item.get("metadata"), dict) else {}
    annotations = meta.get("annotations") if isinstance(meta.get("annotations"), dict) else {}
    return next(((k, str(annotations[k])) for k in _PATH_ANNOTATIONS if k in annotations), ("", ""))


def _annotated(item: dict, root: str) -> tuple[str, int | None]:
    """The file an orchestrator says an item came from (kpt: relative to the package), relative to root, and its
    index there. The annotation is input like any other field: a path outside root is not ours to read or to
    name in an error, so it gives "" (the index too)."""
    path = inside(_path_annotation(item)[1], root)
    meta = item.get("metadata") if isinstance(item.get("metadata"), dict) else {}
    annotations = meta.get("annotations") if isinstance(meta.get("annotations"), dict) else {}
    index = next((str(annotations[k]) for k in _INDEX_ANNOTATIONS if k in annotations), "") if path else ""
    return path, int(index) if index.isdigit() else None


def inside(path: str, root: str) -> str:
    """`path` (relative to root, or absolute) as a normalised path relative to root when it lies inside root;
    "" when it does not. Text only: the file is neither opened nor resolved (locate checks links when it reads)."""
    if not path or "\0" in path:
        return ""
    relative = os.path.relpath(os.path.normpath(path), os.path.abspath(root)) if os.path.isabs(path) \
        else os.path.normpath(path)
    return "" if relative in (".", "..") or relative.startswith(("../", "/")) else relative


def _outside(items: list, root: str) -> list[Problem]:
    """One warning per intent whose path annotation names a file outside root: not read, not blamed."""
    problems = []
    for item in items:
        key, path = _path_annotation(item)
        if path and not inside(path, root):
            shown = path if len(path) <= 60 else path[:57] + "..."
            problems.append(Problem(
                f"{key} names {shown!r}, outside the folder this function was run in: tfjobgen neither reads that "
                "file nor names it in errors (give a path relative to the kpt package, or none)",
                "metadata.annotations", severity=WARNING, ref=intents.ref_of(item)))
    return problems


def _intent(item: dict, root: str) -> Intent:
    return Intent(item, file=_annotated(item, root)[0])


def _with_sources(found: list[Intent], root: str) -> list[Intent]:
    """The intents with the file and document the user wrote, found by walking the kustomization at root."""
    from . import locate  # only when there are errors to place

    sources = locate.find_intents(root)
    placed = []
    for intent in found:
        ref = intent.ref
        source_of = sources.get((ref.namespace, ref.name))
        if source_of is None:  # a patch or a transformer may have changed the namespace, a namePrefix the name
            for prefix, suffix in locate.name_affixes(root):
                if ref.name.startswith(prefix) and ref.name.endswith(suffix) and len(ref.name) > len(prefix + suffix):
                    written = ref.name[len(prefix):len(ref.name) - len(suffix)]
                    by_name = [v for (_, name), v in sources.items() if name == written]
                    source_of = by_name[0] if len(by_name) == 1 else None
                    if source_of is not None:
                        break
        if source_of is None and intent.file:  # kpt: no kustomization, a file named relative to the package
            source_of = locate.find_annotated(root, intent.file, _annotated(intent.data, root)[1], ref)
        if source_of and intent.document is None:
            file, document = source_of  # the line is of this file: so is the name the error gives
            intent = Intent(intent.data, file, document)
        placed.append(intent)
    return placed


def _misplaced(items: list, profile, root: str) -> Problem | None:
    """Why a build gave the function no intent, when the kustomization at root says it: the profile listed under
    `generators:` (kustomize runs those before the resources are read: every job would pass through as it is),
    or a second profile run on objects the first already generated."""
    from . import locate

    listed = locate.profile_listings(root, profile.name)
    if "generators" in listed:
        return Problem(f"ClusterProfile {profile.name} is listed under generators:, which kustomize runs before it "
                       "reads the resources, so the TrainingJobs would pass through unexpanded and unchecked: list "
                       "it under transformers:", "generators", file=listed["generators"][0], line=listed["generators"][1])
    if any(_generated(item) for item in items):
        where = listed.get("transformers", ("", 0))
        return Problem(f"ClusterProfile {profile.name} found only objects tfjobgen already made: another profile ran "
                       "before it in this build (one overlay, one cluster, one profile under transformers:): keep one",
                       "transformers", file=where[0], line=where[1])
    return None


def _generated(item) -> bool:
    """An object tfjobgen made (its job label): parsed, or a document the legacy plugin passed through as text."""
    if isinstance(item, str):
        return f"{labels.JOB}:" in item
    meta = item.get("metadata") if isinstance(item, dict) and isinstance(item.get("metadata"), dict) else {}
    return isinstance(meta.get("labels"), dict) and bool(meta["labels"].get(labels.JOB))


def expand_items(items: list, profile, root: str) -> tuple[list, list[Problem]]:
    """Replace each intent among `items` by its objects; everything else passes through untouched.
    `root` is the tree the function was given (kustomize's or kpt's working folder): it reads no file outside it."""
    result, problems = _expanded(items, profile, root)
    return result, _outside([item for item in items if intents.is_intent(item)], root) + problems


def _expanded(items: list, profile, root: str) -> tuple[list, list[Problem]]:
    every = [i for i, item in enumerate(items) if intents.is_intent(item)]
    written = [_intent(items[i], root) for i in every]
    # Intents of other clusters (inputs/routing.py) leave the build: this cluster neither checks nor runs them.
    found, wrong = pipeline.for_cluster(written, profile)
    if wrong:  # placed at the files the user wrote, as every error is below
        return items, pipeline.for_cluster(_with_sources(written, root), profile)[1]
    kept = {id(intent.data) for intent in found}
    positions = [i for i in every if id(items[i]) in kept]  # in the order of `found`: for_cluster keeps it
    if not found:
        misplaced = None if every else _misplaced(items, profile, root)  # said whatever allowNoJobs says
        if misplaced or not profile.allow_no_jobs:
            return items, [misplaced or pipeline.no_jobs(len(items), len(every), profile.name)]
    taken = set(every)
    others = [item for i, item in enumerate(items) if i not in taken]
    expansion = pipeline.expand(found, profile, others)
    if has_errors(expansion.problems):
        # Errors only: find the files the intents came from and check again, so that every problem
        # (and every message that names another file) says where to look, the patch that wrote a value included.
        from . import locate

        placed = _with_sources(found, root)
        expansion = pipeline.expand(placed, profile, others)
        sources = {(i.ref.kind, i.ref.name): (i.document, i.data) for i in placed if i.document is not None}
        return items, locate.from_patches(expansion.problems, sources, root)
    replacement = dict(zip(positions, expansion.objects))
    result = []
    for i, item in enumerate(items):
        result.extend(replacement.get(i, [] if i in taken else [item]))
    return result, expansion.problems


def _result(problem: Problem, indexes: dict | None = None) -> dict:
    """A KRM result (kpt's format: resourceRef, field {path}, file {path, index}, tags); the line goes in tags."""
    entry: dict = {"message": visible(problem.message), "severity": problem.severity}  # escapes what cannot be seen
    if problem.ref:
        ref = problem.ref
        entry["resourceRef"] = {"apiVersion": ref.api_version, "kind": ref.kind, "name": ref.name}
        if ref.namespace:
            entry["resourceRef"]["namespace"] = ref.namespace
        if problem.field:
            entry["field"] = {"path": problem.field}
    if problem.file:
        entry["file"] = {"path": problem.file}
        index = (indexes or {}).get((problem.file, problem.ref))
        if index is not None:
            entry["file"]["index"] = index
    if problem.line:
        entry["tags"] = {"line": str(problem.line)}
    return entry


def _placed(problems: list[Problem], where: str) -> list[Problem]:
    """Problems of the build as a whole (no file, no object) placed at `where`, so each line says where."""
    return [p if p.file or p.ref else dataclasses.replace(p, file=where) for p in problems]


def _report(problems: list[Problem], stderr=None) -> None:
    stderr = stderr or sys.stderr  # looked up at each call: a caller may have redirected it
    for problem in problems:
        print(problem.format(), file=stderr)
    errors = sum(p.severity == ERROR for p in problems)
    if errors:
        print(f"tfjobgen: {errors} error(s); nothing was generated", file=stderr)


def _described(value) -> str:
    """What a value that is no mapping is, for a message: "a list", "null", "the text 'x'"."""
    return ("null" if value is None else "a list" if isinstance(value, list) else "true/false"
            if isinstance(value, bool) else "a number" if isinstance(value, (int, float))
            else f"the text {str(value)[:40]!r}")


def _profile_from_function_config(config) -> ClusterProfile:
    """The ClusterProfile in functionConfig; none (or kpt's empty placeholder ConfigMap) means the default."""
    if config is not None and not isinstance(config, dict):
        raise InvalidInput([Problem(f"functionConfig is {_described(config)}; it must be a ClusterProfile (a mapping "
                                    "with apiVersion and kind), or left out for the embedded default profile")])
    if not config or (config.get("kind") == "ConfigMap" and not config.get("data")):
        return pipeline.load_profile(None)
    if config.get("kind") == "ConfigMap":
        raise InvalidInput([Problem("the function config must be a ClusterProfile (kpt: --fn-config "
                                    "overlays/<cluster>/cluster-profile.yaml), not key=value arguments")])
    if config.get("kind") != PROFILE_KIND:  # a job's fields judged as a profile's would call the job a profile
        ref = intents.ref_of(config)
        held = " ".join(part for part in (ref.kind or "a mapping without kind", ref.name) if part)
        raise InvalidInput([Problem(f"the function config is {held}, not a {PROFILE_KIND}: give kpt --fn-config "
                                    "the cluster's profile (overlays/<cluster>/cluster-profile.yaml); the jobs "
                                    "are the package's resources", "functionConfig")])
    return pipeline.profile_from(config)


def run_resource_list(text: str, root: str, stderr=None) -> tuple[str, int]:
    """KRM: ResourceList in, ResourceList out, as block YAML (kpt keeps the style it is given)."""
    try:
        documents = source.parse_stream(text, "<stdin>")
        if len(documents) != 1 or not isinstance(documents[0], dict) or documents[0].get("kind") != "ResourceList":
            raise InvalidInput([Problem("expected one ResourceList (config.kubernetes.io/v1) on stdin")])
        resource_list = documents[0]
        items = resource_list.get("items") or []
        if not isinstance(items, list):
            raise InvalidInput([Problem("ResourceList.items must be a list")])
        # Passed through, text or null would be written out by kustomize or kpt as if it were a resource.
        strays = [Problem(f"is {_described(item)}; every item of a ResourceList is an object (a mapping with "
                          "apiVersion, kind and metadata): remove it, or write the object it stands for", f"items[{i}]")
                  for i, item in enumerate(items) if not isinstance(item, dict)]
        if strays:
            raise InvalidInput(strays)
        config = resource_list.get("functionConfig")
        profile = _profile_from_function_config(config)
    except InvalidInput as err:
        return _refused(err.problems, stderr), 1
    items, problems = expand_items(items, profile, root)
    problems = _placed(problems, "<stdin>")
    _report(problems, stderr)
    output = {"apiVersion": resource_list.get("apiVersion", "config.kubernetes.io/v1"), "kind": "ResourceList",
              "items": items}
    if config:
        output["functionConfig"] = config
    if problems:
        indexes = {(path, intents.ref_of(item)): index for item in items if isinstance(item, dict)
                   for path, index in [_annotated(item, root)] if path and index is not None}
        output["results"] = [_result(p, indexes) for p in problems]
    return emit.to_yaml([output]), 1 if has_errors(problems) else 0


def _refused(problems: list[Problem], stderr=None) -> str:
    """The ResourceList of input that could not be used at all: no items, a result per problem."""
    problems = _placed(problems, "<stdin>")
    _report(problems, stderr)
    return emit.to_yaml([{"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [],
                          "results": [_result(p) for p in problems]}])


def run_legacy_plugin(config_path: str, text: str, root: str, stderr=None) -> tuple[str, int]:
    """kustomize exec plugin: objects as a YAML stream in and out; only intents are parsed."""
    try:
        profile = pipeline.load_profile(config_path)
        chunks = [c for c in _DOC_SPLIT.split(text) if c.strip()]
        items: list = []
        for chunk in chunks:
            parsed = source.parse_stream(chunk, "<stdin>") if intents.may_be_ours(chunk) else []
            if parsed and all(isinstance(d, dict) for d in parsed):
                items.extend(parsed)
            else:
                items.append(chunk)  # passed through as text, unparsed
    except InvalidInput as err:
        _report(_in_users_profile(err.problems, config_path, root), stderr)
        return "", 1
    expanded, problems = expand_items(items, profile, root)
    problems = _placed(_in_users_profile(problems, config_path, root), _kustomization_of(root))
    _report(problems, stderr)
    if has_errors(problems):
        return "", 1
    # Runs of generated objects become YAML in one go; documents passed through stay as they came.
    out, run = [], []
    for item in expanded + [None]:
        if isinstance(item, dict):
            run.append(item)
            continue
        if run:
            out.append("---\n" + emit.to_yaml(run))
            run = []
        if isinstance(item, str):
            out.append("---\n" + item)
    return "".join(out), 0


def _in_users_profile(problems: list[Problem], config_path: str, root: str) -> list[Problem]:
    """Problems placed in the profile moved to the user's file and line: kustomize passes a legacy
    plugin a temporary copy of its config (kust-plugin-config-*), whose lines are kustomize's.
    The user's file is looked for only when there is something to move."""
    if not os.path.basename(config_path).startswith("kust-plugin-config-"):
        return problems
    from . import locate

    found: dict[str, tuple | None] = {}
    moved = []
    for problem in problems:
        if problem.file == config_path and problem.ref is not None:
            if problem.ref.name not in found:
                found[problem.ref.name] = locate.find_profile(root, problem.ref.name)
            users = found[problem.ref.name]
            if users is not None:
                file, document = users
                problem = dataclasses.replace(problem, file=file, line=document.line_of(problem.field))
        moved.append(problem)
    return moved


def _kustomization_of(root: str) -> str:
    """The kustomization kustomize ran us from, as the user knows its path (where a build-wide problem is)."""
    from . import locate

    found = intents.kustomization_file(root)
    return locate.display_path(found) if found else "<stdin>"


def main(argv: list[str]) -> int:
    """`tfjobgen krm [CONFIG]`: CONFIG given means the legacy plugin convention."""
    root = os.environ.get("KUSTOMIZE_PLUGIN_CONFIG_ROOT") or os.getcwd()
    try:
        text = source.read_stream(sys.stdin.buffer, "<stdin>")
    except InvalidInput as err:
        if argv:  # the legacy plugin's output is the objects: none
            _report(err.problems)
        else:  # KRM: kpt and kustomize get a ResourceList, whatever came in
            sys.stdout.write(_refused(err.problems))
        return 1
    if argv:
        output, code = run_legacy_plugin(argv[0], text, root)
    else:
        output, code = run_resource_list(text, root)
    try:
        sys.stdout.write(output)
        sys.stdout.flush()
    except OSError as err:  # a full disk, a closed pipe: say it, without a traceback at exit either
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        print(f"tfjobgen: cannot write standard output: {(err.strerror or str(err)).lower()}", file=sys.stderr)
        return 1
    return code


def console_main() -> None:
    """`tfjobgen-krm`: the same function under a name an exec function annotation can point at."""
    sys.exit(main(sys.argv[1:]))

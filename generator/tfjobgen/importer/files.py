"""One source file's text into imported jobs, or the problems that refuse it.

`import_text` is pure: a file's text and name in, every job it holds (its YAML with comments, its
report rows) and every problem out, each problem located at the source's own line. A job's intent
goes through tfjobgen's own validation (expand/pipeline.py) before it counts as imported, so a value
that import carried but tfjobgen refuses (a label key, a name too long for its pods' hostnames) is
reported at the source field it came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..expand import pipeline
from ..inputs import source as yaml_source
from ..inputs.intents import Intent
from ..inputs.problems import WARNING, InvalidInput, Problem
from ..inputs.profile import default_profile
from . import convert, sources, yamlout
from .report import DROPPED, Row, cover


@dataclass
class Job:
    name: str
    namespace: str
    text: str  # the intent as YAML, with comments
    intent: dict
    rows: list[Row]
    file: str
    source: sources.Source
    warnings: list[Problem] = field(default_factory=list)


@dataclass
class Result:
    jobs: list[Job] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)  # rows of documents that are no job (passed over)


def import_text(text: str, file: str, namespace: str | None = None) -> Result:
    result = Result()
    template = sources.templated(text)
    if template:
        line = text[:text.index(template)].count("\n") + 1
        result.problems.append(Problem(
            f"a template ({template[:40]}): import reads manifests, not templates; render it first (helm template, "
            "arena submit --dry-run, envsubst) and import what it prints", file=file, line=line))
        return result
    try:
        documents = yaml_source.parse_documents(text, file)
    except InvalidInput as err:
        result.problems += [p if "YAML" not in p.message else
                            Problem(f"{p.message}; import reads TFJob and Volcano Job manifests in YAML",
                                    p.field, p.severity, p.file, p.line) for p in err.problems]
        return result
    candidates = [d for d in documents if sources.is_candidate(d.data)]
    if not candidates:
        held = sources.what(documents[0].data) if documents else "nothing (the file is empty)"
        line = documents[0].line_of("kind") if documents else 0
        result.problems.append(Problem(f"no TFJob here: the file holds {held}; import reads Kubeflow TFJobs "
                                       f"({sources.KUBEFLOW}/{', '.join(sources.TFJOB_VERSIONS)}) and Volcano Jobs "
                                       f"({sources.VOLCANO}) running TensorFlow PS training", file=file, line=line))
        return result
    for document in documents:
        if document not in candidates:
            result.rows.append(Row(f"(document {document.index + 1})", DROPPED, "",
                                   f"{sources.what(document.data)}: not a job; import passes over it (keep it, "
                                   "tfjobgen does not make it)", file, document.start_line))
            continue
        job = _import_document(document, file, namespace, result.problems)
        if job is not None:
            result.jobs.append(job)
    return result


def _import_document(document: yaml_source.Document, file: str, namespace: str | None,
                     problems: list[Problem]) -> Job | None:
    def located(field_name: str, message: str, severity: str = "error") -> Problem:
        return Problem(message, field_name, severity, file, document.line_of(field_name))

    hole = sources.placeholder(document.data)
    if hole:
        problems.append(located(hole[0], f"{hole[1]!r} is a placeholder (envsubst, or a value to fill in): import reads "
                                         "manifests, not templates; fill it in (envsubst < FILE) and import the result"))
        return None
    read = sources.read(document.data)
    if isinstance(read, sources.Refusal):
        problems.append(located(read.field, read.message))
        return None
    imported = convert.convert(read, namespace)
    if isinstance(imported, list):
        problems += [located(r.field, r.message) for r in imported]
        return None
    header = [f"Imported by tfjobgen import from {file} ({read.kind} {imported.name}).",
              "Each comment says a choice import made; its report lists every source field."]
    text = yamlout.emit(imported.intent, imported.notes, header)
    found = validate(text, imported, located)
    errors = [p for p in found if p.is_error]
    if errors:
        problems += errors
        return None
    rows = [Row(r.field, r.outcome, r.target, r.why, file, document.line_of(r.field) if r.field else 0, imported.name)
            for r in cover(document.data, imported.rows)]
    return Job(imported.name, imported.intent["metadata"]["namespace"], text, imported.intent, rows, file, read,
               [p for p in found if not p.is_error])


def validate(text: str, imported: convert.Imported, located) -> list[Problem]:
    """tfjobgen's own validation of the intent import wrote, against the embedded default profile, each
    problem placed at the source field its value came from."""
    document = yaml_source.parse_documents(text, "<imported>")[0]
    if document.data != imported.intent:  # the emitter must read back as what was built
        raise AssertionError(f"import wrote YAML that reads back differently for {imported.name}")
    _, found = pipeline.validate(Intent(document.data, "<imported>", document), default_profile())
    return [located(_origin(p.field, imported.provenance), f"imported as {p.field}: {p.message}",
                    WARNING if not p.is_error else "error") for p in found]


def _origin(target: str, provenance: dict[str, str]) -> str:
    """The source field an intent field came from: its own, or the nearest parent's."""
    path = target
    while path:
        if path in provenance:
            return provenance[path]
        cut = max(path.rfind("."), path.rfind("["))
        path = path[:cut] if cut > 0 else ""
    return ""

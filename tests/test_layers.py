"""The package's layers, as docs/design.md's table writes them, held by every import.

kopf checks its layers with import-linter; this reads the same edges with ast and no new
dependency: `import tfjobgen.x`, `from .x import y`, `from . import x`, at the top of a module
and inside functions (a lazy import is still an edge). Each layer may import its own modules
and the layers the table lists; EXCEPTIONS are the imports that break it today, each with why
and what will remove it. Beside the layers, one more seam read the same way: only backends/
branches on a backend's name.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from conftest import REPO

PACKAGE = REPO / "generator" / "tfjobgen"
DESIGN = REPO / "docs" / "design.md"
START, END = "<!-- layers: start -->", "<!-- layers: end -->"
EVERY_OTHER = "every other module"  # the catch-all of the table's modules column
ANYTHING = "anything"  # a layer that may import every layer

# (importing module, imported module): imports that break the table today.
EXCEPTIONS = {
    # The generator checks spec.model with the planner's rules, and where a profile counts nodes it warns
    # of tasks that would stay Pending with the planner's packing: both imported lazily, only for the jobs
    # that need them (docs/design.md, "The pipeline").
    ("tfjobgen.expand.pipeline", "tfjobgen.concerns.workload"),
    ("tfjobgen.expand.pipeline", "tfjobgen.concerns.capacity"),
    # The runtime checks TFJOBGEN_TRAINING against the schema, the single source of spec.training's fields
    # and defaults (imported lazily, with jsonschema, once per task).
    ("tfjobgen.runtime.settings", "tfjobgen.inputs.schema"),
}


def layers() -> list[tuple[str, list[str], list[str]]]:
    """(layer, its modules, the layers it may import) per row of docs/design.md's table."""
    text = DESIGN.read_text()
    table = text[text.index(START) + len(START):text.index(END)]
    rows = []
    for line in table.strip().splitlines()[2:]:  # past the header and its rule
        name, modules, imports = (cell.strip() for cell in line.strip().strip("|").split("|"))
        rows.append((name, [EVERY_OTHER] if modules == EVERY_OTHER else re.findall(r"`([^`]+)`", modules),
                     [ANYTHING] if imports == ANYTHING else re.findall(r"`([^`]+)`", imports)))
    return rows


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """Every tfjobgen module `path` imports, lazy imports included, each as the module itself (`from . import
    x` names module x; `from .x import y` names x unless y is a module of its own)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "tfjobgen"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if source.split(".")[0] != "tfjobgen":
                continue
            for alias in node.names:
                candidate = f"{source}.{alias.name}"
                found.add(candidate if _is_module(candidate) else source)
    return found


def _is_module(name: str) -> bool:
    path = PACKAGE.parent.joinpath(*name.split("."))
    return path.is_dir() or path.with_suffix(".py").is_file()


def layer_of(module: str, rows) -> str:
    """The layer of a tfjobgen module: by its top-level name (`tfjobgen.runtime.tf1` -> `runtime`)."""
    top = module.split(".")[1]
    for name, modules, _ in rows:
        if top in modules:
            return name
    return next(name for name, modules, _ in rows if modules == [EVERY_OTHER])


def test_every_import_goes_where_the_layers_of_the_design_notes_allow():
    rows = layers()
    allowed = {name: set(may_import) | {name} for name, _, may_import in rows}
    broken = []
    for path in sorted(PACKAGE.rglob("*.py")):
        importer = module_name(path)
        if importer == "tfjobgen":
            continue
        mine = layer_of(importer, rows)
        for imported in sorted(imports(path)):
            if imported == "tfjobgen" or (importer, imported) in EXCEPTIONS:
                continue  # the package itself: its __version__
            theirs = layer_of(imported, rows)
            if ANYTHING not in allowed[mine] and theirs not in allowed[mine]:
                broken.append(f"{importer} ({mine}) imports {imported} ({theirs})")
    assert not broken, "imports against docs/design.md's layers:\n" + "\n".join(broken)


def test_the_layers_name_real_modules_and_the_exceptions_are_still_needed():
    rows = layers()
    names = {name for name, _, _ in rows}
    for name, modules, may_import in rows:
        assert set(may_import) <= names | {ANYTHING}, f"layer {name} may import an unknown layer"
        for module in modules:
            assert module == EVERY_OTHER or _is_module(f"tfjobgen.{module}"), f"layer {name}: no module {module}"
    every = {(module_name(path), imported) for path in PACKAGE.rglob("*.py") for imported in imports(path)}
    assert EXCEPTIONS <= every, f"exceptions that no longer happen (remove them): {sorted(EXCEPTIONS - every)}"


def test_the_check_sees_lazy_and_relative_imports():
    imported = imports(PACKAGE / "expand" / "pipeline.py")
    assert {"tfjobgen.concerns.workload", "tfjobgen.backends", "tfjobgen.inputs.profile"} <= imported
    assert layer_of("tfjobgen.runtime.tf1", layers()) == "runtime"
    assert layer_of("tfjobgen.concerns.qos", layers()) == "concerns"


def test_no_module_outside_the_backends_branches_on_a_backends_name():
    """Adding a backend is its module and a line in backends.BACKENDS: no other module compares anything with
    a backend's name. What the rest needs to know of a backend is on its Backend (Kueue: one_object)."""
    from tfjobgen.backends import BACKENDS

    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] == "backends":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Compare):
                continue
            for side in (node.left, *node.comparators):
                values = side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]
                if any(isinstance(v, ast.Constant) and v.value in BACKENDS for v in values):
                    found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not found, f"backend names compared outside backends/: {found}"

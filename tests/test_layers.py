"""The package's layers, as docs/design.md's table writes them, held by every import.

Each layer is a folder of generator/tfjobgen/ (the edges are the two files at its root), so a
module's layer is the folder it sits in. kopf checks its layers with import-linter; this reads the
same edges with ast and no new dependency: `import tfjobgen.x`, `from .x import y`, `from . import
x`, at the top of a module and inside functions (a lazy import is still an edge). Each layer may
import its own modules and the layers the table lists; EXCEPTIONS are the imports that break it,
each with why. Beside the layers, two more seams read the same way: only backends/ branches on a
backend's name, and only concerns/gang_schedulers.py on a gang scheduler's.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from conftest import REPO

PACKAGE = REPO / "generator" / "tfjobgen"
DESIGN = REPO / "docs" / "design.md"
START, END = "<!-- layers: start -->", "<!-- layers: end -->"
ANYTHING = "anything"  # a layer that may import every layer
NOTHING = "nothing"  # a layer that imports no other

# (importing module, imported module): imports that break the table, each with why.
EXCEPTIONS = {
    # The runtime checks TFJOBGEN_TRAINING against the schema, the single source of spec.training's fields
    # and defaults (imported lazily, with jsonschema, once per task): a second copy of the rules in the
    # runtime could drift from what the generator accepted.
    ("tfjobgen.runtime.settings", "tfjobgen.inputs.schema"),
}


def layers() -> list[tuple[str, list[str], list[str]]]:
    """(layer, its folders or root modules, the layers it may import) per row of docs/design.md's table."""
    text = DESIGN.read_text()
    table = text[text.index(START) + len(START):text.index(END)]
    rows = []
    for line in table.strip().splitlines()[2:]:  # past the header and its rule
        name, folders, imports = (cell.strip() for cell in line.strip().strip("|").split("|"))
        rows.append((name, re.findall(r"`([^`]+)`", folders),
                     [ANYTHING] if imports == ANYTHING else [] if imports == NOTHING else re.findall(r"`([^`]+)`", imports)))
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
    """The layer of a tfjobgen module: the folder it sits in (`tfjobgen.runtime.tf1` -> `runtime`), or the
    root module it is (`tfjobgen.cli` -> `edges`)."""
    top = module.split(".")[1]
    found = [name for name, folders, _ in rows if top in folders]
    assert len(found) == 1, f"{module}: in {len(found)} rows of docs/design.md's layers (its folder {top!r})"
    return found[0]


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


def test_the_folders_are_the_layers_and_the_exceptions_are_still_needed():
    """`ls generator/tfjobgen` shows the layers: every folder and root module is in exactly one row, and
    every row names folders that exist."""
    rows = layers()
    names = {name for name, _, _ in rows}
    listed = [folder for _, folders, _ in rows for folder in folders]
    for name, folders, may_import in rows:
        assert set(may_import) <= names | {ANYTHING}, f"layer {name} may import an unknown layer"
        for folder in folders:
            assert _is_module(f"tfjobgen.{folder}"), f"layer {name}: no folder or module {folder}"
    present = sorted(p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
                     if p.name != "__init__.py" and (p.suffix == ".py" or (p / "__init__.py").is_file()))
    assert sorted(listed) == present, "the layers table and the package's folders differ"
    every = {(module_name(path), imported) for path in PACKAGE.rglob("*.py") for imported in imports(path)}
    assert EXCEPTIONS <= every, f"exceptions that no longer happen (remove them): {sorted(EXCEPTIONS - every)}"


def test_the_check_sees_lazy_and_relative_imports():
    imported = imports(PACKAGE / "expand" / "pipeline.py")
    assert {"tfjobgen.concerns.workload", "tfjobgen.backends", "tfjobgen.inputs.profile"} <= imported
    assert layer_of("tfjobgen.runtime.tf1", layers()) == "runtime"
    assert layer_of("tfjobgen.concerns.qos", layers()) == "concerns"
    assert layer_of("tfjobgen.cli", layers()) == "edges"


def test_the_package_faces_import_nothing():
    """A folder's __init__.py lists its rooms and imports nothing of tfjobgen, so importing one module of a
    layer (the KRM function's path above all) costs that module alone. backends/, which has a registry to
    keep, is the one that may."""
    keep = {"backends"}
    loaded = []
    for face in sorted(PACKAGE.rglob("__init__.py")):
        name = module_name(face)
        if name == "tfjobgen" or name.removeprefix("tfjobgen.") in keep:
            continue
        if imports(face):
            loaded.append(name)
    assert not loaded, f"package faces that import tfjobgen modules: {loaded}"


def test_the_plane_imports_neither_the_nodes_nor_the_controllers():
    """cluster/plane/ is what real nodes and controllers stand on: what it shares with them (the address plan)
    lives in it, so none of its modules reaches up into nodes/ or controllers/."""
    above = ("tfjobgen.cluster.nodes", "tfjobgen.cluster.controllers")
    upward = [f"{module_name(path)} imports {imported}" for path in sorted((PACKAGE / "cluster" / "plane").rglob("*.py"))
              for imported in sorted(imports(path)) if imported.startswith(above)]
    assert not upward, upward


def test_every_package_face_lists_its_rooms():
    """A newcomer opening a folder's __init__.py finds each of its modules and sub-folders named there."""
    unlisted = []
    for face in sorted(PACKAGE.rglob("__init__.py")):
        text = ast.get_docstring(ast.parse(face.read_text(encoding="utf-8"))) or ""
        rooms = sorted(p.stem for p in face.parent.iterdir() if p.suffix == ".py" and p.stem not in ("__init__",
                                                                                                      "__main__"))
        rooms += sorted(p.name for p in face.parent.iterdir() if (p / "__init__.py").is_file())
        unlisted += [f"{face.parent.relative_to(PACKAGE.parent)}/{room}" for room in rooms
                     if not _names_room(text, room)]
    assert not unlisted, f"modules their package's face does not name: {unlisted}"


def _names_room(face: str, room: str) -> bool:
    """Whether a face names `room` as a room, not only as a word of its prose: at the start of a listing line
    (or after a column's spaces, or in a list of names), as `room`, room.py or room/."""
    name = re.escape(room)
    return any(re.search(pattern, face) for pattern in (
        rf"(?m)(?:^\s+|\s{{2}}|, ){name}(?=[\s,/]|$)", rf"\b{name}\.py\b", rf"`{name}`", rf"\b{name}/"))


def _compared(path: Path, names) -> list[tuple[str, str]]:
    """(file:line, the name) wherever `path` compares a string constant that is one of `names` with anything
    (==, !=, in, not in; a tuple, list or set of them on either side)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Compare):
            continue
        for side in (node.left, *node.comparators):
            values = side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]
            found += [(f"{path.relative_to(PACKAGE)}:{node.lineno}", v.value) for v in values
                      if isinstance(v, ast.Constant) and isinstance(v.value, str) and v.value in names]
    return found


def test_no_module_outside_the_backends_branches_on_a_backends_name():
    """Adding a backend is its module and a line in backends.BACKENDS: no other module compares anything with
    a backend's name. What the rest needs to know of a backend is on its Backend (Kueue: one_object)."""
    from tfjobgen.backends import BACKENDS

    found = [at for path in sorted(PACKAGE.rglob("*.py")) if path.relative_to(PACKAGE).parts[0] != "backends"
             for at, _ in _compared(path, BACKENDS)]
    assert not found, f"backend names compared outside backends/: {found}"


# The gang table: the one module that knows the gang schedulers by name.
GANG_SEAM = PACKAGE / "concerns" / "gang_schedulers.py"
# Modules outside it whose comparisons with such a name are no gang scheduler's, each with why. "none" is
# spec.gang.scheduler's value for no gang, and also a value of other fields and tables.
GANG_NAME_EXCEPTIONS = {
    # spec.topology.mode none (no placement rule), in the capacity simulation.
    "concerns/capacity.py",
    # the placement verdict's topology none (no layout promised), read back from the pods' annotation.
    "status/render.py",
    # spec.model's partitioner none (the embedding kept whole), in the sharding rule and its report.
    "shared/variable_placement/sharding.py", "kit/ps_load.py",
}


def test_no_module_outside_the_gang_table_branches_on_a_gang_schedulers_name():
    """Adding a gang scheduler is a row of gang_schedulers.SCHEDULERS (and, where its local cluster runs a
    program, a controller module): no other module compares anything with a gang scheduler's name. What
    the rest needs to know of a scheduler is a capability on its row."""
    from tfjobgen.concerns.gang_schedulers import SCHEDULERS

    found = [at for path in sorted(PACKAGE.rglob("*.py")) if path != GANG_SEAM
             and str(path.relative_to(PACKAGE)) not in GANG_NAME_EXCEPTIONS
             for at, _ in _compared(path, SCHEDULERS)]
    assert not found, f"gang scheduler names compared outside concerns/gang_schedulers.py: {found}"
    for allowed in sorted(GANG_NAME_EXCEPTIONS):  # each still compares "none" (else drop it), and no other name
        names = {name for _, name in _compared(PACKAGE / allowed, SCHEDULERS)}
        assert names == {"none"}, f"{allowed}: compares {sorted(names)}; its exception is for none alone"


def test_the_table_allows_only_the_arrows_in_use():
    """Each row lists the layers its modules really import, so the table reads as the import graph: an arrow
    nothing uses is taken out (a new import puts it back, in the same change)."""
    rows = layers()
    used = {(layer_of(module_name(path), rows), layer_of(imported, rows))
            for path in PACKAGE.rglob("*.py") if module_name(path) != "tfjobgen"
            for imported in imports(path) if imported != "tfjobgen"
            and (module_name(path), imported) not in EXCEPTIONS}
    unused = [f"{name} -> {other}" for name, _, may_import in rows for other in may_import
              if other != ANYTHING and (name, other) not in used]
    assert not unused, f"arrows of docs/design.md's layers that no import uses: {unused}"


def test_no_product_module_imports_the_harness():
    """harness/ serves the tests, benchmarks, demos and docs generators; a product module that reached it would
    ship test code on the KRM function's and the commands' paths."""
    found = [f"{module_name(path)} imports {imported}" for path in sorted(PACKAGE.rglob("*.py"))
             if path.relative_to(PACKAGE).parts[0] != "harness"
             for imported in imports(path) if imported.startswith("tfjobgen.harness")]
    assert not found, found


TREES = ("tests", "benchmarks", "demos", "docs/generate")


def test_tests_benchmarks_demos_and_docs_generators_do_not_import_each_other():
    """What two of them share lives in tfjobgen.harness, not in one of them reached through sys.path."""
    own = {tree: {p.stem for p in (REPO / tree).rglob("*.py")} for tree in TREES}
    found = []
    for tree in TREES:
        others = set().union(*(names for name, names in own.items() if name != tree)) - own[tree]
        for path in sorted((REPO / tree).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
                found += [f"{path.relative_to(REPO)}: {name}" for name in names if name.split(".")[0] in others]
            text = path.read_text(encoding="utf-8")
            found += [f"{path.relative_to(REPO)}: sys.path reaches {other}" for other in TREES
                      if other != tree and re.search(rf"sys\.path\.\w+\(.*REPO / \"{re.escape(other)}\"", text)]
    assert not found, f"imports across tests/, benchmarks/, demos/ and docs/generate/: {found}"

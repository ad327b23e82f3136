"""Pages derived from code stay in step with it: regenerate them with the command each names."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

from conftest import REPO, SAMPLE


def _run_in_a_copy(script: str, tmp_path, *args: str) -> str:
    """Run a docs script in a copy (the working tree stays as it is) whose jobs/ and overlays/ are the sample
    repository's: the pages show the seed's examples, which the tests keep in tests/fixtures, while the
    repository's own jobs/ and overlays/ are whatever the team's are. Returns what the script printed."""
    for name in ("generator", "schemas", "tests"):
        (tmp_path / name).symlink_to(REPO / name)
    for name in ("jobs", "overlays"):
        (tmp_path / name).symlink_to(SAMPLE / name)
    (tmp_path / script).parent.mkdir(parents=True)
    shutil.copy(REPO / script, tmp_path / script)
    return subprocess.run([sys.executable, str(tmp_path / script), *args], check=True, capture_output=True,
                          text=True).stdout


def _regenerated(script: str, output: str, tmp_path, *args: str) -> tuple[str, str]:
    """The committed page and the one `script` writes now, in a copy."""
    _run_in_a_copy(script, tmp_path, *args)
    return (REPO / output).read_text(), (tmp_path / output).read_text()


def test_field_reference_matches_the_schemas(tmp_path):
    committed, fresh = _regenerated("docs/generate/reference.py", "docs/reference.md", tmp_path)
    assert committed == fresh, "docs/reference.md is stale: run .venv/bin/python docs/generate/reference.py"


def test_the_refusal_catalogue_page_counts_every_case(tmp_path):
    committed, fresh = _regenerated("docs/generate/refusals.py", "docs/refusals.md", tmp_path)
    assert committed == fresh, "docs/refusals.md is stale: run .venv/bin/python docs/generate/refusals.py"


def test_the_seed_scenes_table_in_plan_md_is_what_tfjobgen_plan_says(tmp_path):
    printed = _run_in_a_copy("docs/generate/plan_scenes.py", tmp_path)
    assert printed.strip() in (REPO / "docs/plan.md").read_text(), \
        "docs/plan.md's scene table is stale: paste the output of .venv/bin/python docs/generate/plan_scenes.py"


def _anchors(page) -> set[str]:
    """The anchors GitHub gives a page's headings: links and backticks dropped, lower case, punctuation gone."""
    found = set()
    for line in page.read_text().splitlines():
        if heading := re.match(r"#+ (.*)", line):
            text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.group(1))
            found.add(re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-"))
    return found


def test_every_link_to_a_section_of_a_page_finds_it():
    pages = [*REPO.glob("*.md"), *REPO.glob("docs/*.md"), *REPO.glob("cluster-tools/*.md")]
    broken = []
    for page in pages:
        for link in re.finditer(r"\]\(([^)#\s]*\.md)?#([^)\s]+)\)", page.read_text()):
            target = (page.parent / link.group(1)).resolve() if link.group(1) else page
            if not target.exists() or link.group(2) not in _anchors(target):
                broken.append(f"{page.relative_to(REPO)}: {link.group(0)}")
    assert not broken, "links to a heading no page has (a section moved or renamed?):\n" + "\n".join(broken)


def test_no_page_calls_a_backend_that_ships_planned():
    """The jobset and tfjob backends ship (generator/tfjobgen/backends/): nothing calls them planned or later."""
    backends = {p.stem for p in (REPO / "generator" / "tfjobgen" / "backends").glob("*.py")}
    assert {"jobset", "tfjob"} <= backends
    stale = re.compile(r"planned backends?|planned (TFJob|JobSet)|backends? (will|to come)|later backends", re.I)
    pages = [REPO / "README.md", *(REPO / "docs").glob("*.md"), *(REPO / "argocd").rglob("*.yaml"),
             *(REPO / "argocd").rglob("*.md"), *(REPO / "tests").rglob("*.py")]
    found = [f"{p.relative_to(REPO)}:{n}" for p in pages for n, line in enumerate(p.read_text().splitlines(), 1)
             if stale.search(line) and p.name != "test_docs.py"]
    assert not found, found

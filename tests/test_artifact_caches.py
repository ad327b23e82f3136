"""`tfjobgen images list|build` and `tfjobgen cluster tools [--list]` on caches that are not what they wrote: a file
where the folder should be, a folder this user cannot write, an image.json of another shape, and a machine without
git. One line each and a non-zero exit, never a traceback; a listing writes nothing.

A read-only cache is made read-only for real: as root (whom permission bits do not stop) by a read-only bind mount
in a mount namespace of the command's own (unshare -m), gone with it; as anyone else by its mode.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import REPO, tfjobgen_command

IMAGES, TOOLS = "TFJOBGEN_IMAGES_CACHE", "TFJOBGEN_TOOLS_CACHE"


def run(*args: str, env: dict | None = None, read_only: Path | None = None) -> subprocess.CompletedProcess:
    command = tfjobgen_command() + list(args)
    if read_only is not None and os.geteuid() == 0:
        command = ["unshare", "-m", "sh", "-c", 'mount --bind -o ro "$0" "$0" && exec "$@"', str(read_only), *command]
    full_env = {**os.environ, "PYTHONPATH": str(REPO / "generator"), **(env or {})}
    return subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=full_env, timeout=120,
                          stdin=subprocess.DEVNULL)


def clean(proc: subprocess.CompletedProcess) -> list[str]:
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    return proc.stderr.strip().splitlines()


@pytest.fixture
def read_only_folder(tmp_path):
    folder = tmp_path / "read-only"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
    yield folder
    folder.chmod(0o755)


@pytest.mark.parametrize("command, variable, what", [
    (["images", "list"], IMAGES, "images"), (["images", "build", "pause"], IMAGES, "images"),
    (["cluster", "tools", "--list"], TOOLS, "cluster tools"), (["cluster", "tools", "pause"], TOOLS, "cluster tools"),
], ids=["images-list", "images-build", "tools-list", "tools-build"])
def test_a_cache_that_is_a_file_is_one_line(tmp_path, command, variable, what):
    cache = tmp_path / "cache"
    cache.write_text("not a folder\n")
    proc = run(*command, env={variable: str(cache)})
    assert proc.returncode == 1
    prefix = "tfjobgen images" if variable == IMAGES else "tfjobgen cluster tools"
    assert clean(proc) == [f"{prefix}: the {what} cache {cache} is a file, not a folder: remove it, or point "
                           f"{variable} at a folder"]
    assert proc.stdout == "" and cache.read_text() == "not a folder\n"


@pytest.mark.parametrize("variable", [IMAGES, TOOLS])
def test_a_read_only_cache_lists_writing_nothing_and_a_build_there_is_one_line(read_only_folder, variable):
    cache = read_only_folder / "cache"  # cannot be made: its parent is read-only
    listing = run(*(["images", "list"] if variable == IMAGES else ["cluster", "tools", "--list"]),
                  env={variable: str(cache)}, read_only=read_only_folder)
    assert clean(listing) == [] and "not built" in listing.stdout, listing.stderr
    assert list(read_only_folder.iterdir()) == [], "a listing writes nothing"
    build = run(*(["images", "build", "pause"] if variable == IMAGES else ["cluster", "tools", "pause"]),
                env={variable: str(cache)}, read_only=read_only_folder)
    what, prefix = ("images", "tfjobgen images") if variable == IMAGES else ("cluster tools", "tfjobgen cluster tools")
    assert build.returncode == 1
    assert clean(build) == [f"{prefix}: cannot write to the {what} cache {cache} ({read_only_folder} is read-only for "
                            f"this user): point {variable} at a folder you can write"]
    assert list(read_only_folder.iterdir()) == []


@pytest.mark.parametrize("content, why", [
    ("[1, 2]", "holds JSON list, not the object `images build` writes"),
    ('{"name": 5}', "its 'name' is int, not str"),
    ('{"name": "pause", "tag": "3.10.1"}', "its 'reference' is missing, not str"),
    ("{not json", "cannot read it (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))"),
])
def test_an_image_json_of_another_shape_is_listed_as_unreadable_in_one_line(tmp_path, content, why):
    cache = tmp_path / "images"
    (cache / "pause").mkdir(parents=True)
    (cache / "pause" / "image.json").write_text(content)
    proc = run("images", "list", env={IMAGES: str(cache)})
    assert proc.returncode == 1
    assert clean(proc) == [f"tfjobgen images: {cache / 'pause' / 'image.json'}: {why}; `tfjobgen images build pause` "
                           "replaces it"]
    [row] = [line.split() for line in proc.stdout.splitlines() if line.startswith("pause ")]
    assert row[-2] == "unreadable", proc.stdout


def test_without_git_images_list_says_so_in_one_line(tmp_path):
    bare = tmp_path / "bin"  # a PATH with nothing on it: no git (tfjobgen runs by its interpreter's full path)
    bare.mkdir()
    proc = run("images", "list", env={"PATH": str(bare), IMAGES: str(tmp_path / "images")})
    assert proc.returncode == 1
    assert clean(proc) == ["tfjobgen images: git is not installed: the images' inputs include the repository's HEAD "
                           "commit, which git reads (apt-get install --no-install-recommends git)"]
    tools = run("cluster", "tools", "--list", env={"PATH": str(bare), TOOLS: str(tmp_path / "tools")})
    assert clean(tools) == [] and "not built" in tools.stdout, "listing the programs needs no git"
    assert shutil.which("git"), "the suite's own machine has git"

"""The images' input digest (generator/tfjobgen/artifacts/images/recipe.py): the key a built image is found by.

Same inputs, same key; a changed input (constraints.txt, a source file) a new key, so `make images`
rebuilds rather than reuse an image made of something else. Caches and bytecode are not inputs.
"""

from __future__ import annotations

import shutil

import pytest

from conftest import REPO

from tfjobgen.artifacts.images import catalog, recipe, store
from tfjobgen.shared import contract


@pytest.fixture
def repo(tmp_path):
    """A copy of what the keys read: pyproject.toml, constraints.txt and a few sources (no git: the commit
    time is recipe.BASE_EPOCH)."""
    for name in ("pyproject.toml", "constraints.txt", "README.md"):
        shutil.copyfile(REPO / name, tmp_path / name)
    package = tmp_path / "generator" / "tfjobgen"
    package.mkdir(parents=True)
    shutil.copyfile(REPO / "generator" / "tfjobgen" / "__init__.py", package / "__init__.py")
    return tmp_path


def test_the_same_inputs_give_the_same_key_and_constraints_change_it(repo):
    first = recipe.deps_key(("runtime",), repo)
    assert recipe.deps_key(("runtime",), repo) == first
    assert recipe.runtime_key(contract.RUNTIME_COMMAND, repo) == recipe.runtime_key(contract.RUNTIME_COMMAND, repo)
    before = recipe.runtime_key(contract.RUNTIME_COMMAND, repo)
    path = repo / "constraints.txt"
    path.write_text(path.read_text().replace("tensorflow_cpu==2.21.0", "tensorflow_cpu==2.21.1"))
    assert recipe.deps_key(("runtime",), repo) != first
    assert recipe.runtime_key(contract.RUNTIME_COMMAND, repo) != before, "the runtime image stands on its deps"
    assert recipe.deps_key((), repo) != recipe.deps_key(("runtime",), repo), "the plugin's deps are not the runtime's"


def test_a_source_change_changes_the_runtime_key_and_bytecode_does_not(repo):
    before = recipe.runtime_key(contract.RUNTIME_COMMAND, repo)
    deps = recipe.deps_key(("runtime",), repo)
    cache = repo / "generator" / "tfjobgen" / "__pycache__"
    cache.mkdir()
    (cache / "__init__.cpython-311.pyc").write_bytes(b"\0" * 16)
    assert recipe.runtime_key(contract.RUNTIME_COMMAND, repo) == before
    (repo / "generator" / "tfjobgen" / "__init__.py").write_text('__version__ = "0.1.1"\n')
    assert recipe.runtime_key(contract.RUNTIME_COMMAND, repo) != before
    assert recipe.deps_key(("runtime",), repo) == deps, "a tfjobgen change keeps the dependency layer"
    assert recipe.runtime_key(("python3", "-m", "tfjobgen.runtime"), repo) != recipe.runtime_key(
        contract.RUNTIME_COMMAND, repo), "the entrypoint is an input"


def test_labels_keep_two_inputs_from_swapping():
    assert recipe.digest(("a", "xy"), ("b", "")) != recipe.digest(("a", "x"), ("b", "y"))


def test_names_and_the_message_of_an_image_not_built(tmp_path, monkeypatch):
    monkeypatch.setenv(store.CACHE_ENV, str(tmp_path))
    assert catalog.reference(catalog.PAUSE) == "registry.k8s.io/pause:3.10.1"
    assert catalog.reference(catalog.RUNTIME) == f"tfjobgen-runtime:{catalog.project_version()}"
    assert store.built(catalog.RUNTIME) is None
    with pytest.raises(store.ImageMissing, match="run `make images`"):
        store.require(catalog.RUNTIME)
    with pytest.raises(catalog.UnknownImage, match="tfjobgen-runtime"):
        store.built("tfjobgen-runtim")

"""Write argocd/plugin/Dockerfile and its .dockerignore from the recipe `make images` builds the plugin image from.

    .venv/bin/python docs/generate/plugin_dockerfile.py

generator/tfjobgen/artifacts/images/dockerfile.py says what goes in (recipe.py's data: the Debian suite and
its python3, constraints.txt's pins, tfjobgen's sources, plugin.yaml, user 999); tests/gitops/test_argocd.py
fails when the committed files differ from what this writes.
"""

from __future__ import annotations

from pathlib import Path

from tfjobgen.artifacts import programs
from tfjobgen.artifacts.images import dockerfile

REPO = Path(__file__).resolve().parents[2]


def main() -> None:
    folder = REPO / "argocd" / "plugin"
    (folder / "Dockerfile").write_text(dockerfile.plugin(programs.family_of("argocd").version))
    (folder / "Dockerfile.dockerignore").write_text(dockerfile.dockerignore())


if __name__ == "__main__":
    main()

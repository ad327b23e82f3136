"""Where tfjobgen's files that are not Python are: the one lookup for every install.

    find("schemas")      the JSON Schemas
    find("plugins")      the kustomize plugin home (KUSTOMIZE_PLUGIN_HOME)
    find("cluster-tools")  the recipes of the local cluster's Go programs
    find("docs/priority-classes.yaml")  the PriorityClasses `cluster up` creates for a profile that names them

An installed wheel carries them inside the package (pyproject.toml's force-include copies them
from the repository root to tfjobgen/<name>); a checkout, or an editable install of one, has them
at the repository root, two folders above the package (generator/tfjobgen). The package's own copy
wins, so a wheel never reads the folders of whatever repository it happens to run in.

The bottom layer (shared/): nothing here imports tfjobgen, and only os, because the KRM function's
cold start reads the schemas through it (pathlib costs a few milliseconds there).
"""

from __future__ import annotations

import os

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tfjobgen/, above shared/
CHECKOUT = os.path.dirname(os.path.dirname(PACKAGE))  # the repository of generator/tfjobgen


def find(name: str) -> str:
    """The folder or file `name` (a path relative to the repository root): the package's copy, else the checkout's."""
    packaged = os.path.join(PACKAGE, name)
    return packaged if os.path.exists(packaged) else os.path.join(CHECKOUT, name)


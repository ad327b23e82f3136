"""Where tfjobgen keeps what it builds once per machine: ~/.cache/tfjobgen/<what>, outside every clone.

`XDG_CACHE_HOME` moves the base, as for any program; each cache also has a variable of its own
(TFJOBGEN_TOOLS_CACHE, TFJOBGEN_IMAGES_CACHE, ...) that names its folder outright.
"""

from __future__ import annotations

import os
from pathlib import Path


def folder(what: str, variable: str) -> Path:
    """The cache `what`: $variable when set, else $XDG_CACHE_HOME (or ~/.cache)/tfjobgen/<what>."""
    configured = os.environ.get(variable)
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tfjobgen" / what

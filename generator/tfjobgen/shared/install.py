"""How to install tfjobgen with an optional extra: the one sentence every message that needs one says.

There is no tfjobgen on PyPI (pip finds nothing by that name, or somebody else's package): an extra comes
with the wheel `make dist` builds or with a pinned tag of the organisation's fork, as README's "Install" says,
and a checkout's `make venv` installs the runtime, test and cluster extras. The bottom layer (shared/): it
imports nothing.
"""

from __future__ import annotations


def extra(name: str) -> str:
    """`pip install ...` of tfjobgen with the extra `name` (runtime, cluster, plot), said as it really installs."""
    return (f"pip install \"tfjobgen[{name}] @ file:///<checkout>/dist/tfjobgen-<version>-py3-none-any.whl\" (the wheel "
            f"'make dist' builds) or \"tfjobgen[{name}] @ git+https://github.com/<org>/tfjobgen@<tag>\" (README, "
            "\"Install\"); in a checkout, 'make venv'")

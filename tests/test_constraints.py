"""constraints.txt is what the test environment really has.

`make venv` installs with `-c constraints.txt`; a package at another version means the
environment was built some other way, and the suite would test something CI did not.
"""

from __future__ import annotations

import re
from importlib import metadata

from conftest import REPO


def _pins() -> dict[str, str]:
    pins = {}
    for line in (REPO / "constraints.txt").read_text(encoding="utf-8").splitlines():
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)==(\S+)", line.strip())
        if match:
            pins[re.sub(r"[-_.]+", "-", match[1]).lower()] = match[2]
    return pins


def test_every_pin_names_one_version():
    pins = _pins()
    assert {"pyyaml", "jsonschema", "pytest"} <= pins.keys(), "the generator's and the tests' own packages are pinned"


def test_the_environment_has_the_pinned_versions():
    installed = {re.sub(r"[-_.]+", "-", d.metadata["Name"]).lower(): d.version for d in metadata.distributions()}
    drift = {name: (pinned, installed[name]) for name, pinned in _pins().items()
             if name in installed and installed[name] != pinned}
    assert not drift, ("installed versions differ from constraints.txt (pinned, installed): "
                       f"{drift}; rebuild the environment with `make venv` or refresh the pins with `make lock`")

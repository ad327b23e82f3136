"""Reading upstream CRDs' YAML: PyYAML's safe loader (libyaml's where there is one), with a lone `=` read as
the string it is.

YAML 1.1 tags a plain `=` `value`, which PyYAML cannot construct; Prometheus Operator's CRDs list `- =` in
their matchers' enums, and Go's YAML, the API server's, reads a string there.
"""

from __future__ import annotations

import yaml


class Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    pass


Loader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node))

"""tfjobgen writes YAML byte for byte as kustomize does, and reads it as go-yaml does.

`tfjobgen render` promises the same bytes as the kustomize path; these tests
feed awkward strings through the real kubectl kustomize and compare.
"""

from __future__ import annotations

import json

import yaml
from conftest import kubectl, load_yaml_stream  # noqa: F401 (kubectl skips when missing)

from tfjobgen.expand import emit
from tfjobgen.inputs import source
from tfjobgen.inputs.yamlstyle import Loader, needs_quotes

# Strings a YAML 1.1 or 1.2 reader may take for numbers, booleans, nulls, dates, or syntax.
AWKWARD = [
    "0", "00", "012", "08", "0x1F", "0o17", "0b101", "1_000", "1e3", "1E3", "1.5", ".5", "5.", "+1", "-1", "-.inf",
    ".inf", ".nan", "NaN", "inf", "1:20", "1:20:30", "190:20:30.15", "true", "True", "TRUE", "tRUE", "yes", "Yes",
    "y", "Y", "n", "N", "no", "on", "On", "off", "OFF", "null", "Null", "~", "", "2021-01-01", "2021-1-1",
    "2021-13-01", "2021-01-01T10:00:00Z", "2001-12-14 21:59:43.10 -5", "2021-01-01 10:00:00", "<<", "=", "._",
    "1.2.3", "0.0.0.0", "127.0.0.1:2222", "a:b", "a: b", "- x", "-x", "#x", "a #b", "@x", "`x", "!x", "%x", "&x",
    "*x", "|x", ">x", "'x", '"x', "?x", "? x", "x ", " a", "a\nb", "a\nb\n", "  a\nb", "\tx", "é", "日本",
    "[x]", "{x}", "x,y", "$(X)", "-", "---", "...", "0_1", "1__0", "_1", "+", "0b2", "0o8", "-012",
    '{"cluster":{"ps":["h:2222"]},"task":{"index":$(I),"type":"worker"}}',
    "x" * 100 + " " + "y" * 30, "word " * 30,
]
# Keys: go-yaml orders numeric-looking keys in a way that is not transitive; real keys never start with digits.
AWKWARD_KEYS = [s for s in AWKWARD if s and "\n" not in s and s != "<<" and not s.lstrip("+-")[:1].isdigit()]


def _objects() -> list[dict]:
    values = {f"k{i:03d}": text for i, text in enumerate(AWKWARD)}
    keys = {key: "v" for key in AWKWARD_KEYS}
    return [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "values", "namespace": "t"}, "data": values},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "keys", "namespace": "t"}, "data": keys},
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "t"},
         "spec": {"completions": 3, "flag": True, "empty": {}, "none": [], "nested": [[1, 2], {"a": None}]}},
    ]


def test_render_writes_the_bytes_kustomize_writes(tmp_path):
    """Our emitter and kustomize's re-emission of the same objects are identical."""
    objects = _objects()
    for i, obj in enumerate(objects):
        (tmp_path / f"o{i}.json").write_text(json.dumps(obj))
    (tmp_path / "kustomization.yaml").write_text(
        "resources:\n" + "".join(f"- o{i}.json\n" for i in range(len(objects))))
    import subprocess

    built = subprocess.run([kubectl(), "kustomize", str(tmp_path)], capture_output=True, text=True, check=True)
    ours = emit.to_yaml(emit.kustomize_order(objects))
    assert ours == built.stdout


def test_every_awkward_string_reads_back_unchanged():
    text = emit.to_yaml(_objects())
    assert load_yaml_stream(text)[0]["data"] == {f"k{i:03d}": s for i, s in enumerate(AWKWARD)}
    assert yaml.safe_load(emit.to_yaml([{"v": "yes"}]))["v"] == "yes"  # a YAML 1.1 reader too


def test_scalars_load_as_go_yaml_reads_them():
    """`yes`, `on` and `y` are text to kustomize (YAML 1.2); validate must agree with the function."""
    [doc] = source.parse_documents("a: yes\nb: on\nc: 0o17\nd: 012\ne: 1e3\nf: ~\ng: 2021-01-01\nh: True\n", "t")
    assert doc.data == {"a": "yes", "b": "on", "c": 15, "d": 10, "e": 1000.0, "f": None, "g": "2021-01-01", "h": True}


def test_quoting_rule_examples():
    assert needs_quotes("0") and needs_quotes("yes") and needs_quotes("1:20") and needs_quotes("2021-1-1")
    assert not needs_quotes("2021-13-01") and not needs_quotes("=") and not needs_quotes("a: b")
    assert list(yaml.load_all(emit.to_yaml([{"a": "0"}]), Loader=Loader)) == [{"a": "0"}]


def test_random_strings_are_written_as_kustomize_writes_them(tmp_path):
    """600 seeded random strings over YAML's awkward characters, through kubectl in one build."""
    import random
    import subprocess

    rng = random.Random(7)
    alphabet = list("aZ09 -_.:#'\"{}[],&*!|>%@`?~=+$()\\/\t\né€")
    values = {f"v{i:04d}": "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for i in range(600)}
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "random", "namespace": "t"}, "data": values}
    (tmp_path / "o.json").write_text(json.dumps(obj))
    (tmp_path / "kustomization.yaml").write_text("resources:\n- o.json\n")
    built = subprocess.run([kubectl(), "kustomize", str(tmp_path)], capture_output=True, text=True, check=True)
    assert emit.to_yaml([obj]) == built.stdout
    assert load_yaml_stream(built.stdout)[0]["data"] == values

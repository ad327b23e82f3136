"""Which URL schemes TensorFlow reads by itself, and which package adds the others.

One home for validate (a path the runtime image cannot read is a warning: concerns/storage.py), the runtime
(a path it cannot read fails the task naming the package: runtime/data.py) and run-local, which shows that line.
Measured on tensorflow-cpu 2.21.0 with `tf.io.gfile.get_registered_schemes()`: file (and a plain path), ram
and gs; s3, hdfs, viewfs, az and http are "not implemented" until tensorflow-io's filesystem plugins load
(docs/own-code.md). tfjobgen's runtime image holds TensorFlow alone.
"""

from __future__ import annotations

import re

TENSORFLOW_RELEASE = "2.21"  # what the runtime extra pins (pyproject.toml), and these schemes were measured on
BUILT_IN = ("file", "ram", "gs")
TENSORFLOW_IO = "tensorflow-io"
_ADDED_BY = {"s3": TENSORFLOW_IO, "hdfs": TENSORFLOW_IO, "viewfs": TENSORFLOW_IO, "har": TENSORFLOW_IO,
             "az": TENSORFLOW_IO, "http": TENSORFLOW_IO, "https": TENSORFLOW_IO}
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


def scheme(path: str) -> str:
    """`s3` for s3://bucket/x; "" for a plain path."""
    match = _SCHEME.match(path)
    return match[1].lower() if match else ""


def built_in(path_scheme: str) -> bool:
    return not path_scheme or path_scheme in BUILT_IN


def package(path_scheme: str) -> str | None:
    """The package that registers the scheme; None when TensorFlow has it, or when nothing known does."""
    return None if built_in(path_scheme) else _ADDED_BY.get(path_scheme)


def missing(path_scheme: str, tensorflow_version: str) -> str:
    """Why a path of this scheme cannot be read, and what adds it: one sentence, for a person."""
    added_by = package(path_scheme)
    if added_by is None:
        return (f"neither TensorFlow {tensorflow_version} nor {TENSORFLOW_IO} has a {path_scheme}:// filesystem "
                f"(TensorFlow reads {', '.join(s + '://' for s in BUILT_IN)} and plain paths)")
    extra = " and a Hadoop client (spec.hadoop)" if path_scheme in ("hdfs", "viewfs", "har") else ""
    return (f"TensorFlow {tensorflow_version} has no {path_scheme}:// filesystem: {added_by} adds it "
            f"(a build matching this TensorFlow){extra}")

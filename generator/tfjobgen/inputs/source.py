"""Reading YAML input safely, with the line of every field.

Intents come from pull requests, so the reader is defensive: files are size
capped, anchors/aliases are refused (no "billion laughs"), nesting is bounded
before libyaml's recursive composer could overflow the C stack, and duplicate
keys are errors instead of silently keeping the last one.
"""

from __future__ import annotations

import errno
import functools
import os
import re
import stat
from dataclasses import dataclass, field
from typing import Any

import yaml

from .problems import InvalidInput, Problem, character_name, field_path, invisible_characters
from .yamlstyle import STR_TAG, Loader, plain_scalar_value

MAX_FILE_BYTES = 1 << 20  # an intent or profile is a few hundred bytes; 1 MiB is generous
MAX_STREAM_BYTES = 512 << 20  # a whole build handed to the KRM function
MAX_DEPTH = 64  # Kubernetes objects nest about 12 deep
_SAFE_FOR_LIBYAML = 2000  # libyaml's composer recurses per level; it crashed near 100k here

_PLAIN_TAGS = {f"tag:yaml.org,2002:{t}" for t in ("null", "bool", "int", "float")}


@dataclass(frozen=True)
class Document:
    """One YAML document of a file, with where each field was written."""

    data: Any
    source: str  # the path as the user gave it
    index: int  # position among the file's documents, from 0
    start_line: int
    lines: dict[str, int] = field(default_factory=dict, compare=False, repr=False)
    # The text of each plain scalar YAML read as a number, boolean or null, as written (`012`, `1_000`):
    # advice to quote a value must quote what the user wrote, not what YAML made of it.
    written: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    def line_of(self, path: str) -> int:
        """Line of `path`, or of its nearest written parent (a missing field points at its parent)."""
        while path:
            if path in self.lines:
                return self.lines[path]
            cut = max(path.rfind("."), path.rfind("["))
            path = path[:cut] if cut > 0 else ""
        return self.start_line


def read_text(path: str, limit: int = MAX_FILE_BYTES) -> str:
    """A file's text, refusing huge or non-UTF-8 files with a clear problem."""
    return decode(read_bytes(path, limit), path)


def read_bytes(path: str, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file of at most `limit` bytes: every file a command is given is read here.

    Anything else is refused in one line that says what the path is: a named pipe or a device would
    block or never end, a folder is not a file. The file is opened without waiting (O_NONBLOCK) and
    looked at again once open, so a path swapped for a pipe between the two looks cannot block either.
    """
    try:
        _refuse_special(os.stat(path).st_mode, path)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        raise InvalidInput([Problem(cannot_read(err), file=path)]) from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        _refuse_special(info.st_mode, path)
        if info.st_size > limit:
            raise InvalidInput([_too_big(info.st_size, limit, path)])
        try:
            raw = handle.read(limit + 1)
        except OSError as err:
            raise InvalidInput([Problem(cannot_read(err), file=path)]) from None
    if len(raw) > limit:  # it grew since fstat
        raise InvalidInput([_too_big(len(raw), limit, path)])
    return raw


def read_stream(stream, source: str, limit: int | None = None) -> str:
    """Standard input (or any binary stream), bounded as files are: at most `limit` bytes (default
    MAX_STREAM_BYTES, a whole build), UTF-8."""
    limit = MAX_STREAM_BYTES if limit is None else limit
    raw = stream.read(limit + 1)
    if len(raw) > limit:
        raise InvalidInput([Problem(f"input is larger than {limit >> 20} MiB", file=source)])
    return decode(raw, source)


_SPECIAL = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe"), (stat.S_ISCHR, "a character device"),
            (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def what_it_is(mode: int) -> str:
    """'a named pipe', 'a directory', ... for a file mode; '' for a regular file."""
    if stat.S_ISREG(mode):
        return ""
    return next((name for test, name in _SPECIAL if test(mode)), "not a regular file")


def _refuse_special(mode: int, path: str) -> None:
    what = what_it_is(mode)
    if what:
        right = "name the YAML file in it" if stat.S_ISDIR(mode) else "save the YAML in a file and name that"
        raise InvalidInput([Problem(f"cannot read: is {what}, not a regular file; tfjobgen reads regular files "
                                    f"only: {right}", file=path)])


def cannot_read(err: OSError) -> str:
    """Why an OSError stopped a read, in a line that says what would be right."""
    if err.errno == errno.ENOENT:
        return "cannot read: no such file: check the path"
    if err.errno in (errno.EACCES, errno.EPERM):
        return "cannot read: permission denied: make it readable for this user, or name a copy"
    if err.errno == errno.ENOTDIR:
        return "cannot read: a folder in its path is a file: check the path"
    if err.errno == errno.ELOOP:
        return "cannot read: too many levels of symbolic links: check the path"
    return f"cannot read: {(err.strerror or str(err)).lower()}"


def _too_big(size: int, limit: int, path: str) -> Problem:
    return Problem(f"file is {size / (1 << 20):.1f} MiB; inputs are limited to {limit >> 20} MiB", file=path)


def decode(raw: bytes, source: str) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise InvalidInput([Problem("not UTF-8 text", file=source, line=line)]) from None


def parse_documents(text: str, source: str) -> list[Document]:
    """Every non-empty document of `text`, each with its field-to-line map."""
    _refuse_deep_nesting(text, source)
    loader = Loader(text)
    documents: list[Document] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            builder = _Builder(source)
            data = builder.build(node, (), 0)
            documents.append(Document(data, source, len(documents), node.start_mark.line + 1, builder.lines,
                                      builder.written))
    except yaml.YAMLError as err:
        raise InvalidInput([_yaml_problem(err, text, source)]) from None
    finally:
        loader.dispose()
    return documents


def parse_file(path: str, source: str) -> list[Document]:
    """The documents of a file (`source`: its name in messages), parsed once while the file is unchanged.

    tfjobgen hydrate and diff read every job file several times (the inventory of jobs, each overlay's
    layout, validation); with a thousand jobs, parsing them once is seconds saved. Callers only read
    what they get: everything that changes a document works on a copy (schema.with_defaults).
    """
    try:
        info = os.stat(path)
    except OSError:
        return parse_documents(read_text(path), source)  # read_text says why it cannot be read
    return list(_parsed(path, source, info.st_mtime_ns, info.st_size))


@functools.lru_cache(maxsize=8192)
def _parsed(path: str, source: str, mtime_ns: int, size: int) -> tuple[Document, ...]:
    return tuple(parse_documents(read_text(path), source))


def parse_stream(text: str, source: str) -> list[Any]:
    """Fast path for machine-written YAML (a ResourceList from kpt or kustomize): no line map."""
    if len(text) > MAX_STREAM_BYTES:
        raise InvalidInput([Problem(f"input is larger than {MAX_STREAM_BYTES >> 20} MiB", file=source)])
    _refuse_deep_nesting(text, source)
    try:
        documents = [d for d in yaml.load_all(text, Loader=Loader) if d is not None]
    except yaml.YAMLError as err:
        raise InvalidInput([_yaml_problem(err, text, source)]) from None
    _refuse_shared_nodes(documents, source)
    return documents


def _yaml_problem(err: yaml.YAMLError, text: str, source: str) -> Problem:
    """One located line for anything libyaml refuses."""
    if isinstance(err, yaml.MarkedYAMLError):
        return _syntax_problem(err, text, source)
    if isinstance(err, yaml.reader.ReaderError):  # a character YAML does not allow, such as a control code
        line = text[:max(err.position, 0)].count("\n") + 1
        if not isinstance(err.character, int):
            return Problem("YAML does not allow a character of this text", file=source, line=line)
        return Problem(f"YAML does not allow the character U+{err.character:04X} ({character_name(chr(err.character))})",
                       file=source, line=line)
    return Problem("YAML: " + " ".join(str(err).split()), file=source)


def _syntax_problem(err: yaml.MarkedYAMLError, text: str, source: str) -> Problem:
    mark = err.problem_mark or err.context_mark
    if err.problem and "maximum nesting depth" in err.problem:
        # libyaml 0.2.5's scanner (in PyYAML 6.0.3+ wheels) stops at 1000 levels, before our own
        # walk reaches MAX_DEPTH: say it in our words, whichever PyYAML is installed.
        return Problem(f"nested more than {MAX_DEPTH} levels deep", file=source, line=mark.line + 1 if mark else 0)
    what = " ".join(p for p in (err.context, err.problem) if p)
    lines = text.split("\n")
    number = mark.line if mark else 0  # 0-based; libyaml often marks the line after the one at fault
    line = lines[number] if number < len(lines) else ""
    if "\t" in line[:len(line) - len(line.lstrip())] or "tab character" in what:
        what = "a TAB indents this line; YAML indents with spaces only: replace the TAB with spaces"
    else:
        odd = next((n for n in (number, number - 1) if 0 <= n < len(lines) and
                    invisible_characters(lines[n].replace("\t", ""))), None)
        if odd is not None:  # a no-break space where a space was meant, say
            number = odd
            held = ", ".join(f"U+{ord(c):04X} {character_name(c)}"
                             for c in invisible_characters(lines[odd].replace("\t", "")))
            what += f": this line holds {held}, which looks like a space or like nothing and is not one to YAML: " \
                    "type a plain space there, or delete it"
    return Problem(f"YAML syntax: {what}", file=source, line=number + 1 if mark else 0)


def _refuse_deep_nesting(text: str, source: str) -> None:
    """Bound the nesting depth before libyaml composes (it recurses in C).

    Each nesting level costs a bracket or one more character of indentation,
    so a cheap count rules out almost every input; only suspicious ones are
    scanned event by event.
    """
    brackets = text.count("[") + text.count("{")
    deep_indent = re.search(r"^[ ?-]{%d}" % _SAFE_FOR_LIBYAML, text, re.MULTILINE)
    if brackets < _SAFE_FOR_LIBYAML and not deep_indent:
        return
    depth = 0
    try:
        for event in yaml.parse(text, Loader=Loader):
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    raise InvalidInput([Problem(
                        f"nested more than {MAX_DEPTH} levels deep", file=source, line=event.start_mark.line + 1)])
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
    except yaml.YAMLError as err:
        raise InvalidInput([_yaml_problem(err, text, source)]) from None


def _refuse_shared_nodes(documents: list[Any], source: str) -> None:
    """Anchors/aliases become shared objects; refuse them (and bound depth) in one walk."""
    seen: set[int] = set()
    stack = [(doc, 1) for doc in documents]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if id(value) in seen:
                raise InvalidInput([Problem("YAML anchors and aliases are not allowed", file=source)])
            if depth > MAX_DEPTH:
                raise InvalidInput([Problem(f"nested more than {MAX_DEPTH} levels deep", file=source)])
            seen.add(id(value))
            children = value.values() if isinstance(value, dict) else value
            stack.extend((child, depth + 1) for child in children)


class _Builder:
    """Turns a composed node tree into plain data, recording each field's line."""

    def __init__(self, source: str):
        self.source = source
        self.lines: dict[str, int] = {}
        self.written: dict[str, str] = {}
        self.visited: set[int] = set()

    def fail(self, message: str, node: yaml.Node, path: tuple, line: int = 0) -> InvalidInput:
        return InvalidInput([Problem(message, field=field_path(*path), file=self.source,
                                     line=line or node.start_mark.line + 1)])

    def build(self, node: yaml.Node, path: tuple, depth: int) -> Any:
        if id(node) in self.visited:
            # An alias resolves to its anchor's node, whose line is the anchor's: point at the nearest field instead.
            parents = (field_path(*path[:n]) for n in range(len(path), 0, -1))
            line = next((self.lines[p] for p in parents if p in self.lines), 0)
            raise self.fail("YAML anchors and aliases are not allowed; write the value out", node, path, line)
        self.visited.add(id(node))
        if depth > MAX_DEPTH:
            raise self.fail(f"nested more than {MAX_DEPTH} levels deep", node, path)
        if path:
            self.lines.setdefault(field_path(*path), node.start_mark.line + 1)
        if isinstance(node, yaml.ScalarNode):
            return self.scalar(node, path)
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, path + (i,), depth + 1) for i, item in enumerate(node.value)]
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise self.fail("keys must be plain text", key_node, path)
            key = key_node.value
            if key in result:
                raise self.fail(f"duplicate key '{key}' (the earlier one would be silently lost)",
                                key_node, path + (key,))
            self.lines[field_path(*path, key)] = key_node.start_mark.line + 1
            result[key] = self.build(value_node, path + (key,), depth + 1)
        return result

    def scalar(self, node: yaml.ScalarNode, path: tuple) -> Any:
        if node.tag == STR_TAG:
            return node.value
        if node.tag in _PLAIN_TAGS:
            value = plain_scalar_value(node.value)
            if not isinstance(value, str):
                self.written[field_path(*path)] = node.value
                return value
        raise self.fail(f"unsupported YAML tag {node.tag}", node, path)

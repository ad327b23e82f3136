"""What goes wrong with an input, said so a person can fix it.

Every check in tfjobgen returns Problems instead of raising: the CLI prints
them as `file:line: field: message`, the KRM function turns them into
`results`. A Problem names the field in the same dotted form both use
(`spec.roles.worker.cpu`, `spec.env[2].name`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

ERROR = "error"
WARNING = "warning"


_NAMES = {"\ufeff": "BYTE ORDER MARK", "\t": "TAB", "\x00": "NULL"}


def _invisible(char: str) -> bool:
    """A character a terminal shows as nothing, or as a plain space: controls, format characters (zero-width
    spaces, joiners, the byte-order mark) and every space but U+0020."""
    import unicodedata  # only for text that is not plain printable ASCII

    return char != " " and unicodedata.category(char) in ("Cc", "Cf", "Zs", "Zl", "Zp", "Co", "Cn")


def character_name(char: str) -> str:
    """A character's Unicode name, as messages give it (TAB, NULL, BYTE ORDER MARK for the ones whose own
    names say less)."""
    import unicodedata

    return _NAMES.get(char) or unicodedata.name(char, "a control character")


def invisible_characters(text: str) -> list[str]:
    """The distinct invisible characters of `text`, in order."""
    if text.isascii() and text.isprintable():
        return []
    return list(dict.fromkeys(c for c in text if _invisible(c)))


# Letters of other scripts that look like a Latin letter (Unicode's confusables.txt, its common Cyrillic and Greek
# entries): a word of these alone reads as a Latin word ("асе"), though no Kubernetes name accepts it.
_LOOKALIKES = dict(zip(
    "аеорсухіјѕԁһӏԛԝкАВЕКМНОРСТХІЈЅУαονριυχκΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
    "aeopcyxijsdhlqwkABEKMHOPCTXIJSYaovpiuxkABEZHIKMNOPTYX"))
_WORD = re.compile(r"[\w.-]+")


def _script(char: str) -> str:
    """A letter's script, as the first word of its Unicode name says it (LATIN, CYRILLIC, GREEK, ...)."""
    import unicodedata

    return unicodedata.name(char, "").partition(" ")[0]


def confusable_characters(text: str) -> list[str]:
    """The distinct letters of `text`, in order, that make a word read as Latin when it is not: a letter of
    another script in a word with Latin letters (mixed scripts, as in "w\\u0456de"), and a word made only of
    lookalikes of Latin letters (UTS #39's mixed-script and whole-script confusables)."""
    if text.isascii():
        return []
    found = []
    for word in _WORD.findall(text):
        others = [c for c in word if c.isalpha() and not c.isascii() and _script(c) != "LATIN"]
        if others and (any(c.isascii() and c.isalpha() for c in word) or all(c in _LOOKALIKES for c in others)):
            found += others
    return list(dict.fromkeys(found))


def _escaped(char: str) -> str:
    return {"\t": "\\t", "\n": "\\n", "\r": "\\r"}.get(char) or (
        f"\\u{ord(char):04x}" if ord(char) <= 0xFFFF else f"\\U{ord(char):08x}")


def visible(text: str) -> str:
    """`text` with each invisible character escaped (\\u200b, \\t) and named once at the end, so a message
    shows what is there: "ok\\u200b" (\\u200b is U+200B ZERO WIDTH SPACE, which cannot be seen); and so is each
    letter that passes for a Latin one (confusable_characters), with its script."""
    hidden, lookalike = invisible_characters(text), confusable_characters(text)
    if not hidden and not lookalike:
        return text
    shown = "".join(_escaped(c) if c in hidden or c in lookalike else c for c in text)
    said = []
    if hidden:
        said.append("; ".join(f"{_escaped(c)} is U+{ord(c):04X} {character_name(c)}" for c in hidden)
                    + ", which cannot be seen")
    for char in lookalike:
        script = _script(char).capitalize()
        looks = f"that looks like Latin '{_LOOKALIKES[char]}'" if char in _LOOKALIKES else "among Latin ones"
        said.append(f"{_escaped(char)} is U+{ord(char):04X} {character_name(char)}, a {script} letter {looks}")
    return f"{shown} ({'; '.join(said)})"


@dataclass(frozen=True)
class ResourceRef:
    """Which object a problem is about (the KRM `resourceRef`)."""

    api_version: str
    kind: str
    name: str
    namespace: str = ""

    def describe(self) -> str:
        """`Kind namespace/name` as far as they are known, for a problem of an object without a file."""
        name = f"{self.namespace}/{self.name}" if self.namespace and self.name else self.name
        return " ".join(p for p in (self.kind or "object", name) if p)


@dataclass(frozen=True)
class Problem:
    message: str
    field: str = ""  # dotted path inside the object, "" for the object as a whole
    severity: str = ERROR
    file: str = ""  # path as the user knows it, "" when unknown
    line: int = 0  # 1-based, 0 when unknown
    ref: ResourceRef | None = None

    @property
    def is_error(self) -> bool:
        return self.severity == ERROR

    def located(self, file: str, line: int, ref: ResourceRef | None = None) -> Problem:
        """The same problem, placed in a file (keeps what is already known)."""
        return replace(
            self,
            file=self.file or file,
            line=self.line or line,
            ref=self.ref or ref,
        )

    def format(self) -> str:
        """One line: `file:line: [warning: ]field: message`."""
        where = self.file or (self.ref.describe() if self.ref else "")
        if where and self.line:
            where = f"{where}:{self.line}"
        parts = [p for p in (where, "warning" if self.severity == WARNING else "", self.field) if p]
        return visible(": ".join(parts + [self.message]))


class InvalidInput(Exception):
    """Raised at an I/O edge when input cannot be used at all; carries the problems."""

    def __init__(self, problems: list[Problem]):
        super().__init__("\n".join(p.format() for p in problems))
        self.problems = problems


def field_path(*parts: str | int) -> str:
    """('spec', 'env', 2, 'name') -> 'spec.env[2].name'."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def distinct(problems: list[Problem]) -> list[Problem]:
    """Each problem once (the same problem may come from several builds of one source), in order."""
    seen, unique = set(), []
    for problem in problems:
        key = (problem.severity, problem.file, problem.line, problem.field, problem.message)
        if key not in seen:
            seen.add(key)
            unique.append(problem)
    return unique


def has_errors(problems: list[Problem]) -> bool:
    return any(p.is_error for p in problems)

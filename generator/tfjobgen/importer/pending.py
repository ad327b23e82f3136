"""The pod fields a TrainingJob cannot hold today, each read by one function.

Issue 32 adds per-role image and command to the schema (volumes, pull secrets, pod labels and
annotations, nodeSelector and tolerations are carried by podfields.py). Until a field is there, its
function reports the source's value as needing a decision, naming the field that is missing and the
closest one that exists. When the schema gains one, its function moves to the module that carries it.
"""

from __future__ import annotations

from .report import DECIDE, Row

RESTRICTED = "restricted Pod Security refuses it, and tfjobgen's pods are restricted"


def per_role(role: str, what: str, where: str, chosen_from: str) -> Row:
    """An image, command or args of one role that differs from the job-wide one chosen."""
    return Row(where, DECIDE, f"spec.roles.{role}.{what} (missing); closest spec.{what}",
               f"a TrainingJob has one {what} for every role yet; the {chosen_from}'s was taken")

"""The last step before Argo CD: refuse a build that would prune running training, then annotate it.

Both delivery modes end here: `tfjobgen build` (what the CMP plugin runs) and
`tfjobgen hydrate` call deliver() on the same build (hydrate.delivered), so Argo CD
gets the same objects either way.

Checks (checks.py; each an error, so Argo CD gets nothing rather than a set it would prune against):

- the tfjobgen function ran: no TrainingJob came out of kustomize unexpanded;
- the build is not empty while jobs/ defines jobs;
- no job of jobs/ is missing from the build (a job leaves a cluster when its file is deleted);
- a job stays in the namespace its file names, all its objects agree on it, and the
  fully qualified names in its ConfigMap (StarServer's seastar addresses) name it.

Checks of the sources, run before the build's own (a failed build still gets them):

- job names are unique in jobs/, across namespaces too (intents.duplicate_names);
- a patch of the overlay that targets a job by name finds it (patch_problems).

Annotations (rollout.py), on the objects that run pods (batch Jobs; TFJobs and JobSets later):

- `argocd.argoproj.io/sync-options: Force=true,Replace=true`: a Job's pod template is
  immutable, so Argo CD deletes and recreates a changed Job instead of failing to patch it;
- `tfjobgen.dev/revision`: a hash of everything the job's pods read at start (its Jobs and
  its cluster ConfigMap), so a change to any part of a job changes every one of its Jobs, and
  the whole job restarts together instead of old PS meeting new workers.
"""

from __future__ import annotations

from ..inputs.problems import Problem
from . import checks, rollout, tree


def deliver(objects: list[dict], jobs: list[tree.JobFile], overlay: str) -> tuple[list[dict], list[Problem]]:
    """The objects Argo CD should get (none when any check fails) and every problem found."""
    problems = checks.check(objects, jobs, overlay)
    if any(p.is_error for p in problems):
        return [], problems
    return rollout.annotate(objects), problems

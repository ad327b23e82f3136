"""The generator's path: intents in, Kubernetes objects out, as `kustomize build` runs it.

    pipeline  load -> validate -> plan -> render, in one place (start reading here)
    krm       the KRM function: a ResourceList on stdin, objects and results on stdout
    locate    where a problem is: the file and line of a field, found inside a kustomization
    emit      objects as YAML or JSON, in kustomize's order, the same bytes every time
    summary   rendered objects read back into what each job became (`tfjobgen summary`, diffs)

It imports backends/, addons/, concerns/, inputs/ and shared/; the commands (planner/,
local/, cluster/, gitops/, status/) build on it and it knows none of them
(docs/design.md, "Layers"). This face imports nothing: `tfjobgen krm` starts inside every
kustomize build, and its cold start is measured (docs/benchmarks.md).
"""

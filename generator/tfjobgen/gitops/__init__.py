"""GitOps delivery: what Argo CD gets from this repository, and how a pull request shows it.

    tree.py      the repository's layout: overlays, job files, a base commit read from git, the root
    clusters.py  which jobs go to which clusters, and what only the whole tree shows (a job no cluster
                 runs, a destination no job uses, one modelDir on two clusters); `validate` asks here too
    layout.py    what an overlay's kustomization does before tfjobgen, read without kustomize
    build.py     overlays built with the tree's own generator, with as little kustomize as they need
    deliver.py   the last step of both delivery modes: the checks, then the annotations:
    checks.py    fail-loud checks on a build (and on an overlay's patches of jobs),
    rollout.py   the Argo CD annotations that make a changed job restart as one
    object_meta.py  a generated object's kind, job and name, as the modules above read them
    hydrate.py   `tfjobgen hydrate`: the committed rendered/ tree (rendered-manifests mode)
    diff.py      `tfjobgen diff BASE_REF`: the semantic diff posted on pull requests, from
    sides.py     each side built (the base commit, the working tree),
    changes.py   two builds of a cluster compared job by job,
    markdown.py  and the report as the pull-request comment
    crds.py      validating custom resources against upstream CRD schemas
    policy.py    what Argo CD's AppProject would refuse (namespaces, kinds), found before the merge
    scaffold.py  `tfjobgen init DIR`: a team's new jobs repository, green on its first commit
    command.py   the commands (hydrate, build, diff, init), registered with the `tfjobgen` CLI

The Argo CD config management plugin (argocd/plugin/plugin.yaml) runs
`tfjobgen build overlays/<cluster> --namespace <team>`, and `tfjobgen hydrate`
runs the same build and the same deliver step (hydrate.delivered), so both modes
give Argo CD the same objects for the same commit. docs/gitops.md explains the design.
"""

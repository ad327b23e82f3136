"""GitOps delivery: what Argo CD gets from this repository, and how a pull request shows it.

    tree.py      the repository's layout: overlays, job files, a base commit read from git
    build.py     one overlay built with kustomize and the tree's own generator
    deliver.py   fail-loud checks on a build, then the Argo CD annotations (both delivery modes)
    hydrate.py   `tfjobgen hydrate`: the committed rendered/ tree (rendered-manifests mode)
    diff.py      `tfjobgen diff BASE_REF`: the semantic diff posted on pull requests
    crds.py      validating custom resources against upstream CRD schemas
    command.py   the two commands, registered with the `tfjobgen` CLI

The Argo CD config management plugin (argocd/plugin/plugin.yaml) runs
`kustomize build | python3 -m tfjobgen.gitops.deliver`, and `tfjobgen hydrate`
runs the same build and the same deliver step, so both modes give Argo CD the
same objects for the same commit. docs/gitops.md explains the design.
"""

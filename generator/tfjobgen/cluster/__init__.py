"""A local Kubernetes cluster shaped as a cluster profile, from programs built here, and what is
measured on it. `tfjobgen cluster ...` and `tfjobgen place` are its commands (docs/cluster.md).

    command       the CLI: `cluster tools|up|down|list` and `place`
    control       `cluster up` and `cluster down`: start every part in order, stop them all
    shape         what a profile's cluster is made of: nodes (labels, taints, capacity), PriorityClasses
    tools         the programs: versions (cluster-tools/versions.yaml), built from Go modules, cached
    home          the cluster's folder: every file it writes, and nothing anywhere else
    processes     its processes, marked so that `down` (or a failed `up`) finds every one
    api           the Kubernetes client behind a few functions (local clusters and live ones)
    plane/        the control plane: components' command lines, certificates (pki), the API
                  server's way to pods (podnet), KWOK's stages (kwok.yaml)
    nodes/        real nodes (`cluster up --real-nodes N`): kubelets, containerd, CNI, CoreDNS,
                  kube-router and a registry, each node in a network namespace of its own
    controllers/  the controllers beside it, one module each (JobSet, training-operator, Volcano,
                  the coscheduling scheduler, Kueue)
    argocd        Argo CD beside the cluster (`cluster up --argocd`)
    measure/      harnesses that run jobs on a fresh cluster and judge them: `tfjobgen place`
                  (place), the topology guarantees table (guarantees), controllers against the
                  backends' decode (conformance)

The tests, docs/ and benchmarks/ drive measure/; the commands above it (gitops/, status/) use
api and measure.place. This face imports nothing: `tfjobgen` registers its commands with
argparse alone.
"""

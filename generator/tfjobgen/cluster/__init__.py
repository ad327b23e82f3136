"""A local Kubernetes cluster shaped as a cluster profile, from the programs build/ makes: bringing it up and
down, and nothing else. `tfjobgen cluster tools|up|down|list` are its commands (docs/cluster.md).

    command       the CLI: `cluster tools|up|down|list`
    control       `cluster up` and `cluster down`: the ordered steps that start every part, and stopping them all
    context       the one context every step of `up` takes (its processes, ports and records), and `down` too
    shape         what a profile's cluster is made of: nodes (labels, taints, capacity), PriorityClasses
    home          the cluster's folder: every file it writes (ClusterFiles names them), its state.json
    processes     its processes, marked so that `down` (or a failed `up`) finds every one
    plane/        the control plane: components' command lines, certificates (pki), the address plan
                  (addresses), the API server's way to pods (podnet), KWOK's stages (kwok.yaml, stages)
    nodes/        real nodes (`cluster up --real-nodes N`): kubelets, containerd, CNI, CoreDNS,
                  kube-router and a registry, each node in a network namespace of its own
    controllers/  the controllers beside it, one module each (JobSet, training-operator, Volcano,
                  the coscheduling scheduler, Kueue), what they share (base), and Argo CD (argocd,
                  `cluster up --argocd`)

It talks to its API server through kube/ and runs what build/ made. `tfjobgen place` (place/) starts
clusters through it; harness/ measures on them. This face imports nothing: `tfjobgen` registers its
commands with argparse alone.
"""

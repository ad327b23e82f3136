"""Real nodes: Kubernetes nodes of a local cluster that run containers (`cluster up --real-nodes N`).

Rooms:
- network.py   the cluster's bridge, a network namespace per node, pod subnets and routes
- node.py      one node: containerd, the kubelet and kube-router, their files, cgroups and command lines
- host.py      what the nodes share: CoreDNS, the image registry, relays onto the bridge, identities and RBAC
- bring_up.py  checks the machine, then starts the host's part and each node over the cluster's context
               (context.py), recording what it makes
- teardown.py  removes what bring_up made, from its records, after success, failure or Ctrl-C

docs/nodes.md says what real nodes show and what they cannot.
"""

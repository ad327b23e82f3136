"""The local cluster's control plane: etcd, kube-apiserver, the controller manager, the scheduler,
and KWOK's nodes, each a local process on 127.0.0.1.

    components  each component's command line and configuration files
    release     which Kubernetes release the plane runs (--kubernetes), and the feature gates it turns on
    pki         one CA, and every certificate and key the cluster uses
    addresses   the address plan: the service range and the real nodes' pod range, which nodes/ shares
    podnet      the API server's way to pods (`python -m tfjobgen.cluster.plane.podnet`)
    kwok.yaml   KWOK's stages: how a node and a pod of no process move through their lives
    stages      the labels that move a KWOK pod or node on: fail or end a pod, lose a node

control.py starts them in order; nothing here imports nodes/ or controllers/, and this face imports nothing.
"""

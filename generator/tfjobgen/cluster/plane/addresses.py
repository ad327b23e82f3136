"""The cluster's address plan: the ranges that both the control plane and the real nodes are told of.

    SERVICE_CIDR     Services' cluster IPs: the API server allots them, kube-router on real nodes routes them
    REAL_POD_RANGE   every real node's pods (nodes/network.py gives node I 10.245.I.0/24); the pod network
                     (podnet.py) dials these addresses directly

KWOK's pods take 10.244.0.0/16 (kwok.yaml), outside both, so a real pod and a KWOK pod never share an address.
"""

SERVICE_CIDR = "10.96.0.0/16"
REAL_POD_RANGE = "10.245.0.0/16"

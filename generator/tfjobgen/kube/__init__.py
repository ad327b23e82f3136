"""Talking to a Kubernetes API server, local or live: the layer `tfjobgen status` reads production clusters
through, and the local cluster's code uses too.

    api   the Kubernetes client behind a few functions (Objects: get, list, apply, create, patch, watch),
          with the errors a person can act on

This face imports nothing.
"""

"""A local Kubernetes cluster shaped as a cluster profile, from programs built here.

    tools.py      which programs, which versions, where they are built and how
    ...
"""

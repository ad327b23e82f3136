"""Harnesses that put jobs on a fresh local cluster and judge what the real components did.

    place        `tfjobgen place`: where the real kube-scheduler puts jobs, in shuffled orders,
                 after a PS is evicted and a server lost; the pull-request comment's placement
    guarantees   what each topology guarantees: the table of docs/design.md
    conformance  what a real controller made of a job, held to its backend's `decode`
    gangs        each gang scheduler's spec.gang as the measurements set it

`tfjobgen place` and `tfjobgen diff` use place; the tests, docs/ and benchmarks/ use them all.
This face imports nothing.
"""

"""`tfjobgen place`: where the real kube-scheduler puts jobs, on fresh local clusters of their profile, in
shuffled creation orders, after a PS is evicted and a server lost (docs/cluster.md).

    command   the CLI: `place JOB... [--orders N] [--lose-node] ...`
    place     one order on one fresh cluster (run_order), how it settled, what each job's promises say of it;
              for_review, the placement `tfjobgen diff` puts in the pull-request comment; job_namespace

It starts clusters through cluster/ and judges them with concerns/promises.py. This face imports nothing.
"""

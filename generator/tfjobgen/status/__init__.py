"""`tfjobgen status`: what a job is doing, read from the cluster itself (docs/status.md).

One module per concern:

    read      the I/O at the edge: the job's objects, pods, events, gang objects and metrics from the
              API server (the Kubernetes client, imported by this command only), as a Snapshot
    derive    pure: Snapshot -> JobStatus (each task's phase and why, the job's state and cause,
              placement by promises.py, progress by metrics.py)
    metrics   pure: the runtime's Prometheus text -> step, steps/s, bytes per PS
    render    pure: JobStatus -> the table, JSON, the list of jobs
    watch     the table redrawn in place (rich) until the job ends or Ctrl-C
    command   the CLI's `status` (registered through cli.FEATURE_COMMANDS)
"""

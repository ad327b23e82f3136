"""`tfjobgen run-local`: a rendered job's pods as local processes, with real TensorFlow.

    command     the argparse subcommand (imports nothing heavy)
    run         from a job file to a summary: render, check, plan, run, report
    shape       how many tasks of each role run here (scale-down policy)
    tasks       pods -> local processes: addresses, env and endpoint map rewritten (pure)
    machine     this machine's CPUs and free memory
    processes   process groups, teardown, the leftover sweep
    wire        bytes between a run's tasks, per TCP connection (benchmarks and tests)
    supervisor  logs, events, restarts, fault injection, pass or fail
    progress    the status line
    summary     the final tables and the verdict
    scrape      a Prometheus scrape config for the run's metrics endpoints

docs/run-local.md describes it for users. This package never imports TensorFlow.
"""

"""`tfjobgen run-local`: a rendered job's pods as local processes, with real TensorFlow.

    command     the argparse subcommand (imports nothing heavy)
    run         from a job file to a summary: render, check, plan, run, report
    shape       how many tasks of each role run here (scale-down policy)
    tasks       pods -> local processes: addresses, env and endpoint map rewritten (pure)
    machine     this machine's CPUs and free memory
    ports       free ports on 127.0.0.1
    processes   process groups, teardown, the leftover sweep
    wire        bytes between a run's tasks, per TCP connection (benchmarks and tests)
    supervisor  logs, events, restarts, fault injection, pass or fail
    progress    the status line
    summary     the final tables and the verdict

docs/run-local.md describes it for users. This package never imports TensorFlow.
"""

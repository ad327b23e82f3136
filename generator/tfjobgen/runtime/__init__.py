"""tfjobgen's training runtime: what generated pods run when the intent has no spec.command.

    python -m tfjobgen.runtime        (the container command tfjobgen generates)

One task per process: the role and the cluster come from TF_CONFIG, everything
else from the TFJOBGEN_* variables the generator writes. docs/runtime.md
describes the behaviour, the log events and the control protocol.

Modules, one concern each:
    settings   env -> Task (pure)              events    log lines people and run-local read
    control    chief <-> tasks: who is up, when to exit (plain sockets)
    metrics    Prometheus metrics of one task
    watchdog   deadlines TensorFlow lacks
    errors     the failures the runtime knows, and their exit codes
    data       synthetic / TFRecord / CSV input  wide_deep   the reference wide & deep model
    optimizers sparse-aware updates            servers     TF servers, PS and worker lifetimes
    modeldir   where checkpoints are written from, placement.json
    hadoop     CLASSPATH from the Hadoop client, for hdfs:// paths
    tf2        chief (ParameterServerStrategy) and evaluator
    tf1        between-graph workers (MonitoredTrainingSession) and evaluator
    main       dispatch by role and api, errors -> one line and an exit code
    ending     how a task ends when something fails for good, so no task keeps its cores
    termination  SIGTERM ends the task at once (143), though it is PID 1 in its container
    summaries  TensorBoard summaries of the chief's progress

The partitioner rule, the reference model's variables and optimizer slots, and a
PS's share of them are plain data and math that `tfjobgen plan` uses too: they live
in shared/variable_placement/. Of the generator the runtime imports only contract.py.

Only data, wide_deep, optimizers, servers, modeldir, tf1 and tf2 import TensorFlow,
and only once the task knows it needs it: importing this package costs nothing.
"""

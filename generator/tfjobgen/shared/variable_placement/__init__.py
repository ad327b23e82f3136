"""Where a model's variables land on the parameter servers: TensorFlow-free math in plain Python.

    reference_model   the reference wide & deep model's variables in creation order, and each
                      optimizer's slots, as data (the runtime builds its model and slots from it)
    sharding          the partitioner rule (shards per variable, rows per shard) the runtime hands
                      TensorFlow, and the bytes per PS a run measured
    round_robin       a variable as a PS holds it (with its slots), and which PS each shard lands on
                      by TensorFlow's round-robin: the bytes per PS before a job runs

The runtime (runtime/: its partitioner, its model, a PS's bytes for its metrics) and
`tfjobgen plan` (planner/: bytes and traffic per PS) share these rules, so a change to
the model or to a rule changes what runs and what is predicted together. Both import
this package; it imports neither, nor anything else of tfjobgen.
"""

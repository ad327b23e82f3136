"""tfjobgen: TrainingJob intents to Kubernetes objects for TensorFlow parameter-server training.

A folder per layer (docs/design.md, "Layers"; tests/test_layers.py holds every import to it):

    cli, __main__   the edges: `tfjobgen ...` and `python -m tfjobgen`
    expand          the generator's path, the KRM function's: load -> validate -> plan -> render -> emit
    backends        a plan as the objects that run its pods (Jobs, a JobSet, a TFJob), and back
    addons          objects beside any backend's: monitoring, the dashboard, TensorBoard
    concerns        the generator's rules, one concern per file
    inputs          what people write, read safely and typed
    shared          what the generator, the runtime and run-local agree on
    kit             what the commands share and the KRM path never imports
    runtime         the training program the pods run
    planner, local, gitops, status, place, importer   the commands beside the generator
    cluster         a local cluster brought up and down: `tfjobgen cluster`
    artifacts       what a cluster runs, made before it runs: the Go programs and the container images
    kube            the Kubernetes client, for local clusters and live ones
    harness         what the tests, benchmarks, demos and docs generators share; no product module imports it
"""

__version__ = "0.1.0"

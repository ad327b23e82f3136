"""The generator's rules, one concern per file: each checks a job (and the profile) and fills its
part of the JobPlan. Pure functions: no file, no clock, no cluster.

    jobplan      JobPlan: a validated job as what each task needs, before any backend
    environment  a task's environment: TF_CONFIG, thread pools, StarServer, the runtime's settings
    container    the training container: image, command, ports, probes, security context
    storage      the filesystems a job's paths need, against what the runtime image reads
    qos          resources and the CPU manager: Guaranteed pods on whole CPUs, or shared
    topology     where pods land: colocated, isolated, spread (affinity, node pools)
    promises     what each topology promises, judged on real pods (by cluster/ and status/)
    gang         gang admission: the PodGroups, labels and checks of the profile's gang scheduler
    gang_schedulers  the gang table: what each gang scheduler can do, the one place that names them
    lifecycle    how tasks end: per-task budgets, permanent exit codes, the chief's success
    limits       what Linux and the API server refuse: argv and environment size, object size
    labels       labels on objects and pods, and the selectors built from them
    names        object and pod names, as each backend's controller makes them (Naming)
    metadata     the intent's labels and annotations carried to every object
    pods         the pod template every backend wraps
    podspec      what the intent adds to its pods: pull secrets, pod labels and annotations, nodeSelector
                 and tolerations beside the profile's placement
    volumes      the intent's volumes and mounts: restricted kinds, the API server's rules, tfjobgen's paths
    workload     the variables a job creates (spec.training, spec.model, a checkpoint)
    capacity     the nodes each topology needs, and what would stay Pending on a profile's nodes
    numa         NUMA nodes: what the kubelet's Topology Manager admits, and how many tasks a node holds

They import inputs/ and shared/ only (docs/design.md, "Layers"); backends/ and addons/
turn a JobPlan into objects. This face imports nothing, to keep the KRM cold start lean.
"""

"""What people write, read safely and typed: the bottom of the generator.

    source             YAML files and streams read with a bound, parsed with line numbers (Document)
    yamlstyle          the YAML dialect: YAML 1.2 scalars, safe loading, the emitter's style
    schema             the JSON Schemas (schemas/), their defaults, and their problems as field paths
    schema_fast        a dependency-free validator for the schemas' subset, on the KRM hot path
    intents            which documents are TrainingJob intents (Intent), where a repository keeps them,
                       and that their names are unique
    trainingjob        the TrainingJob intent as typed values (spec.model is the ML model's declaration)
    profile            the cluster profile (ClusterProfile) as typed values, and its own checks
    routing            which clusters a job runs on (spec.clusters, the profile's spec.namespaces)
    quantity           Kubernetes quantities (CPU, memory) as exact numbers
    problems           Problem: file, line, field and message, for the CLI and the KRM results
    kubernetes_syntax  Kubernetes' rules for label keys and values, DNS subdomains, tolerations and env's valueFrom
    image_reference    image references as the kubelet parses them (distribution's grammar)

Everything above reads inputs through here; nothing here imports anything above it
(docs/design.md, "Layers"). This face imports nothing, to keep the KRM cold start lean.
"""

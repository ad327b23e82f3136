"""`tfjobgen import`: TrainingJob intents from the TFJobs and Volcano Jobs teams run today.

    sources     what a document is (a TFJob of which version, a Volcano Job, a template), and its
                replicas by tfjobgen role, whatever API wrote them
    convert     a source into an intent, with a comment where a choice was made and a report row
                for every field it read: the order of the steps, and the metadata
    builder     the intent under construction, its comments, rows and where each field came from
    containers  each role's training container and pod: image, command (the job's and a role's own), env,
                resources, the rest
    policies    restartPolicy, runPolicy and Volcano's policies, and the defaults written out
    podfields   volumes and mounts, pull secrets, pod labels and annotations, nodeSelector, tolerations
    report      the rows, every source field covered, as a table or Markdown
    yamlout     the intent as YAML with its comments
    files       one file's text into jobs or located problems, each intent through tfjobgen's validation
    roundtrip   the rendered pods against the source's containers, and what tfjobgen adds
    check       every job of a run: colliding names, the round trip
    command     the CLI

Everything but `command` is pure: the same file gives the same intents, report and problems.
"""

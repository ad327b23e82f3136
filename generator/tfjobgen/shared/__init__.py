"""What the generator, the training runtime in the pods and run-local must agree on.

    contract             the names the generator writes into every pod and the runtime reads
                         (environment variables, ports, exit codes), and the few rules all three apply
    variable_placement/  where a model's variables land on the PS: the partitioner the runtime hands
                         TensorFlow, and the bytes per PS `tfjobgen plan` predicts from the same rules
    filesystems          the URL schemes TensorFlow reads by itself, and the package that adds the others
                         (validate's warning, the runtime's and run-local's failures name it)
    install              how to install tfjobgen with an extra (there is none on PyPI): the one sentence
                         every message that needs one says
    package_data         where the files that are not Python are (schemas, plugins, cluster-tools): inside an
                         installed wheel, else at the checkout's root

The bottom layer (docs/design.md, "Layers"): the runtime imports it before TensorFlow, so
nothing here imports anything of tfjobgen outside this folder, and this face imports nothing.
"""

"""`tfjobgen plan`: what a job needs and what it will do to its PS, before it is launched.

    variables   the variables a job creates, from spec.training, spec.model or a checkpoint
    placement   which PS each variable (shard) lands on, by TensorFlow's rules: bytes per PS
    traffic     bytes per step between workers and PS, and across servers for each topology
    capacity    nodes each topology needs, colocated groups, what stays Pending, cluster share
    advice      what to change, each line naming the field
    report      all of it for one job: a terminal table, JSON, Markdown
    chart       bytes per PS before and after the advice, as a PNG (matplotlib)
    units       byte sizes and shares for people
    command     the CLI

Everything but `variables.from_checkpoint` (TensorFlow), `chart` (matplotlib)
and `command` is pure: the same intent and profile give the same report.
The generator imports only `variables.check` and `capacity.check` (tasks that would stay Pending
on the nodes a profile counts) from here.
"""

"""`tfjobgen plan`: what a job needs and what it will do to its PS, before it is launched.

    workload    the variables a job creates, from spec.training, spec.model or a checkpoint
    traffic     bytes per step between workers and PS, and across servers for each topology
    capacity    nodes each topology needs, colocated groups, what stays Pending, cluster share
    advice      what to change, each line naming the field
    report      all of it for one job: a terminal table, JSON, Markdown
    chart       bytes per PS before and after the advice, as a PNG (matplotlib)
    units       byte sizes and shares for people
    command     the CLI

Which PS each variable (shard) lands on, by TensorFlow's rules, and the reference
model's variables come from variable_placement/, which the runtime imports too.

Everything but `workload.from_checkpoint` (TensorFlow), `chart` (matplotlib)
and `command` is pure: the same intent and profile give the same report.
The generator imports only `workload.check` and `capacity.check` (tasks that would stay Pending
on the nodes a profile counts) from here.
"""

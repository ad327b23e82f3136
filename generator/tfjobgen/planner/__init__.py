"""`tfjobgen plan`: what a job needs and what it will do to its PS, before it is launched.

    traffic     bytes per step between workers and PS, and across servers for each topology
    advice      what to change, each line naming the field
    report      all of it for one job: a terminal table, JSON, Markdown
    chart       bytes per PS before and after the advice, as a PNG (matplotlib)
    units       byte sizes and shares for people
    command     the CLI

The variables a job creates (concerns/workload.py) and the nodes each topology needs
(concerns/capacity.py) are the generator's own checks too, so they live with the concerns
and this package imports them. Which PS each variable (shard) lands on, by TensorFlow's
rules, and the reference model's variables come from shared/variable_placement/, which the
runtime imports too.

Everything but `chart` (matplotlib) and `command` is pure: the same intent and profile give
the same report.
"""

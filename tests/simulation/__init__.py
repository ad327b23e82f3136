"""A model of the default kube-scheduler, and the placement studies run on it.

    objects.py    nodes, pods (from backends.pods_of), selectors, terms, PriorityClasses
    state.py      the cluster: bound pods and the counts the plugins read, kept current
    scheduler.py  queue, filters, scores, preemption, node loss
    scenarios.py  arrival in a random order, eviction, node loss, and the layout verdicts
    cases.py      the studies behind docs/design.md's placement table
    test_model.py the model against documented kube-scheduler behaviour
"""

"""Controllers a local cluster runs besides the control plane, one module each, and Argo CD.

Every controller's module has:

    NAME              what it is called in messages and logs
    PROGRAMS          the binaries it needs (cluster-tools/versions.yaml)
    wanted(profile)   whether a cluster of this profile runs it
    start(context)    install its CRDs, start it, register its webhooks, wait until it serves
    ASKED             (optional) the `cluster up` flag without which it does not start, whatever wanted() says

They run out of cluster, as local processes with the admin's kubeconfig; a webhook is served on
127.0.0.1 with a certificate of the cluster's CA and registered by URL. One that cannot be built
or started is left out: `cluster up` says so on stderr and starts the rest. Each takes the cluster's
one context (context.py), which records its processes and, after its NAME, its ports.

    base                what they share: installing objects, waiting until one serves, a controller-runtime
                        manager's settings and start; start_all, which starts MODULES in order
    jobset              the JobSet controller and its webhooks
    training_operator   Kubeflow's training-operator (TFJob), with or without a gang scheduler
    volcano             Volcano's scheduler (PodGroups, task-topology)
    scheduler_plugins   the coscheduling scheduler and its PodGroup controller
    kueue               Kueue, admitting by quota
    prometheus_operator the Prometheus Operator and the Prometheus it runs as a pod (`cluster up --monitoring`)
    kube_state_metrics  pods' phases and terminations as metrics, for the job's pod alerts (`--monitoring`)
    argocd              Argo CD beside the cluster (`cluster up --argocd`): started after the others, only
                        when asked, with start(context, source)
    plugin_sidecar      Argo CD's plugin server in the plugin image, under runc (`--argocd-plugin-image`)

This face imports nothing; it holds the registry of the controllers every `up` considers.
"""

# In the order they start: the gang schedulers' CRDs before the training-operator, which writes their
# PodGroups for TFJobs; Kueue once the kinds it admits (JobSet, TFJob) exist; then the Prometheus Operator
# (its CRDs) and kube-state-metrics (a ScrapeConfig).
MODULES = ("jobset", "volcano", "scheduler_plugins", "training_operator", "kueue", "prometheus_operator",
           "kube_state_metrics")

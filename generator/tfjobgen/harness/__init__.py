"""What the tests, benchmarks, demos and docs generators share, and no product module imports (tests/test_layers.py
holds that): harnesses that run jobs on real components and judge them, and the data they are measured on.

    guarantees    what each topology guarantees, measured with `tfjobgen place`: the tables of docs/schedulers.md
    conformance   what a real controller made of a job, held to its backend's `decode`
    gangs         each gang scheduler's spec.gang as the measurements set it
    pods          ending a KWOK pod (fail_pod, succeed_pod): KWOK runs no process
    argocd_loop   the GitOps loop's parts: a git repository to commit to, Argo CD and what it says of each commit
    sample        the tool's own sample repository (tests/fixtures/sample-repo), never the team's jobs/
    synthetic     a repository of many generated jobs, for scale tests and benchmarks
    tf_resolver   TensorFlow's own reading of a TF_CONFIG, the oracle every TF_CONFIG is held to
    act           this repository's GitHub workflows run under nektos/act, on a pull request of a local repository
    github_api    a loopback stand-in for GitHub's issue-comment endpoints, which act's runs post to

This face imports nothing.
"""

"""Which families of cluster-tools/versions.yaml a `tfjobgen cluster tools` run takes (go_build.chosen): nothing built."""

from __future__ import annotations

from tfjobgen import cli
from tfjobgen.artifacts import go_build, programs

FOUND = programs.families()


def _names(families) -> list[str]:
    return [f.name for f in families]


def test_make_cluster_tools_takes_every_family_but_the_releases_built_on_request():
    taken = _names(go_build.chosen(FOUND, []))
    assert {"kubernetes", "kubernetes-1.37", "jobset", "kueue"} <= set(taken)
    assert not {"kubernetes-1.30", "jobset-0.10"} & set(taken)


def test_on_request_takes_what_make_releases_named_by_hand_and_nothing_make_cluster_tools_builds():
    taken = _names(go_build.chosen(FOUND, [], on_request=True))
    assert sorted(taken) == ["jobset-0.10", "kubernetes-1.30"]
    assert not set(taken) & set(_names(go_build.chosen(FOUND, [])))


def test_named_families_alone_or_beside_those_on_request_in_versions_yaml_order():
    assert _names(go_build.chosen(FOUND, ["kwok", "etcd"])) == ["etcd", "kwok"]
    assert _names(go_build.chosen(FOUND, ["kubernetes-1.30"])) == ["kubernetes-1.30"]
    both = _names(go_build.chosen(FOUND, ["etcd"], on_request=True))
    assert both == [n for n in _names(FOUND) if n in ("etcd", "jobset-0.10", "kubernetes-1.30")]


def test_the_command_line_flag_reaches_the_choice(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(programs.CACHE_ENV, str(tmp_path))  # an empty cache: every family "not built"
    assert cli.main(["cluster", "tools", "--on-request", "--list"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()[1:] if line.split()
              and line.split()[0] in _names(FOUND)]
    assert sorted(listed) == ["jobset-0.10", "kubernetes-1.30"]


def _order(missing: list[programs.Family]) -> list[list[str]]:
    """The builds as build_all starts them, go_build.AT_ONCE at a time, each started family finishing in turn
    (the first started, first): which families run side by side."""
    building, done, rounds = [], set(), []
    while len(done) < len(missing):
        while len(building) < go_build.AT_ONCE:
            family = go_build.build_order(missing, set(building), done)
            if family is None:
                break
            building.append(family.name)
        rounds.append(sorted(building))
        done.add(building.pop(0))
    return rounds


def test_families_of_one_module_are_built_one_after_the_other_so_the_second_reuses_the_first_ones_packages():
    """The kubelet (k8s.io/kubernetes v1.34, edited) never compiles beside kubernetes, whose packages it shares in
    Go's build cache; other families fill the second place meanwhile (Kubernetes 1.37 too: another release)."""
    missing = go_build.chosen(FOUND, [])
    rounds = _order(missing)
    release = {f.name: (f.module, f.version) for f in missing}
    assert release["kubelet"] == release["kubernetes"] != release["kubernetes-1.37"]
    assert all(len({release[name] for name in pair}) == len(pair) for pair in rounds), rounds
    assert all(len(pair) == go_build.AT_ONCE for pair in rounds[:-1]), f"a build slot left idle: {rounds}"
    started = [name for pair in rounds for name in pair]
    assert started.index("kubelet") > started.index("kubernetes")

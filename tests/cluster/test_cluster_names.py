"""A cluster's name reaches the file system: `cluster down` removes the folder it names, recursively. Every
command that takes a name holds it to one check (cluster/home.py), which resolves only inside the clusters' home,
and `down` removes only a folder `up` made (its marker file). Proven here with names that try to escape, against
a real `up` and `down`.

Each test has a clusters' home of its own, with a victim folder beside it: a name that escaped would reach it.
The homes are short paths under the machine's temporary folder, since a cluster's sockets live in its folder
(108 bytes at most for a Unix socket's path).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from cluster_support import need_cluster_tools
from conftest import REPO, tfjobgen_command

from tfjobgen.cluster import control, home, processes

SEED = REPO / "overlays" / "seed-80c" / "cluster-profile.yaml"


class Place:
    """A clusters' home, and beside it a victim folder holding a file that nothing may remove."""

    def __init__(self, top: Path):
        self.top = top
        self.home = top / "clusters"
        self.home.mkdir()
        self.victim = top / "victim"
        self.victim.mkdir()
        (self.victim / "precious.txt").write_text("keep me\n")

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        env = {**os.environ, "PYTHONPATH": str(REPO / "generator"), home.HOME_ENV: str(self.home)}
        return subprocess.run(tfjobgen_command() + list(args), capture_output=True, text=True, cwd=self.top,
                              env=env, timeout=timeout, stdin=subprocess.DEVNULL)

    def victim_intact(self) -> bool:
        return (self.victim / "precious.txt").read_text() == "keep me\n"


@pytest.fixture
def place():
    top = Path(tempfile.mkdtemp(prefix="tfjg-names-", dir="/tmp"))
    try:
        yield Place(top)
    finally:
        # A cluster a failed test left running is stopped by its own folder's mark, then everything goes.
        for folder in top.glob("clusters/*"):
            if not folder.is_symlink():
                processes.stop_all(folder)
        shutil.rmtree(top)


def one_line(proc: subprocess.CompletedProcess) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    return lines[0]


ESCAPING = {
    "parent": "../victim",
    "grandparent": "../../" + "x",
    "absolute": None,  # the victim's absolute path, filled in by the test
    "empty": "",
    "dot": ".",
    "dot-dot": "..",
    "300-characters": "a" * 300,
    "slash-inside": "a/../../victim",
    "trailing-newline": "tfjobgen\n",
    "upper-case": "Tfjobgen",
}


@pytest.mark.parametrize("case", sorted(ESCAPING))
@pytest.mark.parametrize("command", ["down", "up"])
def test_a_name_that_is_not_a_plain_name_is_refused_in_one_line_and_nothing_is_removed(place, case, command):
    # A folder of a cluster in the home too: `down --name ""` once removed every cluster's folder.
    (place.home / "other").mkdir()
    (place.home / "other" / "kubeconfig").write_text("{}\n")
    name = str(place.victim) if ESCAPING[case] is None else ESCAPING[case]
    proc = place.run("cluster", command, "--name", name, *(["--nodes", "1"] if command == "up" else []))
    assert proc.returncode == 1, proc.stderr
    line = one_line(proc)
    assert line.startswith(f"tfjobgen cluster {command}: --name "), line
    assert "lowercase letters, digits and '-'" in line or "is empty" in line, line
    assert len(line) < 300, "the name is cut short, not printed whole"
    assert place.victim_intact() and (place.home / "other" / "kubeconfig").is_file()
    assert sorted(p.name for p in place.home.iterdir()) == ["other"], "nothing made for a refused name"


def test_a_nul_in_a_name_is_refused_by_the_same_check():
    # No command line can hold a NUL: the check is called as the commands call it.
    with pytest.raises(control.ClusterError, match=r"--name 'a\\x00b': use lowercase letters"):
        control.down("a\0b")
    with pytest.raises(home.NameRefused):
        home.folder("a\0b")


def test_a_symbolic_link_in_the_home_is_never_followed(place):
    (place.home / "link").symlink_to(place.victim)
    (place.victim / "state.json").write_text("{}\n")
    proc = place.run("cluster", "down", "--name", "link")
    assert proc.returncode == 1
    assert one_line(proc) == (f"tfjobgen cluster down: --name 'link': {place.home / 'link'} is a symbolic link "
                              f"(to {place.victim}); a cluster's folder is one `tfjobgen cluster up` made: "
                              "remove the link yourself")
    assert place.victim_intact() and (place.home / "link").is_symlink()
    listed = place.run("cluster", "list")
    assert listed.returncode == 1
    assert one_line(listed) == (f"tfjobgen cluster list: 'link' in {place.home}: {place.home / 'link'} is a symbolic "
                                f"link (to {place.victim}); a cluster's folder is one `tfjobgen cluster up` made: "
                                "remove the link yourself")
    assert listed.stdout == "no local clusters\n"


def test_down_removes_no_folder_up_did_not_make(place):
    made_by_hand = place.home / "handmade"
    made_by_hand.mkdir()
    (made_by_hand / "notes.txt").write_text("mine\n")
    proc = place.run("cluster", "down", "--name", "handmade")
    assert proc.returncode == 1
    assert one_line(proc) == (
        f"tfjobgen cluster down: {made_by_hand} was not made by `tfjobgen cluster up` (it has no "
        f"{home.MARKER_FILE}): nothing stopped, nothing removed; remove it yourself if it is yours to remove")
    assert (made_by_hand / "notes.txt").read_text() == "mine\n"


@pytest.mark.cluster  # `up` checks the programs are built before it looks at the folder
def test_up_takes_over_no_folder_it_did_not_make(place):
    made_by_hand = place.home / "handmade"
    made_by_hand.mkdir()
    (made_by_hand / "notes.txt").write_text("mine\n")
    again = place.run("cluster", "up", "--name", "handmade", "--nodes", "1")
    assert again.returncode == 1 and "was not made by `tfjobgen cluster up`" in one_line(again)
    assert (made_by_hand / "notes.txt").read_text() == "mine\n"


def test_list_lists_the_good_clusters_and_gives_one_line_for_a_state_it_cannot_read(place):
    for name in ("good", "newer"):
        folder = place.home / name
        folder.mkdir()
        (folder / home.MARKER_FILE).write_text("")
    state = {"name": "good", "profile": "", "profile_name": "seed-80c", "api_port": 1, "nodes": 2,
             "kubernetes": "v1.34.1"}
    (place.home / "good" / "state.json").write_text(json.dumps(state))
    (place.home / "newer" / "state.json").write_text(json.dumps({**state, "name": "newer", "gpus": 4}))
    proc = place.run("cluster", "list")
    assert proc.returncode == 1
    assert one_line(proc) == (f"tfjobgen cluster list: {place.home / 'newer' / 'state.json'}: unknown field 'gpus' "
                              "(written by another version of tfjobgen?); `tfjobgen cluster down --name newer` "
                              "stops it")
    rows = proc.stdout.splitlines()
    assert rows[0].split()[0] == "NAME" and [r.split()[0] for r in rows[2:]] == ["good"]  # under the rule
    assert "seed-80c" in rows[2]


def test_a_real_cluster_survives_names_that_escape_and_down_removes_only_its_own_folder(place):
    need_cluster_tools()
    up = place.run("cluster", "up", "--name", "real", "--nodes", "1", "--profile", str(SEED), "--quiet")
    assert up.returncode == 0, up.stderr
    folder = place.home / "real"
    assert (folder / home.MARKER_FILE).is_file(), "up marks the folder it made"
    running = processes.running(folder)
    assert running
    for name in ("", ".", "..", "../clusters", str(place.home), "real/..", "real/../real"):
        proc = place.run("cluster", "down", "--name", name)
        assert proc.returncode == 1 and one_line(proc).startswith("tfjobgen cluster down: --name "), (name, proc.stderr)
    assert processes.running(folder) == running and (folder / "state.json").is_file(), "nothing of it touched"
    listed = place.run("cluster", "list")
    assert listed.returncode == 0 and listed.stdout.splitlines()[2].split()[0] == "real", listed.stdout
    # Without its marker, not even its own folder is removed (nor its processes stopped)
    (folder / home.MARKER_FILE).rename(place.top / "marker")
    refused = place.run("cluster", "down", "--name", "real")
    assert refused.returncode == 1 and "was not made by `tfjobgen cluster up`" in one_line(refused)
    assert processes.running(folder) == running
    (place.top / "marker").rename(folder / home.MARKER_FILE)
    down = place.run("cluster", "down", "--name", "real")
    assert down.returncode == 0, down.stderr
    assert not folder.exists() and processes.running(folder) == []
    assert place.victim_intact() and list(place.home.iterdir()) == []


@pytest.mark.parametrize("flags, said", [
    (["--kubernetes", "1.29"], "--kubernetes 1.29: versions.yaml has no release 1.29 of kube-apiserver"),
    (["--real-nodes", "2", "--nodes", "1"], "--real-nodes 2: the main group has 1 node(s); pass --nodes 2"),
    (["--name", "../x"], "--name '../x': use lowercase letters"),
])
def test_before_anything_is_built_a_flags_mistake_is_said_not_hidden_behind_not_built(place, flags, said):
    # A cache with nothing in it: a machine that has not run `make cluster-tools` yet.
    proc = subprocess.run(tfjobgen_command() + ["cluster", "up", "--nodes", "1", *flags], capture_output=True,
                          text=True, cwd=place.top, timeout=120, stdin=subprocess.DEVNULL,
                          env={**os.environ, "PYTHONPATH": str(REPO / "generator"), home.HOME_ENV: str(place.home),
                               "TFJOBGEN_TOOLS_CACHE": str(place.top / "nothing-built")})
    assert proc.returncode == 1 and said in one_line(proc) and "not built" not in proc.stderr, proc.stderr
    assert list(place.home.iterdir()) == []


def test_a_clusters_home_that_is_a_file_is_one_line_for_every_command(place):
    shutil.rmtree(place.home)
    place.home.write_text("not a folder\n")
    expected = (f"the clusters' home {place.home} is not a folder: remove it, or point {home.HOME_ENV} at a folder")
    for args in (["up", "--name", "a", "--nodes", "1"], ["down", "--name", "a"], ["list"]):
        proc = place.run("cluster", *args)
        assert proc.returncode == 1 and one_line(proc) == f"tfjobgen cluster {args[0]}: {expected}", proc.stderr
    assert place.home.read_text() == "not a folder\n"

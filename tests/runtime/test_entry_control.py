"""The entrypoint (cluster-tools/entry, Go) and the runtime's control channel (runtime/control.py) over real
sockets: each side's chief serves the other side's tasks, and both chiefs say the same lines to the same
client (one transcript). Each test takes a few seconds at most; the entry's programs are `python -c` ones.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from conftest import need, uses

from tfjobgen.artifacts import programs
from tfjobgen.kit.owned import free_ports
from tfjobgen.runtime import control

JOB = "team"
CLUSTER = {"chief": ["chief:2222"], "ps": ["ps:2222"], "worker": ["worker:2222"]}


@uses("timeouts")
def _entry() -> Path:
    try:
        found = programs.program("entry")
    except (programs.ToolsMissing, KeyError) as err:
        found = None
        need("the entrypoint", None, str(err))
    return found


def _address() -> str:
    return f"127.0.0.1:{free_ports(1)[0]}"


def _start(role: str, address: str, program: str, **env: str) -> subprocess.Popen:
    """The entry as task role:0 of the job, running `python -c program`."""
    variables = {"PATH": os.environ["PATH"], "TFJOBGEN_JOB": JOB, "TFJOBGEN_API": "tf2",
                 "TFJOBGEN_CONTROL_ADDRESS": address, "TFJOBGEN_TASK_RETRIES": "3", "TFJOBGEN_TASK_FAILURES": "0",
                 "TF_CONFIG": json.dumps({"cluster": CLUSTER, "task": {"type": role, "index": 0}}), **env}
    return subprocess.Popen([str(_entry()), "--", sys.executable, "-c", program], env=variables,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _ended(process: subprocess.Popen, timeout: float = 15) -> tuple[int, str]:
    try:
        _, err = process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return process.returncode, err


WAIT_FOR_FILE = "import os, sys, time\nwhile not os.path.exists(%r): time.sleep(0.05)\nsys.exit(%d)\n"
SERVE = "import time\ntime.sleep(600)\n"  # a TF server: it serves until killed


def _link(address: str, name: str, limit: float = 20.0) -> control.ChiefLink:
    link = control.ChiefLink(address, JOB, name, absence_limit=limit)
    link.start_in_background()
    return link


def _go_chief(tmp_path: Path, code: int) -> tuple[str, subprocess.Popen, Path]:
    """The entry as the chief; its program exits `code` once the returned file exists."""
    address, release = _address(), tmp_path / "release"
    return address, _start("chief", address, WAIT_FOR_FILE % (str(release), code)), release


def _connect(address: str) -> socket.socket:
    deadline = time.monotonic() + 5
    while True:
        try:
            return socket.create_connection(control.split_address(address), timeout=5)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_the_go_chief_tells_python_tasks_done_once_its_program_succeeds(tmp_path):
    address, chief, release = _go_chief(tmp_path, 0)
    links = [_link(address, name) for name in ("ps:0", "worker:0")]
    time.sleep(control.HEARTBEAT + 0.5)  # registered and heartbeating: nobody ends yet
    assert not any(link.done.is_set() for link in links) and chief.poll() is None
    release.touch()
    code, said = _ended(chief)
    assert code == 0, said
    assert all(link.done.is_set() and link.failed is None for link in links)
    assert "told every task DONE" in said and "did not answer" not in said, said  # both said BYE


def test_a_task_whose_new_pod_comes_up_after_the_chiefs_program_succeeded_still_hears_done(tmp_path):
    """A PS replaced as training ends: its new pod comes 10 s or more later (the Job controller's backoff).
    A program of your own leaves no word in a model directory, so the chief's DONE is all it can get."""
    address, chief, release = _go_chief(tmp_path, 0)
    worker = _link(address, "worker:0")
    time.sleep(control.HEARTBEAT + 0.5)
    release.touch()
    assert worker.done.wait(10)
    time.sleep(15)  # past the runtime's own linger (tf2.LINGER, 10 s)
    assert chief.poll() is None, "the chief left while ps:0 had not said goodbye"
    replaced = _link(address, "ps:0")
    code, said = _ended(chief)
    assert code == 0 and "did not answer" not in said, said
    assert replaced.done.wait(5) and replaced.failed is None  # the link says BYE before it marks itself done


def test_the_go_chief_stops_python_tasks_when_its_program_fails_for_good(tmp_path):
    address, chief, release = _go_chief(tmp_path, control_code := 2)  # a permanent code
    link = _link(address, "ps:0")
    time.sleep(0.5)
    release.touch()
    code, said = _ended(chief, 30)
    assert code == control_code, said
    assert isinstance(link.failed, control.Aborted) and "chief:0 failed for good (exit 2)" in str(link.failed)


def test_the_go_chief_leaves_tasks_alone_when_its_program_may_do_better_in_a_new_pod(tmp_path):
    address, chief, release = _go_chief(tmp_path, 1)
    link = _link(address, "ps:0")
    time.sleep(0.5)
    release.touch()
    code, said = _ended(chief)
    assert code == 1 and "a new pod may do better" in said, said
    time.sleep(0.5)
    assert link.failed is None and not link.done.is_set()  # it waits for the chief's new pod


def test_the_go_chief_stops_everyone_when_a_python_task_fails_for_good(tmp_path):
    address, chief, release = _go_chief(tmp_path, 0)
    other = _link(address, "worker:0")
    time.sleep(2)  # registered with the chief (under load a connection can take this long), or it is told nothing
    assert control.tell_chief_failed(address, JOB, "ps:0", 4, "(exit 4) gone")
    code, said = _ended(chief, 30)
    assert code == 4, said
    assert other.stopped.wait(15), "the worker's link never ended"  # its reader may trail the chief's exit
    assert isinstance(other.failed, control.Aborted) and "ps:0 failed for good" in str(other.failed)


def test_a_go_task_stops_its_program_and_exits_0_on_the_python_chiefs_done(tmp_path):
    address = _address()
    chief = control.ChiefServer(address, JOB, ["ps:0", "worker:0"])
    chief.start()
    try:
        tasks = [_start(role, address, SERVE) for role in ("ps", "worker")]
        assert chief.wait_until_up(["ps:0", "worker:0"], timeout=10) == []
        started = time.monotonic()
        assert chief.finish(linger=10) == []  # both said BYE
        results = [_ended(task) for task in tasks]
        assert [code for code, _ in results] == [0, 0], results
        assert time.monotonic() - started < 5  # SIGTERM ends a sleeping Python at once: no grace period used
    finally:
        chief.close()


def test_a_go_task_exits_4_on_the_python_chiefs_abort(tmp_path):
    address = _address()
    chief = control.ChiefServer(address, JOB, ["ps:0"])
    chief.start()
    try:
        task = _start("ps", address, SERVE)
        assert chief.wait_until_up(["ps:0"], timeout=10) == []
        assert chief.abort("worker:0 failed for good (exit 2)", linger=10) == []
        code, said = _ended(task)
        assert code == 4 and "stopped by the chief: worker:0 failed for good (exit 2)" in said, said
    finally:
        chief.close()


def test_a_go_task_whose_program_fails_for_good_tells_the_python_chief(tmp_path):
    address, heard = _address(), []
    chief = control.ChiefServer(address, JOB, ["ps:0"], on_failed=lambda *args: heard.append(args))
    chief.start()
    try:
        task = _start("ps", address, "import sys, time\ntime.sleep(1)\nsys.exit(42)\n",
                      TFJOBGEN_PERMANENT_EXIT_CODES="42")
        code, said = _ended(task)
        assert code == 42, said
        deadline = time.monotonic() + 5
        while not heard and time.monotonic() < deadline:
            time.sleep(0.05)
        assert heard == [("ps:0", 42, "(exit 42)")]
    finally:
        chief.close()


def test_a_go_task_whose_program_finishes_says_finished_and_exits_0(tmp_path):
    address = _address()
    chief = control.ChiefServer(address, JOB, ["worker:0"])
    chief.start()
    try:
        task = _start("worker", address, "import time\ntime.sleep(1)\n")
        code, said = _ended(task)
        assert code == 0, said
        assert chief.wait_until_finished(["worker:0"], timeout=1) == [] and chief.tasks["worker:0"].finished
    finally:
        chief.close()


def test_a_go_task_gives_up_on_a_chief_gone_for_good_with_exit_3():
    task = _start("ps", _address(), SERVE, TFJOBGEN_CHIEF_ABSENCE_SECONDS="2")
    code, said = _ended(task)
    assert code == 3 and "unreachable" in said and "giving up" in said, said


def test_sigterm_reaches_the_program_and_its_code_is_the_entrys(tmp_path):
    address = _address()
    chief = control.ChiefServer(address, JOB, ["ps:0"])
    chief.start()
    try:
        ready = tmp_path / "ready"
        task = _start("ps", address, "import pathlib, signal, sys, time\n"
                                     "signal.signal(signal.SIGTERM, lambda *a: sys.exit(7))\n"
                                     f"pathlib.Path({str(ready)!r}).touch()\ntime.sleep(600)\n")
        assert chief.wait_until_up(["ps:0"], timeout=10) == []
        deadline = time.monotonic() + 10
        while not ready.exists() and time.monotonic() < deadline:  # its handler is in place
            time.sleep(0.05)
        task.send_signal(signal.SIGTERM)
        code, said = _ended(task)
        assert code == 7, said
    finally:
        chief.close()


# ---- one transcript ---------------------------------------------------------------------------

def _transcript(address: str, finish: threading.Event | None) -> list[str]:
    """What a raw client hears: bad hellos, then a registration that ends in DONE, BYE."""
    heard = []
    for hello in ("HELLO tfjobgen/0 team ps:0", f"HELLO {control.VERSION} other ps:0",
                  f"HELLO {control.VERSION} team evaluator:3"):
        with _connect(address) as sock:
            sock.sendall(hello.encode() + b"\n")
            heard.append(sock.makefile().readline().strip())
    with _connect(address) as sock:
        reader = sock.makefile()
        sock.sendall(f"HELLO {control.VERSION} team ps:0\n".encode())
        heard += [reader.readline().strip(), reader.readline().strip()]  # WELCOME, then WAIT
        heard.append(reader.readline().strip())  # the heartbeat's WAIT, HEARTBEAT s later
        finish.set()
        while (line := reader.readline().strip()) == "WAIT":
            pass
        heard.append(line)
        sock.sendall(b"BYE\n")
        heard.append(reader.readline())  # "": the chief closed the connection
    return heard


def test_both_chiefs_say_the_same_lines_to_the_same_client(tmp_path):
    address = _address()
    python_chief = control.ChiefServer(address, JOB, ["ps:0", "worker:0"])
    python_chief.start()
    finish = threading.Event()
    threading.Thread(target=lambda: finish.wait(30) and python_chief.finish(1.0), daemon=True).start()
    try:
        python_said = _transcript(address, finish)
    finally:
        python_chief.close()
    address, go_chief, release = _go_chief(tmp_path, 0)
    _link(address, "worker:0")  # says BYE to DONE, or the Go chief would linger for it (finishLinger)
    finish = threading.Event()
    threading.Thread(target=lambda: finish.wait(30) and release.touch(), daemon=True).start()
    go_said = _transcript(address, finish)
    assert _ended(go_chief)[0] == 0
    assert go_said == python_said
    assert python_said[3:] == ["WELCOME team", "WAIT", "WAIT", "DONE team", ""]
    assert python_said[0].startswith("REFUSE expected") and "other" in python_said[1]

"""The control channel over real sockets: registration, DONE, a restarting chief, refusals, giving up.

Each test takes at most a few seconds (the client retries every RETRY_INTERVAL = 1 s).
"""

from __future__ import annotations

import time

import pytest

from conftest import uses
from tfjobgen.local.ports import free_ports
from tfjobgen.runtime import control


@uses("timeouts")
def _address() -> str:
    return f"127.0.0.1:{free_ports(1)[0]}"


def _link(address, name, job="job", limit=20.0) -> control.ChiefLink:
    link = control.ChiefLink(address, job, name, absence_limit=limit)
    link.start_in_background()
    return link


def test_tasks_register_wait_and_exit_only_on_done():
    address = _address()
    links = [_link(address, name) for name in ("ps:0", "worker:0")]  # before the chief: they retry
    time.sleep(1.2)
    chief = control.ChiefServer(address, "job", ["ps:0", "worker:0", "evaluator:0"])
    chief.start()
    try:
        assert chief.wait_until_up(["ps:0", "worker:0"], timeout=5) == []
        assert chief.missing(["ps:0", "worker:0", "evaluator:0"]) == ["evaluator:0"]
        time.sleep(control.HEARTBEAT + 0.5)  # heartbeats alone never end a task
        assert not any(link.done.is_set() for link in links)
        assert chief.finish(linger=0.5) == ["evaluator:0"]  # the one that never came: no goodbye
        # DONE is sent to every task, not found at its next heartbeat (a backstop, not a timing test)
        assert all(link.done.wait(control.HEARTBEAT * 5) for link in links)
        assert all(link.failed is None for link in links)
    finally:
        chief.close()


def test_a_restarting_chief_is_waited_for_and_a_dropped_connection_is_not_done():
    address = _address()
    first = control.ChiefServer(address, "job", ["ps:0"])
    first.start()
    link = _link(address, "ps:0")
    assert first.wait_until_up(["ps:0"], timeout=5) == []
    first.close()  # the chief dies: its connections close without a DONE
    time.sleep(1.5)
    assert not link.done.is_set() and link.failed is None  # the task waits for the chief to come back
    second = control.ChiefServer(address, "job", ["ps:0"])
    second.start()
    try:
        assert second.wait_until_up(["ps:0"], timeout=5) == []  # it registers again, by itself
        assert second.finish(linger=5) == []
        assert link.done.wait(2)
    finally:
        second.close()


def test_a_task_of_another_job_is_refused_and_says_why():
    address = _address()
    chief = control.ChiefServer(address, "job", ["ps:0"])
    chief.start()
    try:
        link = control.ChiefLink(address, "other-job", "ps:0", absence_limit=10)
        with pytest.raises(control.Refused, match="chief of job job, which has no task ps:0 of job other-job"):
            link.run()
        with pytest.raises(control.Refused, match="no task worker:7"):
            control.ChiefLink(address, "job", "worker:7", absence_limit=10).run()
    finally:
        chief.close()


def test_a_chief_that_never_comes_ends_the_wait_after_the_absence_limit():
    link = control.ChiefLink(_address(), "job", "ps:0", absence_limit=1.5)
    with pytest.raises(control.ChiefGone, match="unreachable for 2 s"):  # run() returns: the limit ends it
        link.run()
    assert not link.done.is_set()


def test_tf1_workers_say_finished_and_the_chief_waits_for_them():
    address = _address()
    chief = control.ChiefServer(address, "job", ["ps:0", "worker:1"])
    chief.start()
    try:
        ps, worker = _link(address, "ps:0"), _link(address, "worker:1")
        assert chief.wait_until_up(["ps:0", "worker:1"], timeout=5) == []
        assert chief.wait_until_finished(["worker:1"], timeout=0.3) == ["worker:1"]
        worker.finished.set()
        assert worker.told_finished.wait(control.HEARTBEAT + 1)
        assert chief.wait_until_finished(["worker:1"], timeout=5) == []
        assert chief.finish(linger=5) == []
        assert ps.done.wait(2)
    finally:
        chief.close()

"""The control channel over real sockets: registration, DONE, a restarting chief, refusals, giving up.

Each test takes at most a few seconds (the client retries every RETRY_INTERVAL = 1 s).
"""

from __future__ import annotations

import time

import pytest
from conftest import uses

from tfjobgen.kit.owned import free_ports
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


def test_a_task_failing_for_good_tells_the_chief_which_stops_every_task():
    import threading

    address = _address()
    failed = []
    chief = control.ChiefServer(address, "job", ["ps:0", "worker:0", "worker:1"],
                                on_failed=lambda name, code, reason: (failed.append((name, code, reason)),
                                                                      chief.abort(f"{name} failed for good", 5)))
    chief.start()
    try:
        ps = control.ChiefLink(address, "job", "ps:0", absence_limit=20)
        stopped = threading.Event()
        background = control.ChiefLink(address, "job", "worker:1", absence_limit=20,
                                       on_abort=lambda err: stopped.set())
        background.start_in_background()
        outcome = []
        threading.Thread(target=lambda: outcome.append(_raises(ps.run)), daemon=True).start()
        assert chief.wait_until_up(["ps:0", "worker:1"], timeout=5) == []
        started = time.monotonic()
        assert control.tell_chief_failed(address, "job", "worker:0", 2, "no such file: /data/*.csv"), \
            "the chief answers ABORT"
        assert failed == [("worker:0", 2, "no such file: /data/*.csv")]
        assert stopped.wait(3) and isinstance(background.failed, control.Aborted)
        deadline = time.monotonic() + 3
        while not outcome and time.monotonic() < deadline:
            time.sleep(0.05)
        assert outcome and isinstance(outcome[0], control.Aborted) and "worker:0 failed for good" in str(outcome[0])
        assert time.monotonic() - started < 3 and not ps.done.is_set()
    finally:
        chief.close()


def _raises(function):
    try:
        function()
    except Exception as err:  # noqa: BLE001 - the test inspects what was raised
        return err
    return None


def test_a_failure_after_training_finished_stops_nobody():
    address = _address()
    failed = []
    chief = control.ChiefServer(address, "job", ["ps:0", "worker:0"],
                                on_failed=lambda *args: failed.append(args))
    chief.start()
    try:
        ps = _link(address, "ps:0")
        assert chief.wait_until_up(["ps:0"], timeout=5) == []
        assert chief.finish(linger=0.5) == ["worker:0"] and ps.done.wait(2)
        assert not control.tell_chief_failed(address, "job", "worker:0", 2, "late", timeout=2)
        time.sleep(0.3)
        assert failed == [] and chief.aborting is None
    finally:
        chief.close()


def test_a_task_whose_chief_finished_before_it_came_back_is_done():
    """A new pod after a failure finds the chief gone; the chief's word in the model directory ends it with DONE."""
    link = control.ChiefLink(_address(), "job", "worker:0", absence_limit=30, finished=lambda: True)
    started = time.monotonic()
    link.run()
    assert link.done.is_set() and link.failed is None
    assert time.monotonic() - started < control.FINISHED_LOOK_INTERVAL + 3
    never = control.ChiefLink(_address(), "job", "worker:0", absence_limit=1.5, finished=lambda: False)
    with pytest.raises(control.ChiefGone):
        never.run()

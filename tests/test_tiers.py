"""The test tiers: each test is marked by the slow tools it reaches (tests/conftest.py).

`make test-fast` runs `pytest -m fast`; a test that reaches kubectl without being marked
would make that loop slow, or fail on a machine without kubectl.
"""

from __future__ import annotations

import conftest
import test_kustomize_e2e
import test_units
from gitops import gitops_support
from runtime import runtime_support


def test_a_test_is_marked_by_the_tools_its_helpers_run():
    reached = conftest._tools_reached
    assert reached(test_kustomize_e2e.test_without_the_plugin_the_build_fails_loudly, set()) == {"kubectl"}
    assert reached(test_kustomize_e2e.test_an_invalid_job_stops_the_whole_build_with_its_file_and_line,
                   set()) == {"kubectl"}, "through the module's own helper, then kustomize_build"
    assert reached(test_units.test_cpu_text_is_canonical, set()) == set()
    assert reached(gitops_support.commit_all, set()) == {"git"}
    assert reached(runtime_support.run_local, set()) == {"tensorflow"}


def test_fixtures_count_and_a_test_with_no_tool_is_fast(request):
    markers = {item.nodeid: {m.name for m in item.iter_markers()} for item in request.session.items}
    tools = set(conftest.TOOL_MARKERS)
    for nodeid, names in markers.items():
        assert (conftest.FAST_MARKER in names) != bool(names & tools), nodeid
    security = "tests/test_security.py::test_pods_mount_no_service_account_token_and_no_rbac_is_generated"
    if security in markers:  # only the overlay_objects fixture reaches kubectl
        assert "kubectl" in markers[security]
    assert conftest.FAST_MARKER in markers[request.node.nodeid]


def test_a_module_that_imports_tensorflow_is_not_collected_for_the_fast_tier():
    assert conftest._imports_tensorflow(conftest.TESTS / "runtime" / "test_model_and_data.py")
    assert not conftest._imports_tensorflow(conftest.TESTS / "runtime" / "test_training.py")

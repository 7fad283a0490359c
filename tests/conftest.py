import pytest

from evalnb.standin import StandIn


@pytest.fixture(scope="session")
def standin():
    """One real stand-in server on 127.0.0.1 for the whole session."""
    with StandIn(seed=0) as server:
        yield server


@pytest.fixture
def fresh_standin():
    """A stand-in of the test's own: repeated identical requests draw in turn, so on the shared
    server a test's draws depend on what other tests asked before; here only on its seed. For
    tests whose assertions follow the draws (a race's winner, a sequence's stopping look)."""
    with StandIn(seed=0) as server:
        yield server


@pytest.fixture(autouse=True)
def _trust_approvals_kept_apart(tmp_path_factory, monkeypatch):
    """Approvals of a suite's code (``--trust-code``) are recorded in a folder of the test's,
    never in the configuration of the user who runs the tests."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))

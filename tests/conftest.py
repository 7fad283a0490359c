import pytest

from evalnb.standin import StandIn


@pytest.fixture(scope="session")
def standin():
    """One real stand-in server on 127.0.0.1 for the whole session."""
    with StandIn(seed=0) as server:
        yield server

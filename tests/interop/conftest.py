"""The interop tests check evalnb's own translation of promptfoo suites (its fallback) with
promptfoo hidden; the modules that set ``ENGINE = True`` see the installed promptfoo."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _promptfoo_hidden_unless_asked(request, monkeypatch):
    if not getattr(request.module, "ENGINE", False):
        monkeypatch.setenv("EVALNB_PROMPTFOO", "off")

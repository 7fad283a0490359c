"""Kept for one release: the verdict store moved to :mod:`evalnb.store.verdicts`."""

from evalnb.store.verdicts import (
    VERDICTS,
    VerdictStore,
    compact_verdicts,
    latest_verdicts,
    save_verdict,
    verdict_history,
)

__all__ = [
    "VERDICTS",
    "VerdictStore",
    "compact_verdicts",
    "latest_verdicts",
    "save_verdict",
    "verdict_history",
]

"""The run stage: cases x variants x repeats -> samples written as they finish.

A run is a session taken through its phases (:mod:`evalnb.runner._session`): prepare, open
the run directory, execute, finish. Beside it live the manifest, the budget, price tables,
rescoring of a stored run (:func:`score`) and the shards a Dask cluster runs.
"""

from evalnb.runner._blocking import RunInterrupted
from evalnb.runner._rescore import ascore, score
from evalnb.runner._result import RunResult
from evalnb.runner._session import arun, plan, run

__all__ = ["RunInterrupted", "RunResult", "arun", "ascore", "plan", "run", "score"]

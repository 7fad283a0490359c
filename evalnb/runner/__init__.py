"""The run stage: cases x variants x repeats -> samples written as they finish.

The session (:mod:`evalnb.runner._session`) plans, opens the run directory, executes and
finishes; beside it live the manifest, the budget, price tables, rescoring of a stored run
(:func:`score`) and the shards a Dask cluster runs.
"""

from evalnb.runner._rescore import ascore, score
from evalnb.runner._session import RunInterrupted, RunResult, arun, plan, run

__all__ = ["RunInterrupted", "RunResult", "arun", "ascore", "plan", "run", "score"]

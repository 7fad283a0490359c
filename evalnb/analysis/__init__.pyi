# The public names of evalnb.analysis, one import a line: type checkers read these, and
# ``__init__.py`` loads each name lazily from the module named here (PEP 562,
# ``lazy_loader.attach_stub``), so that ``import evalnb.analysis`` loads no statistics
# package and reading a run loads only the modules it uses.
from ._agreement import agreement as agreement
from ._agreement import normalise_answer as normalise_answer
from ._calibrate import Calibration as Calibration
from ._calibrate import calibrate as calibrate
from ._compare import compare as compare
from ._compare import compare_cases as compare_cases
from ._cost import costs as costs
from ._cost import load_prices as load_prices
from ._flaky import flakiness as flakiness
from ._frames import Run as Run
from ._frames import load as load
from ._gate import GatePolicy as GatePolicy
from ._gate import format_gate as format_gate
from ._gate import gate as gate
from ._history import history as history
from ._latency import latency as latency
from ._plan import review_plan as review_plan
from ._power import power as power
from ._ppi import ppi_compare as ppi_compare
from ._ppi import ppi_rate as ppi_rate
from ._preference import preferences as preferences
from ._race import Best as Best
from ._race import race as race
from ._rates import proportion_interval as proportion_interval
from ._rates import rates as rates
from ._runs import compare_runs as compare_runs
from ._scores import scores as scores
from ._sequence import Decided as Decided
from ._settled import UntilSettled as UntilSettled
from ._stopped import confidence_sequence as confidence_sequence
from ._suite import suite_rate as suite_rate

__all__: list[str]

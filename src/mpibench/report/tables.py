"""The users' own report tables, one module each; this module re-exports them.

gain.py       IMB-set gain table: one row per benchmark at one size, both sides' time and
              MB/s, the gain (from a Comparison, so significance comes with it)
grids.py      application sweeps: rows one parameter, columns another, best cell marked;
              per variant side by side and a ratio grid against the baseline
linerate.py   peak bandwidth as % of a link's line rate and the size reaching half the peak
firstcall.py  first-call (initialisation) time apart from the steady state
scaling.py    speedup and parallel efficiency against the smallest np/nodes
cost.py       cost and energy per run and per unit of the figure of merit, and the saving
planning.py   launches needed to detect an effect
specs.py      values read from the runs' and campaigns' stored specs (line rate, price,
              power, nodes)

Every builder returns a Table (header, text rows, notes, plus machine-readable records);
render_table() prints it as terminal | markdown | csv | json. HTML uses the same model.
"""

from __future__ import annotations

from mpibench.report.cost import (  # noqa: F401
    _PER_HOUR,
    _fmt_saving,
    _median_elapsed,
    _money,
    _rate_per_hour,
    cheaper_side,
    cost_table,
)
from mpibench.report.data import load_cells  # noqa: F401 - re-exported
from mpibench.report.firstcall import (  # noqa: F401
    first_call_table,
)
from mpibench.report.gain import (  # noqa: F401
    gain_table,
)
from mpibench.report.grids import (  # noqa: F401
    Grid,
    _failed_positions,
    _fmt_param,
    _param_value,
    _shown_value,
    _sort_values,
    grid_tables,
    grids,
)
from mpibench.report.linerate import (  # noqa: F401
    _fmt_rate,
    line_rate_table,
    parse_rate,
)
from mpibench.report.planning import (  # noqa: F401
    parse_effect,
    plan_table,
)
from mpibench.report.render import (
    Table,  # noqa: F401 - re-exported
    render_table,  # noqa: F401 - re-exported
)
from mpibench.report.scaling import (  # noqa: F401
    _speedup,
    scaling_table,
)
from mpibench.report.specs import (  # noqa: F401
    _lookup,
    _spec_value,
    _spec_value_per_run,
)

"""The report's public API for notebooks and scripts: the names a caller outside mpibench needs,
each defined in the module that owns it (docs/compare-and-report.md, "Lower level").

    from mpibench.report.compare import compare_groups, render, select_groups
    sets = select_groups(store, campaign="c1")
    print(render(compare_groups(store, sets, "openmpi"), "terminal"))  # or markdown|csv|json

No module of mpibench imports this one (tests/report/test_report.py holds it): inside the
package, import from the owner (judge.py, model.py, compare_view.py, results.py, select.py,
one module per table, render.py). `mpibench.api` is the pandas side of the same pipeline.
"""

from __future__ import annotations

from mpibench.report.compare_view import comparison_records, render, to_json_obj
from mpibench.report.cost import cost_table
from mpibench.report.firstcall import first_call_table
from mpibench.report.gain import gain_table
from mpibench.report.grids import grid_tables, grids
from mpibench.report.judge import compare_groups
from mpibench.report.linerate import line_rate_table
from mpibench.report.model import Comparison, Delta, Row, Summary
from mpibench.report.planning import plan_table
from mpibench.report.render import FORMATS, Table, render_table
from mpibench.report.results import render_results, results_records
from mpibench.report.scaling import scaling_table
from mpibench.report.select import select_groups

__all__ = [
    "select_groups", "compare_groups", "render", "render_results", "results_records",
    "comparison_records", "to_json_obj", "Comparison", "Row", "Delta", "Summary",
    "gain_table", "grids", "grid_tables", "line_rate_table", "first_call_table",
    "scaling_table", "cost_table", "plan_table", "Table", "render_table", "FORMATS",
]

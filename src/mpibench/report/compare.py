"""Compare result sets: the names callers know, by job in their own modules.

    cmp = compare_groups(store, {"openmpi": [run ids], "mpich": [run ids]}, "openmpi")
    print(render(cmp, "terminal"))          # or markdown | csv | json

model.py    the comparison's model (Delta, Row, Summary, Comparison) and its number formats
judge.py    compare_groups: tests per cell under the comparability rule, Holm, geomean
            rows, the verdict
compare_view.py  the comparison as a Table and in every format (terminal, Markdown, CSV,
            JSON)
results.py  one result set's table
select.py   picking runs and grouping them into result sets

This module re-exports them, so `from mpibench.report.compare import ...` keeps working.
"""

from __future__ import annotations

from mpibench.report.compare_view import (  # noqa: F401
    _fmt_delta,
    _fmt_n,
    _fmt_pct,
    _fmt_side,
    _header_lines,
    _table_model,
    _unit_header,
    comparison_records,
    comparison_table,
    launch_legend,
    pct_of_base,
    render,
    render_csv,
    render_markdown,
    render_terminal,
    to_json_obj,
)
from mpibench.report.data import (  # noqa: F401 - re-exported for callers and tests
    bench_sort_key,
    fmt_size,
    load_cells,
    params_key,
    pool,
)
from mpibench.report.judge import (  # noqa: F401
    _aggregate,
    _pairs,
    _summaries,
    _untested_note,
    _verdict,
    _verdict_rows,
    compare_groups,
    transport_lines,
    transport_notes,
)
from mpibench.report.model import (  # noqa: F401
    Comparison,
    Delta,
    Row,
    Summary,
    _marks,
    _Notes,
    fmt_gain_ci,
    fmt_p,
    orient_gain,
)
from mpibench.report.render import (  # noqa: F401 - re-exported for callers and tests
    FORMATS,
    PLAIN_TABLE_ROWS,
    Table,
    clean_json,
    md_escape,
    md_table,
    plain_table,
)
from mpibench.report.results import (  # noqa: F401
    RESULT_COLUMNS,
    _launch_spread,
    _results_table,
    render_results,
    result_cells,
    results_records,
)
from mpibench.report.select import (  # noqa: F401
    _match_variants,
    _parse_when,
    select_groups,
)

__all__ = [
    "Comparison", "Row", "Delta", "Summary", "compare_groups", "render", "render_results",
    "render_terminal", "render_markdown", "render_csv", "to_json_obj", "comparison_records",
    "select_groups", "result_cells", "results_records", "orient_gain", "md_escape", "md_table",
    "FORMATS", "fmt_size", "bench_sort_key", "params_key", "pool",
]

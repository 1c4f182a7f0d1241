"""First call (initialisation) time apart from the steady state, and MPI_Init per set.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from mpibench.report.data import (
    cell_label,
    fmt_num,
    imported_clause,
    load_cells,
)
from mpibench.report.render import Table
from mpibench.store import Store


def first_call_table(store: Store, sets: Mapping[str, list[str]], *,
                     mean_std: bool = False, sizes: Iterable[int] | None = None,
                     cells: dict | None = None) -> Table:
    cells = cells if cells is not None else load_cells(store, sets)
    gs = list(sets)
    hdr = ["benchmark", "size"]
    for g in gs:
        hdr += [f"{g} first", f"{g} steady"] + ([f"{g} mean ± std"] if mean_std else []) + \
            [f"{g} first/steady"]
    imported = imported_clause(c for key, by in cells.items() if key.metric == "time"
                               for c in by.values())
    t = Table(title="First call vs steady state", header=hdr, rows=[], kind="first-call",
              caption="first = time of the first (initialisation) call, median over launches; "
                      "steady = geometric mean of the launch medians ± 95% CI from the "
                      "spread between launches (warm-up discarded; ± ? = one launch)"
                      + (f"; {imported}" if imported else "") + "; times in microseconds")
    size_set = set(sizes) if sizes is not None else None
    for key, by_set in cells.items():
        bench, size, _np = key.title, key.size, key.np
        if key.metric != "time" or (size_set is not None and size not in size_set):
            continue
        if not any(c.firsts for c in by_set.values()):
            continue
        line = [bench, cell_label(key)]
        rec: dict[str, Any] = {"benchmark": bench, "size": size, "np": _np}
        for g in gs:
            c = by_set.get(g)
            if c is None or c.status != "ok":
                line += [""] * (3 + mean_std)
                continue
            pct = c.ci_pct
            steady = fmt_num(c.value) + (f" ± {pct:.1f}%" if pct is not None else " ± ?")
            ratio = c.first / c.value if c.first and c.value else None
            line += [fmt_num(c.first), steady]
            if mean_std:
                line.append(f"{fmt_num(c.mean)} ± {fmt_num(c.std)}")
            line.append("" if ratio is None else f"{ratio:.1f}x")
            rec.update({f"{g}_first": c.first, f"{g}_firsts": c.firsts,
                        f"{g}_median": c.value, f"{g}_ci_low": c.ci_low,
                        f"{g}_ci_high": c.ci_high, f"{g}_mean": c.mean, f"{g}_std": c.std,
                        f"{g}_first_over_steady": ratio})
        t.rows.append(line)
        t.records.append(rec)
    # start-up before any benchmark: the core's MPI_Init time per launch
    from mpibench.store.report_queries import run_mpi_init

    inits = run_mpi_init(store, [r for ids in sets.values() for r in ids])
    for g in gs:
        vals = sorted(inits[r] for r in dict.fromkeys(sets[g]) if r in inits)
        if vals:
            med = float(np.median(vals))
            t.notes.append(f"{g}: MPI_Init {fmt_num(med / 1000)} ms (median of {len(vals)} "
                           f"launch(es), {fmt_num(vals[0] / 1000)}–{fmt_num(vals[-1] / 1000)})")
    return t

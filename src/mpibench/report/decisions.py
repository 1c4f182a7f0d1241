"""The report's "Launches where they decide" section: for a campaign run with repeats =
"decide" (campaign/auto_repeats.py, stats/sequential.py), per group point whether every
cell was decided (and by how many launches) or it stayed undecided after the maximum, and
the test that did not decide. Replayed from the stored launches, as `campaign status`."""

from __future__ import annotations

import json
from collections.abc import Mapping

from mpibench.report.render import Table
from mpibench.store import Store


def decisions_tables(store: Store, sets: Mapping[str, list[str]]) -> list[Table]:
    from mpibench.campaign import auto_repeats as ar
    from mpibench.store.report_queries import run_campaign_variant

    ids = [rid for rs in sets.values() for rid in rs]
    out = []
    for cid in sorted({c for c, _v in run_campaign_variant(store, ids).values()
                       if c is not None}):
        row = store.campaign(cid)
        spec = json.loads(row["spec_json"] or "{}") if row else {}
        if not ar.is_decide(spec):
            continue
        look, cells = ar.decisions(store, cid, spec)
        d = ar.summarize(spec, look, cells)
        r = d["rule"]
        margin = (f"equivalent within ±{100 * r['margin']:g}%" if r.get("margin")
                  else "(no equivalence margin)")
        t = Table(f"Launches where they decide: campaign {row['name']}",
                  ["group", "point", "launches", "state", "what did not decide"], [],
                  caption=(f'repeats = "decide": looks at {", ".join(map(str, d["looks"]))} '
                           f"launches per variant; a cell is decided when significant in the "
                           f"campaign's comparison table (the family and procedure the "
                           f"comparison prints: cells, geomean rows, verdicts) at the look's "
                           f"level, or {margin}; a cell decided before the last look prints "
                           f"that look's decision, its CI widened for sequential looks; "
                           f"{d['cells']} cells: {d['significant']} significant, "
                           f"{d['equivalent']} equivalent, {d['undecided']} undecided"),
                  kind="decisions", left_cols=5)
        for pt in d["points"]:
            where = ",".join(f"{k}={v}" for k, v in pt["point"].items()) or "-"
            t.rows.append([pt["group"], where, str(pt["launches"]), pt["state"],
                           pt["reason"] or "-"])
            t.records.append({k: v for k, v in pt.items()})
        out.append(t)
    return out


__all__ = ["decisions_tables"]

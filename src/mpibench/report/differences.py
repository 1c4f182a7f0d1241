"""What differs between the sets: their fingerprints side by side, only where they differ.

A regression between two system images, or one stack against another, is explained by what
changed under it: the MPI library and its build, UCX and libfabric versions, the settings
the library says it runs with (mpibench.libsettings: Open MPI's MCA dump with each value's
source, MPICH's debug summary, Intel MPI's I_MPI_*), the transport environment, MCA
parameters on the launcher line, kernel, CPU, node names and, where a fingerprint has them,
per-node facts. Each set is represented by its most common fingerprint (said in a note when
its launches had several). Reads the store only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from mpibench.report.render import Table
from mpibench.store import Store
from mpibench.store.report_queries import set_runs_info

NOT_SET = "-"


def _mca_from_argv(argv: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for i, a in enumerate(argv):
        if a in ("--mca", "-mca", "--gmca", "-gmca") and i + 2 < len(argv):
            out[argv[i + 1]] = argv[i + 2]
    return out


def flatten(fp: Mapping[str, Any]) -> dict[tuple[str, str], str]:
    """(what, setting) -> value of the parts of a fingerprint that explain a difference."""
    out: dict[tuple[str, str], str] = {}

    def put(what: str, key: str, value: Any) -> None:
        if value is None or value == "" or value == [] or value == {}:
            return
        out[(what, key)] = ", ".join(map(str, value)) if isinstance(value, list) else str(value)

    st = fp.get("stack") or {}
    if isinstance(st, Mapping):
        put("library", "stack", " ".join(str(x) for x in (st.get("kind"), st.get("version"))
                                          if x))
        lv = str(st.get("library_version") or "").strip().splitlines()
        put("library", "library version", lv[0] if lv else None)
    libs = fp.get("libraries") or {}
    if isinstance(libs, Mapping):
        lib = str(libs.get("library") or "").strip().splitlines()
        put("library", "loaded by the ranks", lib[0] if lib else None)
        put("UCX/libfabric", "UCX version", libs.get("ucx"))
        put("UCX/libfabric", "libfabric API", libs.get("libfabric_api"))
    put("library", "runtime library", fp.get("library_version_runtime"))
    for source, settings in sorted((fp.get("library_settings") or {}).items()):
        if isinstance(settings, Mapping):
            for k, v in settings.items():
                put(f"library settings ({source})", k, v)
    for k, v in (fp.get("transport_env") or {}).items():
        put("env", k, v)
    argv = fp.get("launcher_argv")
    if isinstance(argv, list):
        for k, v in _mca_from_argv([str(a) for a in argv]).items():
            put("MCA", k, v)
    m = fp.get("machine") or {}
    if isinstance(m, Mapping):
        put("kernel", "kernel", m.get("kernel"))
        put("CPU", "model", m.get("cpu_model"))
        put("CPU", "cores", m.get("cores"))
    put("nodes", "hosts", fp.get("hosts"))
    rph = fp.get("ranks_per_host")
    if isinstance(rph, Mapping) and rph:
        put("nodes", "ranks per host", [f"{h}:{n}" for h, n in rph.items()])
    put("nodes", "binding", fp.get("binding"))
    nodes = fp.get("nodes")          # per-node fingerprints, where the launch recorded them
    if isinstance(nodes, Mapping):
        for host, facts in sorted(nodes.items()):
            if isinstance(facts, Mapping):
                for k, v in sorted(facts.items()):
                    if not isinstance(v, Mapping):
                        put(f"node {host}", k, v)
    return out


def set_fingerprints(store: Store, sets: Mapping[str, list[str]]
                     ) -> dict[str, tuple[dict, int, int]]:
    """set -> (its most common fingerprint, launches with it, launches)."""
    out: dict[str, tuple[dict, int, int]] = {}
    for g, ids in sets.items():
        fids = Counter(fid for _, _, fid, *_ in set_runs_info(store, list(dict.fromkeys(ids)))
                       if fid is not None)
        if not fids:
            continue
        fid, n = fids.most_common(1)[0]
        out[g] = (store.fingerprint(fid) or {}, n, sum(fids.values()))
    return out


def differences_table(store: Store, sets: Mapping[str, list[str]],
                      baseline: str | None = None) -> Table:
    order = list(sets)
    if baseline in order:
        order.remove(baseline)
        order.insert(0, baseline)
    fps = set_fingerprints(store, sets)
    order = [g for g in order if g in fps]
    t = Table(title="What differs between the sets", kind="differences", rows=[], notes=[],
              header=["what", "setting"] + order,
              caption="each set's fingerprint (its most common one), only the entries that "
                      "differ between the sets; library settings are what the library itself "
                      "reported at start-up (Open MPI's MCA parameters with their source, "
                      f"MPICH's debug summary, Intel MPI's I_MPI_*); {NOT_SET} = not set or "
                      "not reported")
    if len(order) < 2:
        return t
    flat = {g: flatten(fps[g][0]) for g in order}
    keys = sorted({k for f in flat.values() for k in f}, key=_key_order)
    for k in keys:
        vals = [flat[g].get(k, NOT_SET) for g in order]
        if len(set(vals)) > 1:
            t.rows.append([k[0], k[1]] + vals)
            t.records.append({"what": k[0], "setting": k[1], **dict(zip(order, vals,
                                                                       strict=True))})
    for g in order:
        _, n, total = fps[g]
        if n < total:
            t.notes.append(f"{g}: its {total} launches had {total - n} with another "
                           f"fingerprint; the most common ({n} launches) is shown")
    if not t.rows:
        t.notes.append("the sets' fingerprints agree on every entry shown here")
    return t


_ORDER = ["library", "UCX/libfabric", "library settings", "env", "MCA", "kernel", "CPU",
          "nodes", "node"]


def _key_order(k: tuple[str, str]) -> tuple:
    what = k[0]
    rank = next((i for i, p in enumerate(_ORDER) if what.startswith(p)), len(_ORDER))
    return (rank, what, k[1])

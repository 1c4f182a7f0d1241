"""Synthetic stores for the compare/report tests: rows drawn from known distributions with a
seeded RNG, written through the Store API. Imported by test_compare*.py and test_report*.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from mpibench import stats
from mpibench.store import Store

IMB_SIZES = [0, 1, 8, 64, 1024, 65536, 1 << 20]


def core_record(bench: str, size: int, samples: np.ndarray, *, np_: int = 2,
                first: float | None = None, factor: float = 1.0, busbw: float | None = None,
                stop: str = "target") -> dict:
    s = stats.summarize(samples)
    med = s["median"]
    rec = {"benchmark": bench, "size": size, "np": np_, "samples": samples, **s,
           "first": first if first is not None else med * 20, "batch": 8, "warmup": 2,
           "stop_reason": stop}
    if size and med:
        rec["bandwidth_mbps"] = factor * size / med
        if busbw is not None:
            rec["busbw_mbps"] = busbw * size / med
    return rec


def add_variant_runs(store: Store, campaign_id: int, variant: str, *, repeats: int,
                     make: Callable[[int], list[dict]], fingerprint: dict | None = None,
                     label: str | None = None, grp: str = "core", params: dict | None = None,
                     spec: dict | None = None, seq0: int = 0, started0: float = 1.7e9,
                     fp_for_repeat: Callable[[int], dict] | None = None,
                     elapsed: float = 30.0) -> list[str]:
    ids = []
    for rep in range(repeats):
        pkey = "-".join(f"{k}{v}" for k, v in sorted((params or {}).items()))
        rid = f"c{campaign_id}-{variant}-{grp}-{pkey}-{rep}"
        fp = (fp_for_repeat(rep) if fp_for_repeat else fingerprint) or {"stack": variant}
        fid = store.add_fingerprint(fp)
        store.create_run(rid, campaign_id, variant, grp=grp, params=params, repeat=rep,
                         spec=spec or {}, label=label, seq=seq0 + rep, fingerprint_id=fid)
        store.add_results(rid, make(rep))
        store.set_run(rid, "done", started=started0 + rep, finished=started0 + rep + 1,
                      elapsed=elapsed)
        ids.append(rid)
    return ids


def build_two_stack_store(path: Path, *, seed: int = 1, n: int = 30, repeats: int = 3,
                          shift: float = 0.8, campaign: str = "synthetic",
                          benches=("PingPong", "Allreduce"), sizes=IMB_SIZES,
                          label_a: str | None = None, spec: dict | None = None
                          ) -> tuple[Store, dict[str, list[str]]]:
    """'base' lognormal latency model; 'fast' = shift x base time at every size (so fast is
    better by 1/shift), except PingPong at size 1 where both are identical."""
    rng = np.random.default_rng(seed)
    store = Store(path)
    cid = store.add_campaign(campaign, spec or {})

    def model(size: int) -> float:
        return 0.3 + size / 5000.0

    def make(scale_fn):
        def inner(rep: int) -> list[dict]:
            recs = []
            for b in benches:
                for s in sizes:
                    mu = model(s) * scale_fn(b, s) * (3 if b == "Allreduce" else 1)
                    x = rng.lognormal(np.log(mu), 0.03, n)
                    recs.append(core_record(b, s, x, busbw=1.0 if b == "Allreduce" else None))
            return recs
        return inner

    groups = {
        "base": add_variant_runs(store, cid, "base", repeats=repeats, label=label_a,
                                 make=make(lambda b, s: 1.0), spec=spec),
        "fast": add_variant_runs(store, cid, "fast", repeats=repeats, seq0=100,
                                 make=make(lambda b, s: 1.0 if (b, s) == ("PingPong", 1)
                                           else shift), spec=spec),
    }
    return store, groups


def build_app_store(path: Path, *, seed: int = 2, nodes=(1, 2, 4, 8), ncore=(1, 2, 4),
                    repeats: int = 4, spec: dict | None = None) -> tuple[Store, dict]:
    """Application sweep: metric ns/day (higher better), params nodes x NCORE, two variants.
    Variant 'x' is 10% faster than 'plain'; NCORE=2 is best at every node count; scaling
    efficiency 90% per doubling."""
    rng = np.random.default_rng(seed)
    store = Store(path)
    cid = store.add_campaign("vasp-sweep", spec or {"price_per_node_hour": 2.0,
                                                   "power_per_node_w": 400})
    groups: dict[str, list[str]] = {"plain": [], "x": []}
    for variant, speed in (("plain", 1.0), ("x", 1.1)):
        for nd in nodes:
            for nc in ncore:
                rate = speed * 10.0 * nd * (0.9 ** np.log2(nd)) * (1.2 if nc == 2 else 1.0)

                def make(rep, rate=rate, nd=nd):
                    v = float(rng.normal(rate, rate * 0.01))
                    wall = 3600.0 * 10.0 / v
                    return [
                        {"benchmark": "vasp", "size": None, "np": nd * 2, "metric": "ns/day",
                         "unit": "ns/day", "better": "higher", "statistic": "median", "n": 1,
                         "median": v, "samples": [v]},
                        {"benchmark": "vasp", "size": None, "np": nd * 2, "metric": "wall_time",
                         "unit": "s", "better": "lower", "statistic": "median", "n": 1,
                         "median": wall, "samples": [wall]},
                    ]
                groups[variant] += add_variant_runs(
                    store, cid, variant, repeats=repeats, grp="vasp",
                    params={"nodes": nd, "NCORE": nc}, make=make)
    return store, groups


def app_row(np_: int, v: float) -> dict:
    # shaped like parsers.fom.app_records: one value per launch, statistic 'value'
    return {"benchmark": "md", "size": None, "np": np_, "metric": "ns/day", "unit": "ns/day",
            "better": "higher", "statistic": "value", "n": 1, "median": v, "mean": v,
            "min": v, "max": v, "samples": [v]}


def sweep_store(path):
    """Campaign-style variant names: a sweep over np and nodes expands 'ompi' into
    'ompi[np=2,nodes=1]' ...; plus a transport sweep that must stay separate sets."""
    rng = np.random.default_rng(15)
    store = Store(path)
    cid = store.add_campaign("sweep")
    seq = iter(range(0, 1000, 10))
    for stack, speed in (("ompi", 1.0), ("mpich", 0.9)):
        for nodes in (1, 2):
            for np_ in (2, 4):
                name = f"{stack}[np={np_},nodes={nodes}]"
                add_variant_runs(
                    store, cid, name, repeats=3, grp="app", params={"steps": 100},
                    seq0=next(seq),
                    fingerprint={"stack": stack, "np": np_, "nodes": nodes},
                    spec={"variant": {"name": name, "stack": stack, "np": np_,
                                      "nodes": nodes}},
                    make=lambda rep, s=speed, n=np_ * nodes, np_=np_: [
                        app_row(np_, rng.normal(10 * n / s, 0.1))])
    for tls in ("self,sm", "self,tcp"):
        add_variant_runs(store, cid, f"ucx[env.UCX_TLS={tls},np=2]", repeats=2, grp="app",
                         params={"steps": 100}, seq0=next(seq),
                         make=lambda rep: [app_row(2, 5.0 + rep)])
    return store


def app_campaign_store(directory: Path, values: list, *, name: str = "big", repeats: int = 2
                       ) -> tuple[Path, Path]:
    """A campaign file of one application group over parameter x = values (TOML literals,
    e.g. '3' or '"text"'), and a store its cells were synced into as pending runs by the
    real runner (len(values) x repeats cells, no launch): (campaign file, store)."""
    from mpibench.campaign.runner import CampaignRunner
    from mpibench.campaign.spec import load

    path = directory / f"{name}.toml"
    path.write_text(f'[campaign]\nname = "{name}"\nrepeats = {repeats}\n[variants.a]\n'
                    f'stack = "openmpi"\n[benchmarks.app]\ncommand = "echo {{x}}"\n'
                    f'params = {{ x = [{", ".join(map(str, values))}] }}\n')
    db = directory / f"{name}.db"
    with Store(db) as store:
        CampaignRunner(load(path), store, []).sync()
    return path, db

"""Transport verification: which transport actually carried the traffic, from the stack's own
diagnostics, compared with what the variant requested.

How (decided for timing's sake): a separate, short *probe launch* per variant, never the
measured run. The probe is a tiny ring exchange (8 B and 64 KiB, so eager and rendezvous paths
are both opened) built with the stack's compiler wrapper, launched exactly like the variant
(same launcher, np, placement, env, MCA) plus diagnostics that only add output at start-up:

  Open MPI  --mca pml_base_verbose 10 --mca btl_base_verbose 100 --mca mtl_base_verbose 10
            (ob1 prints "bml: Using <btl> btl for send to <peer>" per peer; the PML and MTL
            selection lines say whether ucx or cm/ofi took over), plus UCX_LOG_LEVEL=info for
            pml ucx ("ep_cfg[n]: tag(sysv/memory cma/memory)").
  MPICH     (ch4:ucx) UCX_LOG_LEVEL=info: the same ep_cfg lines list the UCX transports per
            endpoint.

The verbose flags change the launcher argv, so putting them into the measured run would also
change its fingerprint and its output; a probe costs one short launch per variant instead.

Result: `transport_actual` = "<class> [<detail>]", class one of shm, tcp, shm+tcp, ib, ucx,
ofi (or the MTL's name), unknown. `verdict(requested, actual)` is ok / MISMATCH / unverified.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from mpibench.execute import CellCommand, Variant, prepare_cell
from mpibench.runner import run_command
from mpibench.schedulers import STEP_TIMEOUT_EXIT
from mpibench.stacks import Stack, cache_dir

PROBE_SOURCE = r"""
#include <mpi.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int rank, size;
    static char sbuf[65536], rbuf[65536];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    const int lens[2] = {8, 65536};
    for (int rep = 0; rep < 3; rep++)
        for (int i = 0; i < 2; i++)
            MPI_Sendrecv(sbuf, lens[i], MPI_CHAR, next, i, rbuf, lens[i], MPI_CHAR, prev, i,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
"""

OMPI_DIAG_MCA = {"pml_base_verbose": "10", "btl_base_verbose": "100",
                 "mtl_base_verbose": "10"}
UCX_DIAG_ENV = {"UCX_LOG_LEVEL": "info"}

SHM_NAMES = {"vader", "sm", "smcuda", "sysv", "posix", "cma", "xpmem", "knem", "mm", "shm"}
TCP_NAMES = {"tcp", "sockets"}
IB_NAMES = {"openib", "rc", "rc_verbs", "rc_mlx5", "ud", "ud_verbs", "ud_mlx5", "dc",
            "dc_mlx5", "uct", "verbs", "psm2", "efa", "usnic"}

_BML = re.compile(r"bml: Using (\S+) btl for send to")
_PML = re.compile(r"select: component (\S+) selected")
_PML_BEST = re.compile(r"selected (\S+) best priority")
_MTL = re.compile(r"mca:base:select:\(\s*mtl\) Selected component \[(\S+)\]")
_OFI_DOMAIN = re.compile(r"mtl:ofi:provider: (\S+)")
_UCX_EP = re.compile(r"ep_cfg\[\d+\]: (.*)$", re.MULTILINE)
_UCX_TAG = re.compile(r"\btag\(([^)]*)\)")


@dataclass
class Verification:
    requested: str | None
    actual: str  # "<class> [<detail>]"
    verdict: str  # ok | MISMATCH | unverified | n/a
    evidence: list[str] = field(default_factory=list)  # the diagnostic lines it rests on
    run_dir: Path | None = None
    problem: str | None = None


def _classify(names: set[str]) -> str:
    classes = set()
    for n in names:
        if n in SHM_NAMES:
            classes.add("shm")
        elif n in TCP_NAMES:
            classes.add("tcp")
        elif n in IB_NAMES:
            classes.add("ib")
        else:
            classes.add(n)
    order = ["shm", "tcp", "ib"]
    return "+".join(sorted(classes, key=lambda c: (order.index(c) if c in order else 9, c))) \
        or "unknown"


def ucx_transports(text: str) -> set[str]:
    """UCX transport names on the tag lanes of every endpoint, 'self' excluded."""
    names: set[str] = set()
    for line in _UCX_EP.findall(text):
        for group in _UCX_TAG.findall(line) or [line]:
            for tl in group.split():
                name = tl.split("/", 1)[0]
                if name and name != "self":
                    names.add(name)
    return names


def parse_diagnostics(kind: str, text: str, env: dict[str, str] | None = None
                      ) -> tuple[str, list[str]]:
    """(actual, evidence lines) from a probe's combined output. Pure."""
    env = env or {}
    evidence: list[str] = []

    def keep(rx: re.Pattern) -> list[str]:
        found = []
        for line in text.splitlines():
            m = rx.search(line)
            if m:
                found.append(m.group(1))
                if len(evidence) < 40 and line.strip() not in evidence:
                    evidence.append(line.strip())
        return found

    if kind == "openmpi":
        pmls = keep(_PML_BEST) or keep(_PML)
        pml = pmls[0] if pmls else None
        if pml == "ob1" or (pml is None and _BML.search(text)):
            btls = set(keep(_BML)) - {"self"}
            if not btls:
                return "unknown [pml ob1, no btl reported]", evidence
            return f"{_classify(btls)} [pml ob1, btl {','.join(sorted(btls))}]", evidence
        if pml == "ucx":
            tls = ucx_transports(text)
            keep(_UCX_EP)
            detail = ",".join(sorted(tls)) or "?"
            return f"ucx [pml ucx, tls {detail}: {_classify(tls) if tls else '?'}]", evidence
        if pml == "cm":
            mtls = keep(_MTL)
            mtl = mtls[0] if mtls else "?"
            if mtl == "ofi":
                domains = keep(_OFI_DOMAIN)
                prov = env.get("FI_PROVIDER", "")
                return (f"ofi [pml cm, mtl ofi, provider {prov or '?'}, "
                        f"domain {domains[0] if domains else '?'}]"), evidence
            return f"{mtl} [pml cm, mtl {mtl}]", evidence
        if pml:
            return f"{pml} [pml {pml}]", evidence
        return "unknown [no PML selection in the diagnostics]", evidence
    if kind in ("mpich", "mvapich", "intel"):
        tls = ucx_transports(text)
        keep(_UCX_EP)
        if tls:
            return f"{_classify(tls)} [ucx tls {','.join(sorted(tls))}]", evidence
        return "unknown [no UCX endpoint configuration in the diagnostics]", evidence
    return f"unknown [no diagnostics known for {kind} stacks]", evidence


def actual_class(actual: str | None) -> str | None:
    return actual.split(" ", 1)[0] if actual else None


def verdict(requested: str | None, actual: str | None) -> str:
    if not requested:
        return "n/a"
    cls = actual_class(actual)
    if cls is None or cls == "unknown":
        return "unverified"
    return "ok" if cls == requested else "MISMATCH"


def probe_binary(stack: Stack, timeout: float = 120) -> Path:
    """The probe built with the stack's wrapper, cached per stack identity."""
    key = hashlib.sha256(PROBE_SOURCE.encode()).hexdigest()[:8]
    out_dir = cache_dir() / "verify" / f"{stack.name}-{stack.identity()}-{key}"
    exe = out_dir / "mpibench-transport-probe"
    if exe.exists():
        return exe
    out_dir.mkdir(parents=True, exist_ok=True)
    src = out_dir / "probe.c"
    src.write_text(PROBE_SOURCE)
    tmp = out_dir / f".probe.{id(src)}"
    res = run_command([stack.mpicc, str(src), "-o", str(tmp)], timeout=timeout)
    if not res.ok:
        raise RuntimeError(f"cannot build the transport probe with {stack.mpicc}: "
                           f"{res.stderr_tail(3)}")
    tmp.replace(exe)
    return exe


def diagnostic_variant(stack: Stack, variant: Variant) -> Variant:
    """The variant plus start-up diagnostics; everything that selects transports unchanged."""
    env = dict(variant.env)
    env.update(UCX_DIAG_ENV)
    mca = dict(variant.mca)
    if stack.kind == "openmpi":
        mca.update(OMPI_DIAG_MCA)
    # one rank has no peer to talk to: probe the same settings with two
    np = max(2, variant.np)
    return replace(variant, env=env, mca=mca, profile=False, np=np)


def prepare_probe(stack: Stack, variant: Variant, run_dir: Path, *, local: bool = True
                  ) -> CellCommand:
    return prepare_cell(stack, diagnostic_variant(stack, variant), [str(probe_binary(stack))],
                        run_dir, jsonl=None, local=local)


def probe_problem(exit_code: int | None, timed_out: bool, timeout: float | None,
                  stderr: str = "") -> str | None:
    """Why a finished probe launch cannot vouch for a transport, or None if it ran to the
    end. A probe that hung or was killed printed its start-up diagnostics and then never
    showed that traffic flowed: what it printed proves nothing. exit_code None: a batch
    probe step that never recorded its status (the job died around it); 124: the job
    script's `timeout` stopped it."""
    if timed_out or exit_code == STEP_TIMEOUT_EXIT:
        return "probe launch timed out" + (f" after {timeout:g} s" if timeout else "")
    if exit_code is None:
        return "the probe step never finished (its job ended first)"
    if exit_code < 0 or 128 < exit_code <= 128 + 64:  # run_command's -N, a shell's 128+N
        return f"probe launch killed by signal {-exit_code if exit_code < 0 else exit_code - 128}"
    if exit_code != 0:
        last = (stderr.strip().splitlines() or ["no error output"])[-1].strip()
        return f"probe launch failed (exit {exit_code}: {last[:120]})"
    return None


def judge(stack: Stack, variant: Variant, text: str, env: dict[str, str],
          run_dir: Path | None = None, problem: str | None = None) -> Verification:
    """The verdict on a probe's output. With a problem (see probe_problem) it is never ok:
    actual is unknown with the reason, plus what the diagnostics said before it."""
    actual, evidence = parse_diagnostics(stack.kind, text, env)
    if problem:
        cls = actual_class(actual)
        actual = f"unknown [{problem}" + (f"; before that its diagnostics showed {cls}"
                                          if cls and cls != "unknown" else "") + "]"
    return Verification(requested=variant.transport, actual=actual,
                        verdict=verdict(variant.transport, actual), evidence=evidence,
                        run_dir=run_dir, problem=problem)


def verify_local(stack: Stack, variant: Variant, run_dir: Path, timeout: float = 60
                 ) -> Verification:
    """Launch the probe now and judge it. Never raises for a failing probe: the verification
    is then 'unverified' with the reason."""
    from mpibench.execute import run_local

    run_dir = Path(run_dir)
    try:
        cmd = prepare_probe(stack, variant, run_dir)
    except RuntimeError as exc:
        return Verification(variant.transport, f"unknown [{exc}]",
                            verdict(variant.transport, None), run_dir=run_dir,
                            problem=str(exc))
    res = run_local(cmd, timeout=timeout)
    problem = probe_problem(res.returncode, res.timed_out, timeout, res.stderr)
    v = judge(stack, variant, res.stdout + "\n" + res.stderr, cmd.env, run_dir, problem)
    (run_dir / "verification.txt").write_text(
        f"requested: {v.requested}\nactual: {v.actual}\nverdict: {v.verdict}\n"
        + (f"problem: {problem}\n" if problem else "") + "evidence:\n"
        + "\n".join(f"  {line}" for line in v.evidence) + "\n")
    return v


def transport_warnings(store, run_ids: list[str]) -> list[str]:
    """One line per variant among these runs whose requested transport did not take effect
    (verdict MISMATCH), for reports and comparisons to print beside their tables."""
    seen: dict[tuple[str, str, str], int] = {}
    from mpibench.store.queries import transports

    for variant, req, act in transports(store, run_ids):
        if verdict(req, act) == "MISMATCH":
            key = (variant, req, act)
            seen[key] = seen.get(key, 0) + 1
    return [f"variant {v}: requested transport {req} but {act} carried the traffic "
            f"({n} run(s)); its results measure {actual_class(act)}, not {req}"
            for (v, req, act), n in seen.items()]

"""The local backend (schedulers/local.py) against real MPI launches."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from mpibench.process import run_command
from mpibench.schedulers import STEP_TIMEOUT_EXIT, JobStep, StepCompletion, read_step_result
from support.common import MPI_TIMEOUT

# every rank exchanges with its neighbours and says so as the probe does (verify.py's
# EXCHANGED line), then rank 0 never returns: it stands in for an MPI_Finalize that hangs
# after every rank reported (MPICH 4.0.2 over UCX now and then), so the launcher never exits
# by itself; the peers wait for it in MPI_Finalize
HANGS_AFTER_REPORTING = r"""
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int rank, size, got = -1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Sendrecv(&rank, 1, MPI_INT, (rank + 1) % size, 0, &got, 1, MPI_INT,
                 (rank + size - 1) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (rank == 0) {
        FILE *f = fopen(argv[1], "w");
        fprintf(f, "%d\n", (int)getpid());
        fclose(f);
    }
    printf("mpibench-probe exchanged rank=%d\n", rank);
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        for (;;)
            pause();
    MPI_Finalize();
    return 0;
}
"""


@pytest.mark.system
def test_a_local_probe_step_ends_once_every_rank_reported(tmp_path, openmpi):
    """The local backend ran a step's cell without its completion rule, so a probe whose
    ranks had all reported still waited out its launcher's hang (the step's whole
    timeout). It now ends as the batch step does: the launcher is stopped once both ranks
    reported, and the step says so."""
    from mpibench.execute import Variant, prepare_cell
    from mpibench.schedulers.local import LocalScheduler
    from mpibench.verify import EXCHANGED_ERE

    src, exe, pid_file = tmp_path / "hang.c", tmp_path / "hang", tmp_path / "rank0.pid"
    src.write_text(HANGS_AFTER_REPORTING)
    built = run_command(openmpi.command([openmpi.mpicc, str(src), "-o", str(exe)]),
                        env=openmpi.env, timeout=MPI_TIMEOUT)
    assert built.ok, built.stderr
    cmd = prepare_cell(openmpi, Variant(name="v", stack=openmpi.name, np=2),
                       [str(exe), str(pid_file)], tmp_path / "run")
    step = JobStep("c-verify", cmd.run_dir, cmd.argv, cmd.env, cmd.stdout, cmd.stderr,
                   timeout_s=MPI_TIMEOUT, cell=cmd,
                   complete=StepCompletion(EXCHANGED_ERE, 2, "probe ranks", grace_s=0.5))
    try:
        res = LocalScheduler().run_step(step)
    finally:
        _stop_leftover(pid_file)
    err = cmd.stderr.read_text()
    assert not res.timed_out, err
    assert read_step_result(step).exit_code not in (None, STEP_TIMEOUT_EXIT)
    assert "mpibench: all 2 probe ranks reported; the launcher (pid " in err
    assert "had not exited 0.5 s later and was stopped" in err


def _stop_leftover(pid_file: Path) -> None:
    """The hung rank, if its launcher left it behind (by its PID, never by name)."""
    try:
        os.kill(int(pid_file.read_text()), signal.SIGKILL)
    except (FileNotFoundError, ValueError, ProcessLookupError):
        pass


# What the core does at the end of a run (core/driver.c), with a hang where MPICH now and
# then hangs: rank 0 writes a complete core output (header, a result, the footer) to the
# --jsonl file the campaign passes, then never reaches MPI_Finalize, where rank 1 waits for
# it; so the launcher never exits by itself. For the benchmark Barrier it leaves the footer
# out: a run cut short, whose launch must still time out.
WRITES_CORE_OUTPUT_THEN_HANGS = r"""
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int rank;
    const char *jsonl = "core.jsonl", *bench = argv[argc - 1];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--jsonl"))
            jsonl = argv[i + 1];
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        FILE *p = fopen("rank0.pid", "w");
        fprintf(p, "%d\n", (int)getpid());
        fclose(p);
        FILE *f = fopen(jsonl, "w");
        fprintf(f, "{\"record\":\"header\",\"schema_version\":1}\n");
        fprintf(f, "{\"record\":\"result\",\"benchmark\":\"%s\",\"size\":0,\"np\":2,"
                   "\"status\":\"ok\",\"reason\":null,\"median_us\":1.5}\n", bench);
        if (strcmp(bench, "Barrier"))
            fprintf(f, "{\"record\":\"footer\",\"status\":\"ok\",\"elapsed_s\":0.1}\n");
        fclose(f);
        for (;;)
            pause();
    }
    MPI_Finalize();
    return 0;
}
"""

FINALIZE_HANG_CAMPAIGN = """
[campaign]
name = "finalize-hang"
repeats = 1
timeout = 30
[variants.v]
stack = "{stack}"
np = 2
[benchmarks.whole]
benchmarks = ["PingPong"]
sizes = "0"
[benchmarks.cut]
benchmarks = ["Barrier"]
timeout = 3
"""


@pytest.mark.system
def test_a_core_cell_whose_output_is_complete_is_done_though_its_launcher_hangs(
        tmp_path, openmpi, monkeypatch):
    """A cell whose core had written its whole output (the footer) while the launcher hung
    in MPI_Finalize (MPICH now and then, e.g. the nodes=2 Allreduce cell of
    tests/schedulers/test_multinode.py under load) waited out the cell's timeout and was
    recorded `timeout`. Now the launcher is stopped after the grace and the cell is `done`
    with a note; a cell whose output has no footer still times out."""
    from mpibench import execute
    from mpibench.campaign.runner import CampaignRunner
    from mpibench.campaign.spec import load
    from mpibench.store import Store

    monkeypatch.setattr(execute, "CORE_FINALIZE_GRACE_S", 0.5, raising=False)
    src, exe = tmp_path / "core_like.c", tmp_path / "core_like"
    src.write_text(WRITES_CORE_OUTPUT_THEN_HANGS)
    built = run_command(openmpi.command([openmpi.mpicc, str(src), "-o", str(exe)]),
                        env=openmpi.env, timeout=MPI_TIMEOUT)
    assert built.ok, built.stderr
    camp = tmp_path / "camp.toml"
    camp.write_text(FINALIZE_HANG_CAMPAIGN.format(stack=openmpi.name))
    runner = CampaignRunner(load(camp), None, [openmpi], verify=False)
    runner.binaries[openmpi.name] = exe
    try:
        with Store(tmp_path / "c.db") as store:
            runner.store = store
            runner.run()
            runs = {r["grp"]: r for r in store.runs()}
    finally:
        for pid_file in (tmp_path / "runs").rglob("rank0.pid"):
            _stop_leftover(pid_file)
    whole, cut = runs["whole"], runs["cut"]
    assert whole["status"] == "done", (whole["reason"], whole["stderr_tail"])
    assert "launcher stopped" in whole["reason"], whole["reason"]
    assert "after the core's output was complete" in whole["reason"], whole["reason"]
    assert cut["status"] == "timeout", (cut["reason"], cut["stderr_tail"])

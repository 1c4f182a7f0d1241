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

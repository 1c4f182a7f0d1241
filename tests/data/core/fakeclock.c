/* A deterministic clock for regression checks of mpibench-core (LD_PRELOAD; built with each
 * stack's mpicc, see tests/core/test_parts.py).
 *
 * MPI_Wtime advances a per-process clock by a pseudo-random amount that depends only on how
 * many times it was read and how many point-to-point and collective calls the process made
 * since the last reading (each call counts as 0.25-0.35 us, now and then a 5 us hiccup).  A
 * run's batch sizes, samples, stop decisions and summaries are then a pure function of the
 * order in which the core calls MPI and reads its clock: two builds that do the same things in
 * the same order write the same results, bit for bit.  That is how a reorganisation of the
 * core is shown to change nothing it measures.  It models no real machine: getrusage reports
 * no page faults, so the core's settling (which runs until a fault-free stretch) takes the
 * same path every time.  Only calls on MPI_COMM_WORLD count: the benchmarks and the driver use
 * it alone, and the machine-state reading (core/state.c) syncs ranks 0 and 1 on a communicator
 * of their own, which a result does not depend on. */
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static uint64_t reads, calls, calls_seen;

static int counted(MPI_Comm c)
{
    return c == MPI_COMM_WORLD;
}
static double now_s = 1000.0;

static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t my_rank(void)
{
    static int64_t rank = -1;
    if (rank < 0) {
        const char *v = getenv("OMPI_COMM_WORLD_RANK");
        if (!v)
            v = getenv("PMI_RANK");
        rank = v ? atoll(v) : 0;
    }
    return (uint64_t)rank;
}

double MPI_Wtime(void)
{
    uint64_t z = mix(reads++ * 0x9e3779b97f4a7c15ull + my_rank() * 0x632be59bd9b4e019ull + 1);
    double ns = 20.0 + (double)(z % 41);
    for (; calls_seen < calls; calls_seen++) {
        uint64_t y = mix(calls_seen * 0x9e3779b97f4a7c15ull + z);
        ns += 250.0 + (double)(y % 101);
        if (y % 97 == 0)
            ns += 5000.0;
    }
    now_s += ns * 1e-9;
    return now_s;
}

double MPI_Wtick(void) { return 1e-9; }

int MPI_Send(const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c)
{
    calls += counted(c);
    return PMPI_Send(b, n, t, d, tag, c);
}

int MPI_Recv(void *b, int n, MPI_Datatype t, int s, int tag, MPI_Comm c, MPI_Status *st)
{
    calls += counted(c);
    return PMPI_Recv(b, n, t, s, tag, c, st);
}

int MPI_Allreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{
    calls += counted(c);
    return PMPI_Allreduce(s, r, n, t, op, c);
}

static int in_barrier; /* a barrier returned since the last reading of the switch count */

int MPI_Barrier(MPI_Comm c)
{
    if (counted(c)) {
        calls++;
        in_barrier = 1;
    }
    return PMPI_Barrier(c);
}

/* MB_FAKE_SWITCH=RANK:EVERY: on that rank, the per-thread count of involuntary context
 * switches (getrusage(RUSAGE_THREAD).ru_nivcsw, what the core's preemption flag reads) goes up
 * by one every EVERY-th reading, so which samples the core flags is a function of the order
 * of its readings; RANK:barrier: by one on the first reading after each MPI_Barrier (the
 * rank was switched out while it waited in the barrier); unset: no switch, ever */
static long fake_switches(void)
{
    static long every, rank = -1, readings, barriers;
    static int read_env;
    if (!read_env) {
        const char *v = getenv("MB_FAKE_SWITCH");
        read_env = 1;
        if (v && strchr(v, ':')) {
            rank = atol(v);
            every = strcmp(strchr(v, ':') + 1, "barrier") ? atol(strchr(v, ':') + 1) : -2;
        }
    }
    if ((every <= 0 && every != -2) || (uint64_t)rank != my_rank())
        return 0;
    if (every == -2) {
        barriers += in_barrier;
        in_barrier = 0;
        return barriers;
    }
    return ++readings / every;
}

/* no page faults, ever (glibc's getrusage, whose first parameter type depends on _GNU_SOURCE);
 * context switches only as MB_FAKE_SWITCH says (who 1 = RUSAGE_THREAD on Linux) */
int getrusage(__rusage_who_t who, struct rusage *u)
{
    memset(u, 0, sizeof *u);
    if ((int)who == 1)
        u->ru_nivcsw = fake_switches();
    return 0;
}

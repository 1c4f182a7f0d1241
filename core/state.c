/* mpibench-core state.c: the machine-state reading within a launch.
 *
 * Ranks 0 and 1 bounce one cache line in an MPI-3 shared-memory window for --state-ms
 * milliseconds, without MPI calls in between: rank 0 writes an odd value, rank 1 answers with
 * the next even one; a sample is the wall time of MB_STATE_BATCH round trips over that count.
 * This is what core/probe/mpibench-cacheline measures between the two CPUs the ranks are
 * bound to (one loop, core/probe/cacheline.h: same warm-up, sample minimum and cap; the
 * same batch here, so the same GATE_FACTOR separates
 * the states: src/mpibench/stats/probe.py), taken inside the launch: at its start (the
 * header's machine_state) and at its end (the footer's). The campaign's gate then judges a
 * core launch on its own readings instead of probing and waiting around it
 * (src/mpibench/campaign/machine_probe.py).
 *
 * Why: on the VM this project is measured on, shared-memory PingPong at small sizes comes in
 * two whole-launch modes ~3x apart that follow where the host runs the two vCPUs; the
 * external probe costs a process spawn (~8.5 ms of wall time) before and after every launch
 * and its before-reading led the gate to wait for the state before launching.
 *
 * No reading (null in the output) with --state-ms 0, fewer than two ranks, ranks 0 and 1 on
 * different nodes, or no shared window. Other ranks take no part and do not wait.
 */
#define _GNU_SOURCE
#include "driver.h"
#include "probe/cacheline.h"

#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MB_STATE_BATCH 16
#define MB_STATE_MAX_SAMPLES 200000

/* the shared cache line (rank 0's part of the window) and rank 1's CPU */
typedef struct {
    _Alignas(64) _Atomic uint64_t line;
    _Alignas(64) _Atomic int cpu_b;
} mb_state_line;

/* ranks 0 and 1: a communicator of the two, and the shared line when they share memory */
void mb_state_open(mb_state *st)
{
    st->state_comm = MPI_COMM_NULL;
    st->state_line = NULL;
    int want = st->opt.state_ms > 0 && st->np >= 2;
    if (!want)
        return;
    MPI_Comm pair, node = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, st->rank < 2 ? 0 : MPI_UNDEFINED, st->rank, &pair);
    if (pair == MPI_COMM_NULL)
        return;
    MPI_Comm_set_errhandler(pair, MPI_ERRORS_RETURN);
    int nsize = 0, ok = 0, all = 0, made = 0;
    if (MPI_Comm_split_type(pair, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS
        && node != MPI_COMM_NULL)
        MPI_Comm_size(node, &nsize);
    if (nsize == 2) {
        /* a stack without shared windows refuses here: no reading, not an aborted launch */
        MPI_Comm_set_errhandler(node, MPI_ERRORS_RETURN);
        MPI_Aint bytes = st->rank == 0 ? (MPI_Aint)(sizeof(mb_state_line) + 64) : 0;
        void *base = NULL;
        made = MPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, node, &base, &st->state_win)
               == MPI_SUCCESS;
        ok = made;
        if (made) {
            MPI_Aint sz;
            int du;
            MPI_Win_set_errhandler(st->state_win, MPI_ERRORS_RETURN);
            ok = MPI_Win_shared_query(st->state_win, 0, &sz, &du, &base) == MPI_SUCCESS;
            uintptr_t p = ((uintptr_t)base + 63) & ~(uintptr_t)63;
            st->state_line = ok ? (void *)p : NULL;
        }
    }
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, pair);
    if (node != MPI_COMM_NULL)
        MPI_Comm_free(&node);
    if (!all) {
        /* MPI_Win_free is collective: every rank that made the window frees it, also one
         * whose shared query failed while the other's succeeded */
        if (made)
            MPI_Win_free(&st->state_win);
        st->state_line = NULL;
        MPI_Comm_free(&pair);
        return;
    }
    st->state_comm = pair;
}

void mb_state_close(mb_state *st)
{
    if (st->state_comm == MPI_COMM_NULL)
        return;
    MPI_Win_free(&st->state_win);
    MPI_Comm_free(&st->state_comm);
    st->state_line = NULL;
}

static void summarise(double *s, int64_t n, mb_state_reading *out)
{
    mb_sort_doubles(s, n);
    out->samples = n;
    out->median_ns = mb_quantile(s, n, 0.5);
    out->q1_ns = mb_quantile(s, n, 0.25);
    out->q3_ns = mb_quantile(s, n, 0.75);
    out->min_ns = s[0];
}

/* One reading (every rank calls it; ranks 0 and 1 take part when the line is shared);
 * out->taken says whether rank 0 has one. */
void mb_state_read(mb_state *st, mb_state_reading *out)
{
    memset(out, 0, sizeof *out);
    if (st->state_comm == MPI_COMM_NULL)
        return;
    mb_state_line *sh = st->state_line;
    if (st->rank == 0) {
        atomic_store(&sh->line, 0);
        atomic_store(&sh->cpu_b, -1);
    }
    MPI_Barrier(st->state_comm);
    if (st->rank == 1) {
        atomic_store(&sh->cpu_b, sched_getcpu());
        mb_cl_respond(&sh->line);
    } else {
        double *s = malloc(sizeof(double) * MB_STATE_MAX_SAMPLES);
        long long t0 = mb_now_ns();
        int64_t n = s ? mb_cl_sample(&sh->line, st->opt.state_ms, MB_STATE_BATCH, s,
                                     MB_STATE_MAX_SAMPLES) : 0;
        atomic_store(&sh->line, MB_CL_STOP);
        out->elapsed_ms = (double)(mb_now_ns() - t0) / 1e6;
        out->cpu_a = sched_getcpu();
        if (n > 0) {
            summarise(s, n, out);
            out->taken = 1;
        }
        free(s);
    }
    /* rank 1 has seen STOP before the next reading resets the line */
    MPI_Barrier(st->state_comm);
    if (st->rank == 0)
        out->cpu_b = atomic_load(&sh->cpu_b);
}

/* The reading as a JSON object under key (null when none was taken), the probe program's
 * fields: src/mpibench/stats/probe.py parses both alike. */
void mb_state_emit(mb_json *j, const char *key, const mb_state_reading *r)
{
    if (!r->taken) {
        mj_null(j, key);
        return;
    }
    mj_key_obj(j, key);
    mj_str(j, "record", "probe");
    mj_str(j, "probe", "cacheline-ranks");
    mj_int(j, "version", 1);
    mj_arr_begin(j, "cpus");
    mj_int(j, NULL, r->cpu_a);
    mj_int(j, NULL, r->cpu_b);
    mj_arr_end(j);
    mj_int(j, "batch", MB_STATE_BATCH);
    mj_int(j, "samples", r->samples);
    mj_num(j, "median_ns", r->median_ns);
    mj_num(j, "q1_ns", r->q1_ns);
    mj_num(j, "q3_ns", r->q3_ns);
    mj_num(j, "min_ns", r->min_ns);
    mj_num(j, "elapsed_ms", r->elapsed_ms);
    mj_obj_end(j);
}

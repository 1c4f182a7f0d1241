/* mpibench-core clocks: the timer calibration, clock offsets for --sync window, and the
 * watchdog that turns a hang into a recorded timeout. */
#define _POSIX_C_SOURCE 200809L
#define _GNU_SOURCE /* RUSAGE_THREAD (Linux) */

#include "driver.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static const char *stage_names[] = {"first", "validate", "calibrate", "warmup", "measure",
                                     "settle", "setup", "statistics"};

const char *mb_stage_name(int s) { return stage_names[s]; }

/* The watchdog's stage, and (while a size is measured) the wall time of the stage it ends:
 * one clock_gettime per stage change, outside every timed interval. */
void mb_set_stage(mb_state *st, enum mb_stage s)
{
    if (st->phase_on) {
        long long now = mb_now_ns();
        st->phase_ns[st->cur_stage] += now - st->phase_since_ns;
        st->phase_since_ns = now;
    }
    st->cur_stage = (int)s;
}

/* This process's page faults so far (minor and major): a fault in a timed interval is the
 * kernel's work (on a VM also the hypervisor's), not the message's. */
int64_t mb_page_faults(void)
{
    struct rusage u;
    if (getrusage(RUSAGE_SELF, &u))
        return 0;
    return (int64_t)u.ru_minflt + (int64_t)u.ru_majflt;
}

/* This thread's involuntary context switches so far (the kernel took the CPU away: a time
 * slice ended, another task woke with priority), or MB_NIVCSW_NONE where the per-thread count
 * does not exist: never the process-wide count, which the watchdog thread would add to. */
double mb_nivcsw(void)
{
#ifdef RUSAGE_THREAD
    struct rusage u;
    if (getrusage(RUSAGE_THREAD, &u))
        return MB_NIVCSW_NONE;
    return (double)u.ru_nivcsw;
#else
    return MB_NIVCSW_NONE;
#endif
}

int mb_nivcsw_available(void)
{
#ifdef RUSAGE_THREAD
    return 1;
#else
    return 0;
#endif
}

long long mb_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int mb_watchdog(void *arg)
{
    mb_state *st = arg;
    while (!atomic_load(&st->wd_stop)) {
        atomic_fetch_add(&st->wd_looks, 1);
        long long dl = atomic_load(&st->deadline_ns);
        /* rank 0 writes the record and exits first; the others give it a head start so the
         * launcher does not kill rank 0 before its record is on disk */
        long long grace = st->rank == 0 ? 0 : 3000000000LL;
        if (dl && mb_now_ns() > dl + grace) {
            if (st->rank == 0) {
                mb_result r;
                memset(&r, 0, sizeof r);
                r.status = "timeout";
                snprintf(r.reason, sizeof r.reason,
                         "watchdog: size did not finish within --timeout %g s (stage: %s)",
                         st->opt.timeout, mb_stage_name(st->cur_stage));
                r.first_us = r.rank_min_us = r.rank_max_us = r.rank_avg_us = NAN;
                r.timer_fraction = NAN;
                mb_emit_result(st, st->cur_b, st->cur_size, &r);
                const char *reason = r.reason;
                mtx_lock(&st->out_mtx);
                mb_footer(st, "timeout");
                if (st->json && st->json != stdout)
                    fsync(fileno(st->json));
                if (st->text) {
                    fprintf(st->text, "# TIMEOUT %s size %lld: %s\n", st->cur_b->name,
                            (long long)st->cur_size, reason);
                    fflush(st->text);
                }
                fprintf(stderr, "mpibench-core: TIMEOUT in %s at size %lld bytes: %s; exiting\n",
                        st->cur_b->name, (long long)st->cur_size, reason);
                fflush(stdout);
                fflush(stderr);
            }
            /* MPI_Abort is not safe from a second thread without MPI_THREAD_MULTIPLE; a process
             * exit makes every launcher (mpirun, hydra) tear the job down. */
            _exit(1);
        }
        /* Sleep until this size's deadline (rank 1..: plus the grace), or, disarmed,
         * --timeout seconds (a size armed after now has its deadline later than that), cut
         * short when the run ends (mb_watchdog_stop).  Every look wakes this thread on the
         * rank's own CPU (it inherits the binding), where it preempts the measuring thread:
         * at a look every 20 ms, as before, the looks were 50 involuntary switches a second
         * per rank, samples --exclude-preempted drops (and a size then samples on to
         * --preempted-max-time).  Now one look per deadline. */
        long long wait_ns = dl ? dl + grace - mb_now_ns() : (long long)(st->opt.timeout * 1e9);
        if (wait_ns < 1000000LL)
            wait_ns = 1000000LL;
        struct timespec ts;
        timespec_get(&ts, TIME_UTC);
        long long at = (long long)ts.tv_nsec + wait_ns;
        ts.tv_sec += (time_t)(at / 1000000000LL);
        ts.tv_nsec = (long)(at % 1000000000LL);
        mtx_lock(&st->wd_mtx);
        if (!atomic_load(&st->wd_stop))
            cnd_timedwait(&st->wd_cnd, &st->wd_mtx, &ts);
        mtx_unlock(&st->wd_mtx);
    }
    return 0;
}

void mb_watchdog_stop(mb_state *st, thrd_t wd)
{
    mtx_lock(&st->wd_mtx);
    atomic_store(&st->wd_stop, 1);
    cnd_signal(&st->wd_cnd);
    mtx_unlock(&st->wd_mtx);
    thrd_join(wd, NULL);
}

void mb_arm(mb_state *st, const mb_bench *b, int64_t size)
{
    st->cur_b = b;
    st->cur_size = size;
    atomic_store(&st->deadline_ns, mb_now_ns() + (long long)(st->opt.timeout * 1e9));
}
void mb_disarm(mb_state *st) { atomic_store(&st->deadline_ns, 0); }

/* ---- timer calibration ---- */

mb_timer mb_calibrate_timer(void)
{
    mb_timer t;
    /* 5 x 2000 calls: the best of 5 means, each over ~60 us of calls, reads the cost of one
     * call to a few percent; 5 x 20000 (until this change) took 3.4 ms of every launch (MPICH
     * here, 31 ns a call), 2-3% of a budgeted launch of the time-to-decision bench */
    const int N = 2000;
    double c0 = MPI_Wtime();
    volatile double sink = 0;
    double best = 1e9;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = MPI_Wtime();
        for (int i = 0; i < N; i++)
            sink += MPI_Wtime();
        double t1 = MPI_Wtime();
        if ((t1 - t0) / N < best)
            best = (t1 - t0) / N;
    }
    (void)sink;
    double res = 1e9;
    for (int rep = 0; rep < 2000; rep++) {
        double a = MPI_Wtime(), b;
        while ((b = MPI_Wtime()) == a)
            ;
        if (b - a < res)
            res = b - a;
    }
    double loc[3] = {best * 1e6, res * 1e6, (MPI_Wtime() - c0) * 1e6}, glob[3];
    MPI_Allreduce(loc, glob, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    t.overhead_us = glob[0];
    t.resolution_us = glob[1];
    t.calibration_us = glob[2];
    t.wtick_us = MPI_Wtick() * 1e6;
    /* the two MPI_Wtime calls of an interval cost at most 2 overheads, and the reading is
     * quantised by the resolution: both must stay under 1% of the interval */
    double cost = fmax(2.0 * t.overhead_us, t.resolution_us);
    t.min_interval_us = 100.0 * cost;
    return t;
}

/* --sync window: this rank's clock minus rank 0's, in seconds, from the ping-pong with the
 * smallest round trip among 16 (Cristian's method); 0 on rank 0. */
double mb_clock_offset(const mb_state *st)
{
    double off = 0.0;
    for (int r = 1; r < st->np; r++) {
        if (st->rank == 0) {
            double best_rtt = 1e30, best = 0.0;
            for (int i = 0; i < 16; i++) {
                double t0 = MPI_Wtime(), tr;
                MPI_Send(&t0, 1, MPI_DOUBLE, r, 901, MPI_COMM_WORLD);
                MPI_Recv(&tr, 1, MPI_DOUBLE, r, 902, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                double t1 = MPI_Wtime();
                if (t1 - t0 < best_rtt) {
                    best_rtt = t1 - t0;
                    best = tr - (t0 + t1) / 2.0;
                }
            }
            MPI_Send(&best, 1, MPI_DOUBLE, r, 903, MPI_COMM_WORLD);
        } else if (st->rank == r) {
            for (int i = 0; i < 16; i++) {
                double x;
                MPI_Recv(&x, 1, MPI_DOUBLE, 0, 901, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                double tr = MPI_Wtime();
                MPI_Send(&tr, 1, MPI_DOUBLE, 0, 902, MPI_COMM_WORLD);
            }
            MPI_Recv(&off, 1, MPI_DOUBLE, 0, 903, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    return off;
}


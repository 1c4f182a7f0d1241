/* mpibench-core driver: main, the benchmark x size loop, and how one size is measured.
 * Benchmarks live in descriptor tables (pt2pt.c, coll.c); nothing here knows what a benchmark
 * does beyond its descriptor.  driver.h lists the other parts.
 *
 * Timing model (docs/core-output.md has the long version):
 *   - a sample is a batch of k iterations timed as one interval; k is chosen per size by rank 0
 *     so that the timer's cost is under 1% of the interval, and broadcast;
 *   - sample value = max over ranks of (batch time / k), combined with an element-wise
 *     MPI_Reduce(MAX) after each round of samples, never inside the timed loop;
 *   - a barrier separates samples, outside the timed interval; benchmarks whose iterations
 *     wait for the peer (pair_sync: PingPong, PingPing, Uniband, Biband) take one before
 *     each round instead, and their samples follow back to back as IMB's loop does;
 *   - warm-up samples are discarded and counted (the calibration's last batch, at the final
 *     k, is the first of them); the first iteration is timed alone;
 *   - rank 0 decides when to stop (stop.c) and broadcasts the decision.
 */
#define _POSIX_C_SOURCE 200809L

#include "driver.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* the run's state: the only global in the program */
static mb_state S;

/* Run k iterations; the only code inside the timed interval. */
static inline void run_batch(const mb_state *st, const mb_bench *b, mb_ctx *c, const mb_pool *p,
                             int64_t k, int64_t *it)
{
    if (!st->opt.off_cache && !st->opt.root_shift) {
        for (int64_t i = 0; i < k; i++)
            b->run(c);
        return;
    }
    for (int64_t i = 0; i < k; i++, (*it)++) {
        if (st->opt.off_cache)
            mb_pool_use(c, p, *it);
        if (st->opt.root_shift)
            c->root = (int)(*it % c->np);
        b->run(c);
    }
}

/* Counts beyond INT_MAX need MPI-4's _c calls: decided before any allocation.  Returns 1 when
 * this stack cannot run the size (r->status "unsupported"). */
static int decide_large_count(const mb_state *st, const mb_bench *b, mb_ctx *c, mb_result *r)
{
    /* the largest count or displacement the calls take: elements, not bytes (reductions
     * count floats); v-variants' displacements reach (np-1) x size */
    int64_t biggest = b->elem_bytes == 4 ? c->size / 4 : c->size;
    if (b->vdispl)
        biggest *= st->np;
    if (biggest <= INT_MAX && !st->opt.debug_large)
        return 0;
    if (MB_HAVE_LARGE) {
        c->large = 1;
        r->large = 1;
        return 0;
    }
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len, ver, sub;
    MPI_Get_library_version(lib, &len);
    MPI_Get_version(&ver, &sub);
    char *nl = strchr(lib, '\n');
    if (nl)
        *nl = 0;
    char *comma = strchr(lib, ',');
    if (comma)
        *comma = 0;
    r->status = "unsupported";
    if (biggest > INT_MAX)
        snprintf(r->reason, sizeof r->reason,
                 "not supported by this stack: counts or displacements up to %lld "
                 "exceed INT_MAX and need MPI-4 large-count calls; %s is MPI-%d.%d",
                 (long long)biggest, lib, ver, sub);
    else
        snprintf(r->reason, sizeof r->reason,
                 "not supported by this stack: --debug-large-count asks for MPI-4 "
                 "large-count calls; %s is MPI-%d.%d", lib, ver, sub);
    return 1;
}

/* --debug-corrupt: flip byte 0 of what one rank received, choosing the highest rank whose
 * check actually reads that byte in this iteration (a non-root rank of Reduce or Gather
 * holds a receive buffer under --root-shift but checks nothing), so the corruption is
 * always caught where a check exists.  Barrier has nothing to corrupt. */
static void debug_corrupt(const mb_state *st, const mb_bench *b, mb_ctx *c)
{
    int sensitive = 0;
    if (c->rbytes > 0) {
        double e, g;
        c->rbuf[0] ^= 0x5a;
        sensitive = b->check(c, 0, &e, &g) >= 0;
        c->rbuf[0] ^= 0x5a;
    }
    int mine = sensitive ? st->rank : -1, who;
    MPI_Allreduce(&mine, &who, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (who == st->rank)
        c->rbuf[0] ^= 0x5a;
}

/* The first iteration timed alone (initialisation cost), doubling as validation iteration 0;
 * then validation iteration 1 with a different pattern.  Checking is untimed.  Returns 1 on a
 * validation failure (r says where). */
static int first_and_validate(mb_state *st, const mb_bench *b, mb_ctx *c, mb_result *r)
{
    const mb_options *o = &st->opt;
    r->validated = o->validate;
    r->valid_ok = 1;
    for (int it = 0; it < (o->validate ? 2 : 1); it++) {
        mb_set_stage(st, it == 0 ? MB_STAGE_FIRST : MB_STAGE_VALIDATE);
        if (o->root_shift)
            c->root = it % st->np;
        if (o->validate) {
            memset(c->rbuf, 0, (size_t)c->rbytes);
            b->fill(c, it);
        }
        /* the first iteration is timed alone from a common start; the validation
         * iteration is untimed, and the check's reduction already separates it from the
         * first */
        if (it == 0)
            MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        b->run(c);
        double t1 = MPI_Wtime();
        double first_loc = (t1 - t0) * 1e6 / b->iter_div;
        if (!o->validate) {
            double glob;
            MPI_Reduce(&first_loc, &glob, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            r->first_us = glob;
            break;
        }
        if (o->debug_corrupt == c->size && it == 0)
            debug_corrupt(st, b, c);
        double e = 0, g = 0;
        int64_t bad = b->check(c, it, &e, &g);
        /* one reduction: the first time (max over ranks) and the lowest failing rank
         * (min over ranks, as the max of its negation) */
        double loc2[2] = {it == 0 ? first_loc : 0.0, -(double)(bad >= 0 ? st->rank : st->np)};
        double glob2[2];
        MPI_Allreduce(loc2, glob2, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (it == 0)
            r->first_us = glob2[0];
        int first_bad = (int)-glob2[1];
        if (first_bad < st->np) {
            double info[3] = {(double)bad, e, g};
            MPI_Bcast(info, 3, MPI_DOUBLE, first_bad, MPI_COMM_WORLD);
            r->status = "validation_failed";
            r->valid_ok = 0;
            r->bad_rank = first_bad;
            r->bad_it = it;
            r->bad_index = (int64_t)info[0];
            r->bad_expected = info[1];
            r->bad_got = info[2];
            snprintf(r->reason, sizeof r->reason,
                     "rank %d: element %lld (%s) of the received data is %.9g, expected %.9g "
                     "(validation iteration %d)", first_bad, (long long)r->bad_index,
                     b->elem_bytes == 4 ? "float" : "byte", info[2], info[1], it);
            return 1;
        }
    }
    c->root = 0;
    return 0;
}

/* What the measurement of one size works with, besides the descriptor and buffers. */
typedef struct mb_sizing {
    int64_t k;          /* iterations per sample */
    int64_t kmax;       /* largest k allowed (fixed mode: the iteration count) */
    int64_t total;      /* fixed mode: iterations for this size; 0 in adaptive mode */
    double floor_us;    /* shortest batch allowed */
    double tsize0;      /* MPI_Wtime when calibration began: the budget counts from here */
    double est_batch_us; /* rank 0: latest estimate of one batch's duration */
    int64_t it;         /* iteration counter for --off-cache / --root-shift rotation */
} mb_sizing;

/* Settling: the MPI library's own memory (MPICH's shared-memory cells, for one) is mapped at
 * start-up but touched lazily, a page at a time, by the first messages that reach it; on
 * this machine MPICH's 128 B, 2 KiB and 4 KiB PingPong took 25-63 page faults per rank in
 * their first ~64 iterations (1.8-6 us per message instead of 0.3-1 us) and none after.
 * Which sizes fault, and how many of a size's first samples they reach, depends on the
 * sizes run before it and on how many iterations calibration happened to run: a launch
 * artefact, which a long-running application pays once.  So before calibration (which
 * would otherwise choose k from the slow messages), a size runs untimed chunks of 1, 2, 4
 * ... MB_SETTLE_CHUNK iterations, counting every rank's page faults (one reduction per
 * chunk), until the iterations since the last chunk that faulted are at least
 * MB_SETTLE_QUIET and at least the iterations up to it (a gap inside the transient, ~20
 * iterations here, never ends it: mb_settle_done in stop.c), or its share of --max-time is
 * spent: MB_SETTLE_SHARE with the last chunk fault-free, MB_SETTLE_LIMIT while the chunks
 * still fault (those pages are paid for either way; a fault here sometimes costs
 * milliseconds), each chunk cut to the time left (mb_settle_next).  Every decision comes
 * from the one MAX reduction, so every rank takes it.  The record says how many iterations
 * and faults, whether a fault-free stretch ended it, and the faults left in the timed
 * rounds. */
static void settle(mb_state *st, const mb_bench *b, mb_ctx *c, const mb_pool *p, mb_sizing *z,
                   mb_result *r)
{
    if (!st->opt.settle)
        return;
    mb_set_stage(st, MB_STAGE_SETTLE);
    int64_t done = 0, last = 0, chunk = 1, faults = 0;
    double prev = 0; /* MAX over ranks of the time spent when the chunk began */
    for (;;) {
        int64_t f0 = mb_page_faults();
        run_batch(st, b, c, p, chunk, &z->it);
        done += chunk;
        double loc[2] = {(double)(mb_page_faults() - f0), MPI_Wtime() - z->tsize0}, glob[2];
        MPI_Allreduce(loc, glob, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (glob[0] > 0) {
            last = done;
            faults += (int64_t)glob[0];
        }
        if (mb_settle_done(done, last)) {
            r->settled = 1;
            break;
        }
        chunk = mb_settle_next(chunk, glob[1] - prev, glob[1], last == done, st->opt.max_time);
        if (chunk == 0)
            break;
        prev = glob[1];
    }
    r->settle_iters = done;
    r->settle_faults = faults;
}

/* Grow k until one batch (max over ranks) reaches the floor.  A preempted batch can leave k
 * too small here: the re-batch check on real samples catches that, which is cheaper than
 * timing every step several times.  Returns 1 when the last batch timed ran at the k it
 * leaves (it then counts as the first warm-up sample), 0 when the time budget ended it with
 * k still growing. */
static int calibrate_batch(mb_state *st, const mb_bench *b, mb_ctx *c, const mb_pool *p,
                            mb_sizing *z)
{
    mb_set_stage(st, MB_STAGE_CALIBRATE);
    int64_t timed_k = z->k;
    for (int round = 0; round < 40; round++) {
        timed_k = z->k;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        run_batch(st, b, c, p, z->k, &z->it);
        double t1 = MPI_Wtime();
        double loc1 = (t1 - t0) * 1e6, glob1 = 0;
        MPI_Reduce(&loc1, &glob1, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        z->est_batch_us = glob1;
        int64_t next[2] = {z->k, 1}; /* k, done */
        if (st->rank == 0) {
            int64_t nk = mb_grow_batch(z->k, glob1, z->floor_us, z->kmax);
            if (nk != z->k) {
                next[0] = nk;
                next[1] = 0;
            }
            /* never let calibration itself eat the time budget */
            if (!st->opt.iterations && MPI_Wtime() - z->tsize0 > st->opt.max_time)
                next[1] = 1;
        }
        MPI_Bcast(next, 2, MPI_INT64_T, 0, MPI_COMM_WORLD);
        z->k = next[0];
        if (next[1])
            break;
    }
    return timed_k == z->k;
}

/* Whether a barrier starts every sample of this benchmark (else only each round's first) */
static int barrier_each_sample(const mb_state *st, const mb_bench *b)
{
    return st->opt.sync_mode == MB_SYNC_BARRIER || !b->pair_sync;
}

/* This rank's involuntary context switches since *last, and *last moved on: 0 on a rank
 * that times nothing (idle ranks of single-pair benchmarks), MB_NIVCSW_NONE without the
 * per-thread counter. */
static double switches_since(int active, double *last)
{
    if (!active)
        return 0.0;
    double now = mb_nivcsw(), d = now - *last;
    if (!(now < MB_NIVCSW_NONE) || !(*last < MB_NIVCSW_NONE))
        d = MB_NIVCSW_NONE;
    *last = now;
    return d;
}

/* One round of R samples on this rank: loc[s] = per-iteration time of sample s, loc[R + s] =
 * 1 when the sample started late (--sync window), else 0, loc[2R + s] = the rank's
 * involuntary context switches from the end of sample s-1 (for s = 0, and before each sample
 * that a barrier starts: from that barrier's end) to the end of sample s, loc[3R + s] = those
 * inside the barrier that starts sample s (from the reading before it; 0 where no barrier
 * does).  Read outside the timed interval, the windows tile the round back to back.  A
 * barrier does not release the ranks together: a rank switched out in it delays the sample
 * it starts, which its own window (loc[3R + s]) flags (mb_flag_preempted). */
static void time_round(mb_state *st, const mb_bench *b, mb_ctx *c, const mb_pool *p,
                       mb_sizing *z, int64_t R, double *loc, double my_off, double win_scale)
{
    int64_t k = z->k;
    int active = !b->single_pair || st->rank < 2;
    double sw = 0;
    if (st->opt.sync_mode != MB_SYNC_WINDOW) {
        /* a pair_sync benchmark's ranks stay in step through its own messages: each rank's
         * batch spans k iterations end to end (rank 1's from its last reply to its next),
         * as in IMB's timed loop; the round's barrier absorbs the reduction's skew */
        int each = barrier_each_sample(st, b);
        sw = mb_nivcsw();
        for (int64_t s = 0; s < R; s++) {
            loc[3 * R + s] = 0.0;
            if (each || s == 0) {
                MPI_Barrier(MPI_COMM_WORLD);
                loc[3 * R + s] = switches_since(active, &sw);
            }
            double t0 = MPI_Wtime();
            run_batch(st, b, c, p, k, &z->it);
            double t1 = MPI_Wtime();
            loc[s] = (t1 - t0) * 1e6 / (double)k / b->iter_div;
            loc[R + s] = 0.0;
            loc[2 * R + s] = switches_since(active, &sw);
        }
        return;
    }
    /* rank 0 schedules sample s to start at start + s * win on its clock; every rank spins
     * until that moment on its own clock (corrected by its offset).  A rank that arrives after
     * the tolerance flags the sample late: it is dropped and counted, never silently. */
    double sched[2];
    if (st->rank == 0) {
        double w = fmax(3.0 * z->est_batch_us, z->est_batch_us + 20.0) * win_scale;
        sched[1] = w * 1e-6;
        sched[0] = MPI_Wtime() + 0.002 * win_scale; /* covers the broadcast */
    }
    MPI_Bcast(sched, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    double tol = 0.05 * sched[1] + 0.5e-6;
    sw = mb_nivcsw();
    for (int64_t s = 0; s < R; s++) {
        double when = sched[0] + (double)s * sched[1] + my_off, t0;
        while ((t0 = MPI_Wtime()) < when)
            ;
        run_batch(st, b, c, p, k, &z->it);
        double t1 = MPI_Wtime();
        loc[s] = (t1 - t0) * 1e6 / (double)k / b->iter_div;
        loc[R + s] = t0 - when > tol ? 1.0 : 0.0;
        loc[2 * R + s] = switches_since(active, &sw);
        loc[3 * R + s] = 0.0;
    }
}

/* rank 0's samples: all in order, and a scratch copy for sorting */
typedef struct mb_samples {
    double *all, *sorted;
    int64_t n, room;
} mb_samples;

static void samples_reserve(mb_samples *v, int64_t want)
{
    if (want <= v->room)
        return;
    while (want > v->room)
        v->room *= 2;
    double *na = realloc(v->all, sizeof(double) * (size_t)v->room);
    double *ns = realloc(v->sorted, sizeof(double) * (size_t)v->room);
    if (!na || !ns) {
        fprintf(stderr, "mpibench-core: out of memory for %lld samples\n", (long long)v->room);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    v->all = na;
    v->sorted = ns;
}

/* Sampling rounds until a stop reason: rank 0 decides after each round (stop.c) and
 * broadcasts the reason, the next round's length and the batch size.  Fills r's samples,
 * batch, warm-up count, stop reason; *my_sum and *my_n are this rank's own per-iteration
 * times for IMB's t_min/t_max/t_avg. */
/* Fixed-count mode's stop once the count is done (rank 0): `preempted` where
 * --exclude-preempted left out flagged samples and fewer than MB_FLOOR_SAMPLES clean ones
 * are left (none: the size is then skipped), as the time-bounded mode stops such a size, so
 * a fixed-count launch is cut short by the same rule (stats.preempted); else `iterations`.
 * Before, such a size stopped `iterations` and the rule neither counted nor isolated it. */
static int64_t fixed_stop(const mb_options *o, int64_t kept, int64_t excluded)
{
    return o->exclude_preempted && excluded > 0 && kept < MB_FLOOR_SAMPLES
               ? MB_STOP_PREEMPTED : MB_STOP_ITERATIONS;
}

static void measure(mb_state *st, const mb_bench *b, mb_ctx *c, const mb_pool *p, mb_sizing *z,
                    mb_result *r, double *my_sum, int64_t *my_n)
{
    const mb_options *o = &st->opt;
    mb_set_stage(st, MB_STAGE_MEASURE);
    int64_t cap = o->iterations ? (z->total + z->k - 1) / z->k : o->max_samples;
    if (cap < 1)
        cap = 1;
    /* rank 0's sample store grows with n, so a large --max-samples costs nothing unused */
    mb_samples v = {0};
    if (st->rank == 0) {
        v.room = 4096;
        v.all = malloc(sizeof(double) * (size_t)v.room);
        v.sorted = malloc(sizeof(double) * (size_t)v.room);
    }
    mb_stop_rule rule = {.target_pct = o->target_pct, .max_time = o->max_time,
                         .min_samples = o->min_samples, .cap = cap, .futility = o->futility,
                         .accept_approximate = o->accept_approximate,
                         .exclude_preempted = o->exclude_preempted,
                         .preempt_time = o->preempt_time};
    int held = 0; /* rank 0: rounds held by an unsettled stationarity check (stop.c) */
    /* the first round: fixed mode up to 1000 samples; adaptive mode --min-samples within the
     * time left (one sample ~ the last calibration batch), decided by rank 0 */
    int64_t R = cap < 1000 ? cap : 1000;
    if (!o->iterations) {
        if (st->rank == 0)
            R = mb_first_round(&rule, z->est_batch_us * 1e-6,
                               o->max_time - (MPI_Wtime() - z->tsize0));
        MPI_Bcast(&R, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
    }
    /* per-sample times, (with --sync window) per-sample late flags, per-sample context
     * switches and those in the barrier before each sample, reduced together: the max over
     * ranks is "either rank" for the last three */
    size_t room = (size_t)(cap < 4096 ? cap : 4096);
    double *loc = malloc(4 * sizeof(double) * room);
    double *glob = malloc(4 * sizeof(double) * room);
    unsigned char *flag = malloc(room);
    int64_t budget_n = 0; /* rank 0: samples taken when max_time was first spent */
    int budget_set = 0;
    double my_off = o->sync_mode == MB_SYNC_WINDOW ? mb_clock_offset(st) : 0.0;
    if (o->sync_mode == MB_SYNC_WINDOW) {
        double a = fabs(my_off) * 1e6, amax;
        MPI_Reduce(&a, &amax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        r->clock_offset_max_us = amax;
    }
    double win_scale = 1.0;
    *my_sum = 0;
    *my_n = 0;
    int active = !b->single_pair || st->rank < 2;
    int64_t my_faults = 0; /* page faults in this rank's timed rounds (kept ones) */
    for (;;) {
        if (R > (int64_t)room) /* room = min(cap, 4096): a longer round would overflow */
            R = (int64_t)room;
        double tr0 = MPI_Wtime();
        int64_t f0 = mb_page_faults();
        time_round(st, b, c, p, z, R, loc, my_off, win_scale);
        my_faults += mb_page_faults() - f0;
        MPI_Reduce(loc, glob, (int)(4 * R), MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (active)
            for (int64_t s = 0; s < R; s++)
                *my_sum += loc[s];
        *my_n += R;
        /* the decision, the next round's length, the batch size */
        int64_t ctl[3] = {MB_CONTINUE, 0, z->k};
        if (st->rank == 0) {
            if (mb_flag_preempted(glob + 2 * R, glob + 3 * R, R, flag) < 0)
                r->preempt_na = 1;
            /* late samples are dropped and counted; preempted ones counted, and dropped
             * with --exclude-preempted */
            int64_t nvalid = 0, nlate = 0;
            for (int64_t s2 = 0; s2 < R; s2++) {
                int late = glob[R + s2] != 0.0;
                nlate += late;
                r->preempted += !late && flag[s2];
                if (!late && !(o->exclude_preempted && flag[s2]))
                    glob[nvalid++] = glob[s2];
            }
            r->late += nlate;
            if (o->sync_mode == MB_SYNC_WINDOW && (R - nlate) * 10 < R * 9)
                win_scale *= 2.0; /* more than 10% late: widen the schedule */
            int64_t Rall = R;
            R = nvalid;
            samples_reserve(&v, v.n + R);
            /* median of this round alone: the path may speed up well after warm-up */
            memcpy(v.sorted, glob, sizeof(double) * (size_t)R);
            mb_sort_doubles(v.sorted, R);
            double round_med = mb_quantile(v.sorted, R, 0.5);
            if (R > 0)
                z->est_batch_us = round_med * (double)z->k * b->iter_div;
            memcpy(v.all + v.n, glob, sizeof(double) * (size_t)R);
            v.n += R;
            int64_t n = v.n;
            double now = MPI_Wtime(), round_wall = now - tr0;
            mb_summary s;
            mb_summarise_series(v.all, v.sorted, n, &s);
            double batch_us = round_med * (double)z->k * b->iter_div;
            /* the path got faster after calibration (lazy connection set-up, caches): the
             * batch no longer keeps the timer under 1%.  Grow k and start over; the samples
             * so far count as warm-up. */
            int64_t nk = R > 0 && r->rebatches < 3
                             ? mb_grow_batch(z->k, batch_us, z->floor_us, z->kmax) : z->k;
            if (nk != z->k) {
                ctl[0] = MB_REBATCH;
                ctl[2] = o->iterations ? mb_fixed_batch(nk, z->total) : nk;
                ctl[1] = mb_first_round(&rule, batch_us * (double)ctl[2] / (double)z->k * 1e-6,
                                        o->max_time - (now - z->tsize0));
            } else if (o->iterations) {
                /* late samples (--sync window) and excluded preempted ones count towards the
                 * fixed total, not the stats */
                int64_t done = n + r->late + (o->exclude_preempted ? r->preempted : 0);
                ctl[0] = done >= cap ? fixed_stop(o, n, r->preempted) : MB_CONTINUE;
                ctl[1] = cap - done < 1000 ? cap - done : 1000;
            } else {
                double spent = now - z->tsize0;
                if (!budget_set && spent >= o->max_time) {
                    budget_set = 1;
                    budget_n = n + (o->exclude_preempted ? r->preempted : 0);
                }
                mb_progress pr = {.n = n, .median = s.median, .ci_low = s.ci_low,
                                  .ci_high = s.ci_high, .ci_exact = s.ci_exact, .spent = spent,
                                  .ci_sized = s.ci_sized,
                                  .unsettled = s.stationarity == MB_STAT_UNSETTLED, .held = held,
                                  .budget_set = budget_set, .budget_n = budget_n};
                ctl[0] = mb_adaptive_stop(&rule, &pr);
                held = ctl[0] == MB_CONTINUE && mb_held(&rule, &pr) ? held + 1 : 0;
                ctl[1] = mb_round_after(&rule, &pr, round_wall / (double)Rall);
            }
        }
        MPI_Bcast(ctl, 3, MPI_INT64_T, 0, MPI_COMM_WORLD);
        if (ctl[0] == MB_REBATCH) {
            held = 0;
            r->warmup += *my_n; /* includes late samples so far */
            r->late = 0;
            r->preempted = 0;
            budget_n = 0;
            budget_set = 0;
            r->rebatches++;
            my_faults = 0;
            z->k = ctl[2];
            v.n = 0;
            *my_sum = 0;
            *my_n = 0;
            if (o->iterations) {
                rule.cap = cap = z->total / z->k;
                R = cap < 1000 ? cap : 1000;
            } else {
                R = ctl[1];
            }
            continue;
        }
        if (ctl[0] != MB_CONTINUE) {
            r->stop = (enum mb_stop)ctl[0];
            break;
        }
        R = ctl[1];
    }
    r->batch = z->k;
    r->sample_faults = my_faults; /* this rank's; rank_times takes the max over ranks */
    free(loc);
    free(glob);
    free(flag);
    free(v.sorted);
    r->samples = v.all;
    r->n = v.n;
}

/* IMB's t_min/t_max/t_avg: per-rank mean time, then min/max/avg over the active ranks;
 * one gather of (mean, active, the rank's page faults in its timed rounds) per rank, where
 * three reductions used to synchronise; r->sample_faults becomes the max over ranks */
static void rank_times(const mb_state *st, int active, double my_sum, int64_t my_n, mb_result *r)
{
    double mine[3] = {active && my_n ? my_sum / (double)my_n : NAN, active ? 1.0 : 0.0,
                      (double)r->sample_faults};
    double *all = st->rank == 0 ? malloc(sizeof(double) * 3 * (size_t)st->np) : NULL;
    MPI_Gather(mine, 3, MPI_DOUBLE, all, 3, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (st->rank == 0) {
        double lo = INFINITY, hi = -INFINITY, tot = 0, faults = 0;
        int cnt = 0, nan = 0;
        for (int i = 0; i < st->np; i++) {
            faults = all[3 * i + 2] > faults ? all[3 * i + 2] : faults;
            if (all[3 * i + 1] == 0.0)
                continue;
            double m = all[3 * i];
            nan |= isnan(m);
            lo = m < lo ? m : lo;
            hi = m > hi ? m : hi;
            tot += m;
            cnt++;
        }
        r->rank_min_us = nan ? NAN : lo;
        r->rank_max_us = nan ? NAN : hi;
        r->rank_avg_us = tot / cnt;
        r->sample_faults = (int64_t)faults;
        free(all);
    }
}

/* One benchmark x size: set-up, first call and validation, batch calibration, warm-up,
 * sampling, statistics.  Every rank returns; rank 0's r is what gets written. */
static void run_size(mb_state *st, const mb_bench *b, int64_t size, int size_index, mb_result *r)
{
    const mb_options *o = &st->opt;
    memset(r, 0, sizeof *r);
    double t_setup = MPI_Wtime();
    memset(st->phase_ns, 0, sizeof st->phase_ns);
    st->phase_since_ns = mb_now_ns();
    st->cur_stage = MB_STAGE_SETUP;
    st->phase_on = 1;
    r->status = "ok";
    r->first_us = NAN;
    r->timer_fraction = NAN;
    r->rank_min_us = r->rank_max_us = r->rank_avg_us = NAN;
    r->stop = MB_CONTINUE;
    mb_ctx c;
    mb_ctx_init(&c, st, size);

    if (st->np < b->min_np) {
        r->status = "skipped";
        snprintf(r->reason, sizeof r->reason, "needs at least %d ranks, running with %d",
                 b->min_np, st->np);
        return;
    }
    if (decide_large_count(st, b, &c, r))
        return;
    c.counts = calloc((size_t)st->np, sizeof(int));
    c.displs = calloc((size_t)st->np, sizeof(int));
#if MB_HAVE_LARGE
    c.lcounts = calloc((size_t)st->np, sizeof(MPI_Count));
    c.ldispls = calloc((size_t)st->np, sizeof(MPI_Aint));
#endif
    if (b->setup)
        b->setup(&c);
    b->bufsize(&c, &c.sbytes, &c.rbytes);
    mb_pool p;
    if (mb_pool_alloc(st, &c, &p, r, size_index))
        goto out;

    mb_arm(st, b, size);
    if (first_and_validate(st, b, &c, r)) {
        mb_disarm(st);
        goto out;
    }

    mb_set_stage(st, MB_STAGE_CALIBRATE);
    if (o->debug_stall == size && st->rank == st->np - 1) {
        mb_set_stage(st, MB_STAGE_MEASURE);
        for (;;) {
            struct timespec ts = {1, 0};
            thrd_sleep(&ts, NULL);
        }
    }
    mb_sizing z = {.k = 1, .tsize0 = MPI_Wtime()};
    z.kmax = o->iterations ? o->iterations : INT64_C(1) << 30;
    if (o->iterations && o->iterations_volume) {
        int64_t vcap = o->iterations_volume / (size > 0 ? size : 1);
        z.kmax = vcap < 1 ? 1 : vcap < o->iterations ? vcap : o->iterations;
    }
    z.total = o->iterations ? z.kmax : 0;
    /* --per-call: no batching at all; calibration then times one call and stops */
    if (o->per_call)
        z.kmax = 1;
    /* shortest batch: the timer floor (cost < 1%); point-to-point batches also reach
     * --batch-us, because every sample costs a barrier and on a busy machine a barrier can
     * cost a scheduler time slice, while batching pt2pt iterations changes nothing they
     * measure (IMB and OSU time whole loops).  Collectives batch only to the timer floor. */
    z.floor_us = st->timer.min_interval_us;
    if (b->kind == MB_PT2PT && o->batch_us > z.floor_us)
        z.floor_us = o->batch_us;
    r->floor_us = z.floor_us;
    settle(st, b, &c, &p, &z, r);
    int64_t calib_k = calibrate_batch(st, b, &c, &p, &z) ? z.k : 0;
    /* fixed-count mode runs exactly z.total iterations: k divides it */
    if (o->iterations)
        z.k = mb_fixed_batch(z.k, z.total);

    /* warm-up samples at the final k, discarded; the calibration's last batch is the first
     * of them when it ran at that k.  pair_sync benchmarks need no barrier: the
     * calibration's broadcast has just synchronised the ranks, their messages keep them so */
    mb_set_stage(st, MB_STAGE_WARMUP);
    int each = barrier_each_sample(st, b);
    for (int64_t w = calib_k == z.k && o->warmup > 0 ? 1 : 0; w < o->warmup; w++) {
        if (each)
            MPI_Barrier(MPI_COMM_WORLD);
        run_batch(st, b, &c, &p, z.k, &z.it);
    }
    r->warmup = o->warmup;
    r->batch = z.k;

    double my_sum;
    int64_t my_n;
    measure(st, b, &c, &p, &z, r, &my_sum, &my_n);
    mb_disarm(st);
    mb_set_stage(st, MB_STAGE_STATS);
    rank_times(st, !b->single_pair || st->rank < 2, my_sum, my_n, r);
    if (st->rank == 0 && r->n == 0 && r->late > 0 && r->preempted > 0 && o->exclude_preempted) {
        r->status = "skipped";
        snprintf(r->reason, sizeof r->reason,
                 "no sample kept: %lld started late (--sync window), %lld preempted "
                 "(--exclude-preempted)", (long long)r->late, (long long)r->preempted);
    } else if (st->rank == 0 && r->n == 0 && r->late > 0) {
        r->status = "skipped";
        snprintf(r->reason, sizeof r->reason,
                 "all %lld samples started late (--sync window on a busy machine); use --sync "
                 "barrier", (long long)r->late);
    } else if (st->rank == 0 && r->n == 0) {
        char within[96] = "";
        if (!o->iterations)
            snprintf(within, sizeof within, " within --preempted-max-time %g s", o->preempt_time);
        r->status = "skipped";
        snprintf(r->reason, sizeof r->reason,
                 "all %lld samples preempted (a rank was descheduled in or next to each; "
                 "--exclude-preempted)%s", (long long)r->preempted, within);
    }
    if (st->rank == 0) {
        r->iters_total = r->n * z.k;
        double *tmp = malloc(sizeof(double) * (size_t)(r->n > 0 ? r->n : 1));
        mb_summarise_series(r->samples, tmp, r->n, &r->s);
        free(tmp);
        /* the timer's cost relative to one batch interval at the median */
        r->timer_fraction =
            2.0 * st->timer.overhead_us / (r->s.median * b->iter_div * (double)z.k);
    }
out:
    r->elapsed_s = MPI_Wtime() - t_setup;
    mb_set_stage(st, MB_STAGE_SETUP); /* closes the last stage's account */
    st->phase_on = 0;
    for (int i = 0; i < MB_NSTAGES; i++)
        r->phase_s[i] = (double)st->phase_ns[i] / 1e9;
    mb_disarm(st);
    mb_pool_free(&p);
    free(c.counts);
    free(c.displs);
#if MB_HAVE_LARGE
    free(c.lcounts);
    free(c.ldispls);
#endif
}

/* rank 0 opens the outputs; every rank learns whether that worked */
static int open_outputs(mb_state *st)
{
    int open_ok = 1;
    if (st->rank == 0) {
        if (st->opt.jsonl) {
            st->json = strcmp(st->opt.jsonl, "-") ? fopen(st->opt.jsonl, "w") : stdout;
            if (!st->json) {
                fprintf(stderr, "mpibench-core: cannot write --jsonl %s: %s\n", st->opt.jsonl,
                        strerror(errno));
                open_ok = 0;
            }
        }
        if (!st->opt.quiet)
            st->text = st->json == stdout ? stderr : stdout;
    }
    MPI_Bcast(&open_ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return open_ok;
}

int main(int argc, char **argv)
{
    mb_state *st = &S;
    int rc = mb_parse_args(argc, argv, &st->opt);
    if (rc == -1)
        return 0;
    if (rc)
        return rc;
    if (st->opt.self_test)
        return mb_stats_selftest();
    if (st->opt.ci_simulation)
        return mb_ci_simulation_print((int)st->opt.ci_simulation);
    if (st->opt.list) {
        if (mb_is_rank0_env())
            mb_list(stdout);
        return 0;
    }
    st->start_ns = mb_now_ns();
    /* MPI_THREAD_SINGLE by default, as MPI_Init in IMB, OSU, NetPIPE and most applications:
     * Open MPI 4.1 turns on its internal locks for any higher level, which cost 8-byte
     * PingPong ~0.07 us (30%) here.  The watchdog thread never calls MPI. */
    long long init0 = mb_now_ns();
    MPI_Init_thread(&argc, &argv, st->opt.thread_level, &st->thread_provided);
    double my_init_us = (double)(mb_now_ns() - init0) / 1e3;
    MPI_Comm_rank(MPI_COMM_WORLD, &st->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &st->np);
    /* the launch's start-up cost, per launch (MPI_Wtime does not exist before MPI_Init) */
    MPI_Reduce(&my_init_us, &st->init_us, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    mtx_init(&st->out_mtx, mtx_plain);
    mtx_init(&st->wd_mtx, mtx_plain);
    cnd_init(&st->wd_cnd);
    if (!open_outputs(st)) {
        MPI_Finalize();
        return 2;
    }
    st->timer = mb_calibrate_timer();
    mb_state_open(st);
    mb_state_read(st, &st->state_start);
    mb_emit_header(st, argc, argv);

    thrd_t wd;
    thrd_create(&wd, mb_watchdog, st);

    int failed = 0;
    for (int bi = 0; bi < st->opt.nbench; bi++) {
        const mb_bench *b = st->opt.bench[bi];
        if (st->rank == 0)
            mb_text_bench_header(st, b);
        int nsz = b->sized ? st->opt.nsizes : 1;
        mb_bench_buffers(st, b);
        for (int si = 0; si < nsz; si++) {
            int64_t size = b->sized ? st->opt.sizes[si] : 0;
            mb_result r;
            run_size(st, b, size, si, &r);
            if (st->rank == 0)
                mb_emit_result(st, b, size, &r);
            if (!strcmp(r.status, "validation_failed"))
                failed = 1;
            free(r.samples);
        }
        mb_bench_buffers_free(st);
    }
    mb_watchdog_stop(st, wd);
    mb_state_read(st, &st->state_end);
    mb_state_close(st);
    if (st->rank == 0) {
        mtx_lock(&st->out_mtx);
        mb_footer(st, failed ? "failed" : "ok");
        if (st->text)
            fprintf(st->text, "\n# All processes entering MPI_Finalize%s\n",
                    failed ? " (VALIDATION FAILED)" : "");
        mtx_unlock(&st->out_mtx);
        if (st->json && st->json != stdout)
            fclose(st->json);
    }
    MPI_Finalize();
    return failed ? 1 : 0;
}

/* mpibench-core: shared types between the driver and the benchmark families.
 *
 * The driver (driver.c) owns everything that is common: argument parsing, the size loop,
 * timing, adaptive stopping, statistics, the watchdog and output.  A benchmark family
 * (pt2pt.c, coll.c) only fills descriptor tables: how much memory a rank needs, how to run
 * one iteration, how many bytes one iteration moves, and how to fill and check buffers for
 * the untimed validation pass.
 */
#ifndef MB_H
#define MB_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

/* MPI-4 large-count calls (MPI_Send_c, ...) are used only for counts above INT_MAX. */
#if defined(MPI_VERSION) && MPI_VERSION >= 4
#define MB_HAVE_LARGE 1
#else
#define MB_HAVE_LARGE 0
#endif

#define MB_VERSION "0.1.0"
#define MB_SCHEMA_VERSION 1
#define MB_WINDOW 64 /* Uniband/Biband messages in flight per iteration (IMB's window) */
/* send and receive buffers start on this boundary (core/buffers.c page_alloc; the header's
 * options.buffer_align, which the fingerprint keeps: malloc'd buffers before it aliased) */
#define MB_BUFFER_ALIGN 4096

enum mb_kind { MB_PT2PT = 0, MB_COLL = 1 };

/* Everything a benchmark's callbacks may look at.  Buffers are owned by the driver. */
typedef struct mb_ctx {
    MPI_Comm comm;
    int rank, np;
    int64_t size;   /* message size in bytes, with IMB's meaning for this benchmark */
    int root;       /* root for rooted collectives (rotated with --root-shift) */
    int large;      /* counts exceed INT_MAX: use the MPI-4 _c calls */
    int any_root;   /* --root-shift: every rank may be root, allocate root buffers everywhere */
    unsigned char *sbuf, *rbuf; /* current send / receive buffers (rotated by --off-cache) */
    int64_t sbytes, rbytes;     /* bytes of sbuf / rbuf in use by this rank */
    /* balanced counts and displacements for v-variants and Reduce_scatter (np entries) */
    int *counts, *displs;
#if MB_HAVE_LARGE
    MPI_Count *lcounts;
    MPI_Aint *ldispls;
#endif
    MPI_Request reqs[2 * MB_WINDOW];
} mb_ctx;

typedef struct mb_bench {
    const char *name;   /* IMB spelling */
    enum mb_kind kind;
    int min_np;
    int single_pair;    /* only ranks 0 and 1 take part; the rest idle (IMB single transfer) */
    int pair_sync;      /* every iteration waits for the peer's message: back-to-back batches
                         * stay in step without a barrier (IMB and OSU time such loops whole) */
    int vdispl;         /* counts/displacements of np*size must fit the count type */
    int sized;          /* 0: the size is meaningless (Barrier), run once at size 0 */
    int iter_div;       /* reported time = iteration time / iter_div (2 for PingPong: half RTT) */
    /* bytes this rank needs for the send and receive buffers */
    void (*bufsize)(const mb_ctx *c, int64_t *sbytes, int64_t *rbytes);
    /* optional: fill counts/displs for v-variants and Reduce_scatter (before bufsize) */
    void (*setup)(mb_ctx *c);
    /* one iteration; returns an MPI error code */
    int (*run)(mb_ctx *c);
    /* bytes one iteration counts for bandwidth (IMB/nccl-tests conventions) */
    double (*bytes)(const mb_ctx *c);
    /* bus-bandwidth factor (DESIGN.md); 0 means "not reported" */
    double (*busbw)(int np);
    double msgs_per_iter; /* >0: report a message rate = msgs_per_iter / time */
    /* validation: fill this rank's send buffer for iteration it, then check what it received.
     * check returns the index (in elements) of the first bad element, or -1 if all is well;
     * *expected and *got describe that element. */
    void (*fill)(mb_ctx *c, int it);
    int64_t (*check)(mb_ctx *c, int it, double *expected, double *got);
    int elem_bytes; /* bytes per element reported by check (1 = byte, 4 = float) */
} mb_bench;

/* Family tables; NULL-name terminated. */
extern const mb_bench mb_pt2pt_benches[];
extern const mb_bench mb_coll_benches[];
/* All family tables, NULL-terminated (args.c): the driver finds, lists and names benchmarks
 * only through this. */
extern const mb_bench *const mb_tables[];

/* Validation patterns shared by the families: a byte that depends on the rank that produced
 * it, its index and the iteration; and a small float for reductions (sums stay exact). */
static inline unsigned char mb_pat(int rank, int64_t i, int it)
{
    return (unsigned char)((uint64_t)rank * 131u + (uint64_t)i * 7u + (uint64_t)it * 29u + 1u);
}
static inline float mb_fpat(int rank, int64_t i, int it)
{
    return (float)((rank + 1) + (int)(i % 13) + 3 * it);
}
/* b[i] = mb_pat(who, i, it) for i < n; and the index of the first byte that differs from it
 * (-1 if none; *expected / *got describe it), both at memory speed (pattern.c) */
void mb_fill_pat(unsigned char *b, int64_t n, int who, int it);
int64_t mb_check_pat(const unsigned char *b, int64_t n, int who, int it, double *expected,
                     double *got);

/* Statistics (stats.c). */
typedef struct mb_summary {
    int64_t n;
    double median, ci_low, ci_high, min, p5, p95, p99, max, mean, std;
    int ci_exact; /* 1 if the CI has its full 95% coverage (see mb_summarise_series) */
    double lag1;  /* lag-1 autocorrelation of the log samples (NaN: n < 3, no spread, x <= 0) */
    double tau;   /* autocorrelation time the CI allows for (1 = independent samples) */
    int64_t n_eff; /* effective sample size n / tau the CI is computed for */
    int stationarity; /* enum mb_stationarity: the launch's series passed the block test? */
    int ci_sized;     /* ci_exact before the stationarity check (enough samples for tau) */
    double stat_chi2, stat_cusum, stat_edge; /* the check's statistics (0: untested) */
} mb_summary;

/* Is the series stationary?  The samples are cut into MB_STAT_BLOCKS consecutive blocks and
 * the share of each block at or below the median is compared with the whole (a chi-square on
 * the block counts, allowing for autocorrelation through the indicator's lag-1 correlation
 * measured inside the blocks, so a level shift does not excuse itself).  Fewer than
 * MB_STAT_MIN_N samples: untested.  A failed test makes the CI approximate (ci_exact false),
 * so a size never stops on "target" with a CI that assumes a level the series did not keep. */
enum mb_stationarity {
    MB_STAT_UNTESTED = 0, /* too few samples to tell */
    MB_STAT_OK,           /* passed */
    MB_STAT_LEVEL_SHIFT,  /* blocks differ, not in one direction: a level shift or switching */
    MB_STAT_DRIFT,        /* blocks differ monotonically: a drift */
    MB_STAT_UNSETTLED,    /* neither statistic at its flag level, one beyond its continue level */
};
#define MB_STAT_BLOCKS 4
#define MB_STAT_MIN_N 40
#define MB_STAT_CRIT 16.266 /* chi-square, 3 df, upper 0.001 */
#ifndef MB_STAT_CUSUM_CRIT
#define MB_STAT_CUSUM_CRIT 1.949 /* sup of a Brownian bridge (Kolmogorov), upper 0.001 */
#endif
/* The continue level: evidence beyond it but short of the flag level leaves the check
 * "unsettled": no stop on the target (ci_exact false) while it lasts, so a level change in the
 * last round gets the post-change samples that settle it one way or the other; a launch whose
 * budget ends while unsettled keeps the approximate CI and says so. */
#define MB_STAT_CRIT_CONT 11.345     /* chi-square, 3 df, upper 0.01 */
#define MB_STAT_CUSUM_CONT 1.628     /* Kolmogorov, upper 0.01 */
/* The edge CUSUM: the rank CUSUM's partial sums each over its own sd, from MB_STAT_EDGE
 * samples of either end; its upper 0.01 critical value by n (mb_edge_crit) is a continue
 * level only: it keeps a launch sampling, and never flags alone */
#define MB_STAT_EDGE 5
double mb_edge_crit(int64_t n);
/* sorted: the same samples sorted (NULL: sorted here); *chi2 the block statistic, *cusum the
 * rank CUSUM's, *edge the edge CUSUM's (all 0 when untested) */
int mb_stationarity_check(const double *x, const double *sorted, int64_t n, double m,
                          double *chi2, double *cusum, double *edge);
const char *mb_stationarity_name(int s); /* JSON spelling */

int mb_median_ci_ranks(int64_t n, double level, int64_t *lo, int64_t *hi);
/* independent samples, already sorted: order-statistic CI over all n */
void mb_summarise(double *sorted, int64_t n, mb_summary *s);
/* samples in the order they were taken (scratch: n doubles): the CI allows for
 * autocorrelation through an effective sample size */
void mb_summarise_series(const double *x, double *scratch, int64_t n, mb_summary *s);
double mb_lag1_log(const double *x, int64_t n);
double mb_tau_indicator(const double *x, int64_t n, double m);
/* coverage of the within-launch CI under the stopping rule, on AR(1) log-normal series */
typedef struct mb_ci_sim {
    double phi;            /* lag-1 autocorrelation of the log series */
    int kind;              /* 0 AR(1) phi; 1 level switching, probability q per sample;
                            * 2 drift over the whole cap (q: total drift in sd units) */
    double q;
    double flagged;        /* share of trials ending with ci_exact false (approximate CI) */
    double covered_or_flagged; /* share of trials whose CI covers or says it is approximate */
    double not_stationary; /* share of trials whose final stationarity check failed */
    double switched;       /* switching: share of trials whose level changed within the run */
    double covered_or_flagged_switched; /* covered_or_flagged among those (NaN: none) */
    double level_coverage_unswitched;   /* the rest: CI holds the level they sat in */
    /* the two estimands, side by side (the CI's "covered" above is the long run's under
     * AR(1) and switching, the launch's own under drift): the launch's own median, of the
     * levels its samples came from (switching: the median of that mix of the two levels;
     * drift: the level at the middle of its samples; AR(1): the process median), and the
     * long-run median of the process (1; drift: the level at the middle of the cap) */
    double own_coverage, own_covered_or_flagged;
    double long_run_coverage, long_run_covered_or_flagged;
    /* switching: the share of runs that changed level within their samples or whose CI holds
     * the long-run median anyway: the most any within-launch flag can make of (ii) without
     * flagging launches that kept one level */
    double long_run_reachable;
    int trials;
    int robust;            /* 1: mb_summarise_series' CI; 0: the order-statistic CI alone */
    int flag_only;         /* robust: the rule before (block test and rank CUSUM at 0.001) */
    double mean_n;         /* samples at the stop, mean over trials */
    double *medians;       /* optional, trials long: each trial's final median */
    double *ci_lows, *ci_highs; /* optional, trials long: each trial's final CI */
    double coverage;       /* share of trials whose final CI holds the true median */
    double median_n;       /* samples at the stop, median over trials */
    double stopped_target; /* share of trials that stopped on the target */
} mb_ci_sim;
void mb_ci_simulate(mb_ci_sim *sim, uint64_t seed);
int mb_ci_simulation_print(int trials);
int mb_sort_doubles(double *v, int64_t n);
double mb_quantile(const double *sorted, int64_t n, double q);
int mb_stats_selftest(void);
int mb_selftest_report(const char *check, int ok, const char *detail);

/* Stopping and batch growth (stop.c): pure functions of what rank 0 knows after a round, so
 * --self-test can drive them without MPI.  Why a size stopped is a named reason. */
enum mb_stop {
    MB_CONTINUE = 0,     /* keep sampling */
    MB_STOP_TARGET,      /* the CI of the median is within --target */
    MB_STOP_MAX_TIME,    /* the per-size budget is spent */
    MB_STOP_MAX_SAMPLES, /* the sample cap */
    MB_STOP_ITERATIONS,  /* fixed-count mode: all iterations done */
    MB_REBATCH,          /* not a stop: batches got too short, grow k and start over */
    MB_STOP_FUTILE,      /* --futility: the target is out of reach within the budget */
    MB_STOP_UNSETTLED,   /* the CI was within --target, the stationarity check stayed
                          * unsettled for MB_HOLD_ROUNDS more rounds: CI approximate */
    MB_STOP_APPROXIMATE, /* --accept-approximate: the CI was within --target after
                          * --min-samples but approximate (not sized for the samples'
                          * autocorrelation, or the series moved); it stays approximate */
    MB_STOP_PREEMPTED,   /* --exclude-preempted: --preempted-max-time spent before the size
                          * had the unflagged samples it needs (mb_clean_needed); in
                          * fixed-count mode: the count done with fewer than
                          * MB_FLOOR_SAMPLES unflagged samples (driver.c fixed_stop) */
};
/* rounds a launch keeps sampling past a CI within the target while its stationarity check is
 * unsettled (one round is a quarter more samples: enough for a change in the last round to
 * be flagged by the block shares or the rank CUSUM) */
#define MB_HOLD_ROUNDS 1
const char *mb_stop_name(enum mb_stop s); /* JSON spelling; NULL when not a stop */

typedef struct mb_stop_rule {
    double target_pct; /* --target */
    double max_time;   /* --max-time, seconds */
    int64_t min_samples, cap;
    int futility;
    int accept_approximate; /* --accept-approximate */
    int exclude_preempted;  /* --exclude-preempted: n counts unflagged samples only */
    double preempt_time;    /* --preempted-max-time: how far past max_time it may sample */
} mb_stop_rule;

typedef struct mb_progress {
    int64_t n;                      /* samples so far */
    double median, ci_low, ci_high; /* the statistic and its 95% CI */
    int ci_exact;                   /* the CI has its full coverage (stationarity included) */
    double spent;                   /* seconds spent on this size since calibration began */
    int ci_sized;                   /* enough samples for the CI, stationary or not (futility) */
    int unsettled;                  /* the stationarity check is unsettled (MB_STAT_UNSETTLED) */
    int held;                       /* rounds held so far (mb_held, the caller counts them) */
    int budget_set;                 /* max_time has been spent (budget_n holds) */
    int64_t budget_n;               /* samples taken, flagged ones included, when max_time
                                     * was first spent (0 when every one was late) */
} mb_progress;

enum mb_stop mb_adaptive_stop(const mb_stop_rule *rule, const mb_progress *p);
/* this round holds the launch: its CI is within the target but the check is unsettled.  The
 * caller counts consecutive such rounds into p->held (0 after any other round) */
int mb_held(const mb_stop_rule *rule, const mb_progress *p);
/* samples in the next adaptive round: a quarter more (at least 8, or up to min_samples),
 * within the time left (per_sample_s: last round's wall time per sample) and the cap */
int64_t mb_next_round(const mb_stop_rule *rule, int64_t n, double per_sample_s, double left_s);
/* samples in the first adaptive round: min_samples, fewer when that many would overrun the
 * time left (est_sample_s: one sample, from calibration), never fewer than MB_FLOOR_SAMPLES */
#define MB_FLOOR_SAMPLES 5
int64_t mb_first_round(const mb_stop_rule *rule, double est_sample_s, double left_s);
/* --exclude-preempted: the unflagged samples a size needs before it may stop on max_time:
 * --min-samples, or fewer when the budget had given fewer samples in all (flagged included),
 * so a size without a flagged sample stops exactly where it would without the option */
int64_t mb_clean_needed(const mb_stop_rule *rule, const mb_progress *p);
/* the time a size may still sample: up to max_time, and with --exclude-preempted up to
 * preempt_time while it lacks unflagged samples */
double mb_time_left(const mb_stop_rule *rule, const mb_progress *p);
/* the next adaptive round after the one p describes (per_sample_s: its wall time per sample):
 * mb_next_round within mb_time_left, or, past max_time with unflagged samples missing, the
 * missing ones, at least 8 (within preempt_time) */
int64_t mb_round_after(const mb_stop_rule *rule, const mb_progress *p, double per_sample_s);
/* Per-sample preemption flags from one round's involuntary context switches (max over the
 * active ranks of each sample's window; the windows tile the round's samples): sample s is
 * flagged when window s or window s-1 saw a switch, or when barrier[s] did: the switches
 * inside the barrier that starts sample s (0 where no barrier does).  A responder switched
 * out after its last reply of a sample is counted in that sample's window, while the
 * initiator's next sample waits for it: hence s-1.  A barrier does not release the ranks
 * together (with 2 ranks rank 0 leaves as soon as rank 1 has arrived): a rank switched out
 * in it delays the first messages of the sample it starts, and no other, so barrier[s]
 * flags sample s alone (not s+1, and not across rounds).  Returns the flagged count, or -1
 * when some rank could not read its counter (a value >= MB_NIVCSW_NONE): then nothing is
 * flagged. */
#define MB_NIVCSW_NONE 1e300
int64_t mb_flag_preempted(const double *nivcsw, const double *barrier, int64_t R,
                          unsigned char *flag);
/* the batch-growth rule: k unchanged when a batch of k lasts >= floor_us (or k is at kmax);
 * else k x (1.5 floor / batch) within [2x, 64x], at most kmax */
int64_t mb_grow_batch(int64_t k, double batch_us, double floor_us, int64_t kmax);
/* fixed-count mode: the smallest batch >= k that divides total */
int64_t mb_fixed_batch(int64_t k, int64_t total);
/* settling (driver.c): untimed chunks of at most MB_SETTLE_CHUNK iterations until
 * mb_settle_done is true or mb_settle_next says stop.  mb_settle_done: done iterations so
 * far, the last chunk with a page fault on some rank ended at last_fault (0: none); true
 * once the fault-free iterations since then are >= MB_SETTLE_QUIET and >= last_fault.
 * mb_settle_next: the next chunk's iterations, 0 to stop, from the MAX over ranks of the
 * last chunk (chunk iterations in chunk_s seconds, its reduction included; spent_s since
 * the size began; faulted: a page fault in it): settling may run until MB_SETTLE_SHARE of
 * max_time while fault-free, MB_SETTLE_LIMIT of it while the chunks still fault, and a chunk
 * is cut to the iterations that fit in the time left at the last chunk's time per
 * iteration (none fit: stop), so it ends near that bound, not a whole chunk past it */
#define MB_SETTLE_QUIET 64
#define MB_SETTLE_CHUNK 64
#define MB_SETTLE_SHARE 0.25
#define MB_SETTLE_LIMIT 0.5
int64_t mb_settle_next(int64_t chunk, double chunk_s, double spent_s, int faulted,
                       double max_time);
int mb_settle_done(int64_t done, int64_t last_fault);
int mb_stop_selftest(void);

/* JSON writer (json.c): appends to a growable buffer, written out as one line. */
typedef struct mb_json {
    char *buf;
    size_t len, cap;
    int need_comma;
} mb_json;

void mj_init(mb_json *j);
void mj_free(mb_json *j);
void mj_obj_begin(mb_json *j);
void mj_obj_end(mb_json *j);
void mj_arr_begin(mb_json *j, const char *key);
void mj_arr_end(mb_json *j);
void mj_key_obj(mb_json *j, const char *key);
void mj_str(mb_json *j, const char *key, const char *v);
void mj_num(mb_json *j, const char *key, double v); /* NaN/inf -> null */
void mj_num_exact(mb_json *j, const char *key, double v); /* round-trip exact */
void mj_int(mb_json *j, const char *key, int64_t v);
void mj_bool(mb_json *j, const char *key, int v);
void mj_null(mb_json *j, const char *key);
void mj_raw(mb_json *j, const char *key, const char *raw);

#endif

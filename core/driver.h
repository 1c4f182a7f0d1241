/* mpibench-core: the driver's parts and the one struct that holds its state.
 *
 *   driver.c    main, the benchmark x size loop, one size's measurement
 *   args.c      command line, usage, --list (names come from the descriptor tables)
 *   stop.c      stopping rules and batch growth: pure functions, covered by --self-test
 *   buffers.c   per-size buffers: memory limit, off-cache pool, page touching
 *   clock.c     timer calibration, clock offsets (--sync window), the watchdog
 *   output.c    JSON Lines records and the IMB-style text view
 *
 * Nothing here is seen by the benchmark families (pt2pt.c, coll.c): they only know mb.h.
 */
#ifndef MB_DRIVER_H
#define MB_DRIVER_H

#include "mb.h"

#include <stdatomic.h>
#include <stdio.h>
#include <threads.h>

#define MB_MAX_BENCH 64
#define MB_MAX_SIZES 256

typedef struct mb_options {
    const mb_bench *bench[MB_MAX_BENCH];
    int nbench;
    int64_t sizes[MB_MAX_SIZES];
    int nsizes;
    const char *sizes_spec;
    double target_pct, max_time, timeout, batch_us;
    int64_t min_samples, max_samples, warmup, iterations, iterations_volume;
    int validate, off_cache, root_shift, quiet, list, self_test, futility;
    int settle; /* warm the library's own memory before timing (--no-settle: off) */
    int sync_mode;   /* --sync: MB_SYNC_AUTO, MB_SYNC_BARRIER or MB_SYNC_WINDOW */
    int list_options; /* --list-options: print the option table as JSON lines, exit */
    int per_call; /* --per-call: k = 1, every sample is one call timed alone */
    int accept_approximate; /* --accept-approximate: stop on a CI within --target, exact or not */
    int exclude_preempted; /* --exclude-preempted: flagged samples kept out of the statistic */
    double preempt_time;   /* --preempted-max-time (0: 10 x --max-time) */
    double state_ms;       /* --state-ms: the machine-state reading's length (0: none) */
    int thread_level; /* requested from MPI_Init_thread (default MPI_THREAD_SINGLE) */
    int64_t mem_limit; /* 0 = automatic */
    const char *jsonl;
    int64_t debug_corrupt, debug_stall;
    int debug_large;
    int64_t ci_simulation; /* --ci-simulation TRIALS: print coverage figures, exit */
} mb_options;

/* --sync: how samples start.  auto: a barrier before each round of samples for pair_sync
 * benchmarks, before each sample for the rest; barrier: before each sample for all. */
enum mb_sync { MB_SYNC_AUTO, MB_SYNC_BARRIER, MB_SYNC_WINDOW };

typedef struct mb_timer {
    double overhead_us, resolution_us, wtick_us, min_interval_us;
    double calibration_us; /* the calibration's own wall time, max over ranks */
} mb_timer;

/* Where the run is, for the watchdog thread (it reads these while the main thread works). */
enum mb_stage { MB_STAGE_FIRST, MB_STAGE_VALIDATE, MB_STAGE_CALIBRATE, MB_STAGE_WARMUP,
                MB_STAGE_MEASURE, MB_STAGE_SETTLE, MB_STAGE_SETUP, MB_STAGE_STATS,
                MB_NSTAGES };

/* One benchmark's buffers, allocated and touched once for all its sizes (mb_bench_buffers),
 * with every size's memory figure: sizes run in ascending order, so per-size allocation
 * page-faulted (and agreed on with three collectives) the same memory again at every size. */
typedef struct mb_bench_bufs {
    int ready;                        /* 0: every size allocates its own (--off-cache) */
    unsigned char *s, *r;
    int64_t need_max[MB_MAX_SIZES];   /* per size index: largest per-rank need over ranks */
    int64_t limit_min;                /* the memory limit, smallest over ranks */
    int bad_alloc;                    /* some rank could not allocate */
    int64_t bad_bytes;                /* what that allocation asked for, per rank (max) */
} mb_bench_bufs;

/* One machine-state reading of ranks 0 and 1 (state.c), rank 0's copy */
typedef struct mb_state_reading {
    int taken;                 /* 0: none (state.c says when) */
    int cpu_a, cpu_b;          /* where ranks 0 and 1 ran (sched_getcpu) */
    int64_t samples;
    double median_ns, q1_ns, q3_ns, min_ns, elapsed_ms;
} mb_state_reading;

/* The whole run's state: the only mutable state in the program, one instance in driver.c. */
typedef struct mb_state {
    mb_options opt;
    int rank, np;
    int thread_provided;
    mb_timer timer;
    double init_us; /* rank 0: MPI_Init_thread's wall time, max over ranks */
    FILE *json; /* rank 0 only */
    FILE *text; /* rank 0 only, NULL when --quiet */
    mtx_t out_mtx;
    long long start_ns;
    atomic_llong deadline_ns; /* 0 = watchdog disarmed */
    atomic_int wd_stop;
    atomic_int wd_looks;   /* how often the watchdog woke to look (the footer's watchdog_looks) */
    mtx_t wd_mtx; /* with wd_cnd: the watchdog's sleep, which the end of the run cuts short */
    cnd_t wd_cnd;
    const mb_bench *volatile cur_b;
    volatile int64_t cur_size;
    volatile int cur_stage;
    /* rank 0's wall time per stage within the current size (mb_set_stage accounts it from
     * phase_since_ns while phase_on; run_size copies it into the result's phases_s) */
    int phase_on;
    long long phase_since_ns;
    long long phase_ns[MB_NSTAGES];
    mb_bench_bufs bufs; /* the current benchmark's buffers */
    MPI_Comm state_comm;   /* ranks 0 and 1 when they share a cache line (state.c) */
    MPI_Win state_win;
    void *state_line;
    mb_state_reading state_start, state_end; /* the launch's machine-state readings */
} mb_state;

/* One benchmark x size: what output.c writes. */
typedef struct mb_result {
    const char *status;
    char reason[512];
    int64_t batch, warmup, n, iters_total;
    double first_us;
    double *samples; /* rank 0: per-iteration time, max over ranks */
    mb_summary s;
    enum mb_stop stop; /* MB_CONTINUE = not measured */
    int validated, valid_ok, bad_rank, bad_it;
    int64_t bad_index;
    double bad_expected, bad_got;
    double rank_min_us, rank_max_us, rank_avg_us;
    int pool;
    double timer_fraction;
    int64_t mem_per_rank;
    int buf_offset[2]; /* rank 0: send and receive buffer's offset within a 4 KiB page */
    int rebatches;
    double elapsed_s;           /* wall time spent on this size, set-up to statistics */
    double phase_s[MB_NSTAGES]; /* elapsed_s split by stage (rank 0's clock) */
    double floor_us;            /* shortest batch interval allowed for this benchmark */
    int64_t late;               /* --sync window: samples dropped because a rank started late */
    int64_t preempted;          /* samples flagged preempted (mb_flag_preempted), of the kept
                                 * (not late) ones; with --exclude-preempted dropped as well */
    int preempt_na;             /* some rank could not count its context switches */
    double clock_offset_max_us; /* --sync window: largest |offset| to rank 0's clock */
    int large;                  /* the MPI-4 large-count (_c) calls were used */
    int settled;                /* settling ended on a fault-free stretch, not its budget */
    int64_t settle_iters;       /* iterations run to settle (untimed, discarded) */
    int64_t settle_faults;      /* page faults while settling (max over ranks, per chunk) */
    int64_t sample_faults;      /* page faults while the timed rounds ran (max over ranks) */
} mb_result;

/* A size's buffers: `copies` send/receive pairs (more than one with --off-cache). */
typedef struct mb_pool {
    unsigned char *s, *r;
    int64_t sstride, rstride;
    int copies;
    int borrowed; /* a view of the benchmark's buffers (mb_bench_buffers): not freed */
} mb_pool;

/* args.c */
int mb_parse_args(int argc, char **argv, mb_options *o); /* 0 ok, -1 --help, 2 bad */
int64_t mb_parse_bytes(const char *s);
int mb_is_rank0_env(void);
void mb_list(FILE *f);
const char *mb_thread_level_name(int level);
const char *mb_family_name(const mb_bench *b);

/* buffers.c */
int64_t mb_llc_bytes(void);
int mb_pool_alloc(mb_state *st, mb_ctx *c, mb_pool *p, mb_result *r, int size_index);
/* the context of one size on MPI_COMM_WORLD (root 0), as benchmarks and bufsize see it */
void mb_ctx_init(mb_ctx *c, const mb_state *st, int64_t size);
void mb_bench_buffers(mb_state *st, const mb_bench *b);
void mb_bench_buffers_free(mb_state *st);
void mb_pool_use(mb_ctx *c, const mb_pool *p, int64_t it);
void mb_pool_free(mb_pool *p);

/* clock.c */
long long mb_now_ns(void);
mb_timer mb_calibrate_timer(void);
double mb_clock_offset(const mb_state *st);
int mb_watchdog(void *state);
void mb_watchdog_stop(mb_state *st, thrd_t wd); /* wakes the watchdog and joins it */
void mb_arm(mb_state *st, const mb_bench *b, int64_t size);
void mb_disarm(mb_state *st);
void mb_set_stage(mb_state *st, enum mb_stage s);
int64_t mb_page_faults(void);
double mb_nivcsw(void);        /* MB_NIVCSW_NONE where getrusage(RUSAGE_THREAD) is missing */
int mb_nivcsw_available(void); /* built with RUSAGE_THREAD */
const char *mb_stage_name(int s);

/* state.c */
void mb_state_open(mb_state *st);
void mb_state_close(mb_state *st);
void mb_state_read(mb_state *st, mb_state_reading *out);
void mb_state_emit(mb_json *j, const char *key, const mb_state_reading *r);

/* output.c */
void mb_emit_header(mb_state *st, int argc, char **argv);
void mb_emit_result(mb_state *st, const mb_bench *b, int64_t size, const mb_result *r);
void mb_text_bench_header(const mb_state *st, const mb_bench *b);
void mb_footer(mb_state *st, const char *status);

#endif

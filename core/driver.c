/* mpibench-core driver: argument parsing, the size loop, timing, adaptive stopping,
 * statistics, the watchdog and output.  Benchmarks live in descriptor tables (pt2pt.c,
 * coll.c); nothing here knows what a benchmark does beyond its descriptor.
 *
 * Timing model (docs/core-output.md has the long version):
 *   - a sample is a batch of k iterations timed as one interval; k is chosen per size by rank 0
 *     so that the timer's cost is under 1% of the interval, and broadcast;
 *   - sample value = max over ranks of (batch time / k), combined with an element-wise
 *     MPI_Reduce(MAX) after each round of samples, never inside the timed loop;
 *   - a barrier separates samples, outside the timed interval;
 *   - warm-up samples are discarded and counted; the first iteration is timed alone;
 *   - rank 0 decides when to stop from the 95% CI of the median and broadcasts the decision.
 */
#define _POSIX_C_SOURCE 200809L

#include "mb.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

#define MAX_BENCH 64
#define MAX_SIZES 256

typedef struct options {
    const mb_bench *bench[MAX_BENCH];
    int nbench;
    int64_t sizes[MAX_SIZES];
    int nsizes;
    const char *sizes_spec;
    double target_pct, max_time, timeout, batch_us;
    int64_t min_samples, max_samples, warmup, iterations, iterations_volume;
    int validate, off_cache, root_shift, quiet, list, self_test, sync_window, futility;
    int thread_level; /* requested from MPI_Init_thread (default MPI_THREAD_SINGLE) */
    int64_t mem_limit; /* 0 = automatic */
    const char *jsonl;
    int64_t debug_corrupt, debug_stall;
    int debug_large;
} options;

/* ---- the driver's state (the only global state in the program) ---- */
static options O;
static int g_rank, g_np;
static int g_thread_provided;
static FILE *g_json;  /* rank 0 only */
static FILE *g_text;  /* rank 0 only, NULL when --quiet */
static mtx_t g_out_mtx;
static long long g_start_ns;
static atomic_llong g_deadline_ns;    /* 0 = watchdog disarmed */
static atomic_int g_wd_stop;
static const char *volatile g_cur_bench = "";
static const mb_bench *volatile g_cur_b;
static volatile int64_t g_cur_size;
static const char *volatile g_cur_stage = "";

static const char *stage_names[] = {"first", "validate", "calibrate", "warmup", "measure"};

static int is_rank0_env(void)
{
    const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v)
            return strcmp(v, "0") == 0;
    }
    return 1;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpibench-core [options] BENCHMARK... | all\n"
            "  benchmarks (case-insensitive): PingPong PingPing Sendrecv Exchange Uniband Biband\n"
            "    Allreduce Reduce Reduce_scatter Allgather Allgatherv Gather Gatherv Scatter\n"
            "    Scatterv Alltoall Alltoallv Bcast Barrier\n"
            "  --sizes SPEC          log2 range A:B (0 only if A==0, then 2^A..2^B) or list 0,8,1K,1M\n"
            "                        (default 0:22; K/M/G = 2^10/2^20/2^30)\n"
            "  --target PCT          stop when the 95%% CI of the median is within +-PCT (default 1)\n"
            "  --max-time SEC        time budget per size for sampling (default 1)\n"
            "  --min-samples N       (default 10)    --max-samples N (default 100000)\n"
            "  --warmup N            warm-up samples per size, discarded (default 2)\n"
            "  --iterations N        fixed count: N iterations per size (IMB-like), no adaptive stop\n"
            "  --iterations-volume B with --iterations: at most B/size iterations per size, min 1\n"
            "                        (IMB's rule is --iterations 1000 --iterations-volume 40M)\n"
            "  --timeout SEC         watchdog per size (default 60): record a timeout and exit 1\n"
            "  --batch-us US         point-to-point batches last at least US (default 20);\n"
            "                        every batch also keeps the timer under 1%% of it\n"
            "  --sync barrier|window how samples start: a barrier before each (default), or at\n"
            "                        scheduled times on clocks synchronised to rank 0\n"
            "  --thread-level L      single (default), funneled, serialized or multiple: what\n"
            "                        MPI_Init_thread requests (Open MPI takes locks above single)\n"
            "  --futility            stop a size early (stop_reason futile) when its CI cannot\n"
            "                        plausibly reach --target within --max-time\n"
            "  --no-validate         skip the untimed validation pass\n"
            "  --off-cache           rotate through a buffer pool larger than the last-level cache\n"
            "  --root-shift          rotate the root of rooted collectives every iteration\n"
            "  --mem-limit BYTES     per-rank buffer limit (K/M/G); larger sizes are skipped\n"
            "                        (default 75%% of physical memory / np)\n"
            "  --jsonl FILE          write JSON Lines (schema docs/core-output.md); '-' = stdout\n"
            "                        (the text view then goes to stderr)\n"
            "  --quiet               no text table\n"
            "  --list                list benchmarks and exit\n"
            "  --self-test           run the statistics self-test (no MPI) and exit\n"
            "  --debug-corrupt SIZE  DEBUG ONLY: corrupt one received element at SIZE (validation)\n"
            "  --debug-stall SIZE    DEBUG ONLY: the last rank stalls at SIZE (watchdog)\n"
            "  --debug-large-count   DEBUG ONLY: treat every size as above INT_MAX (MPI-4 _c\n"
            "                        calls on MPI-4 stacks, 'unsupported' on MPI-3 stacks)\n"
            "exit status: 0 ok, 1 validation failure or timeout, 2 bad arguments\n");
}

static const char *thread_level_names[] = {"single", "funneled", "serialized", "multiple"};
static const int thread_levels[] = {MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED,
                                    MPI_THREAD_SERIALIZED, MPI_THREAD_MULTIPLE};

static int thread_level_of(const char *name)
{
    for (int i = 0; i < 4; i++)
        if (!strcmp(name, thread_level_names[i]))
            return thread_levels[i];
    return -1;
}

static const char *thread_level_name(int level)
{
    for (int i = 0; i < 4; i++)
        if (level == thread_levels[i])
            return thread_level_names[i];
    return "unknown";
}

static int arg_error(const char *fmt, const char *a, const char *b)
{
    if (is_rank0_env()) {
        fprintf(stderr, "mpibench-core: ");
        fprintf(stderr, fmt, a, b);
        fprintf(stderr, "\n");
    }
    return 2;
}

/* "4K" -> 4096; returns -1 when malformed or negative or overflowing */
static int64_t parse_bytes(const char *s)
{
    const char *p = s;
    while (isspace((unsigned char)*p))
        p++;
    if (!isdigit((unsigned char)*p))
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(p, &end, 10);
    if (errno)
        return -1;
    while (isspace((unsigned char)*end))
        end++;
    int shift = 0;
    char u = (char)toupper((unsigned char)*end);
    if (u == 'K' || u == 'M' || u == 'G' || u == 'T') {
        shift = u == 'K' ? 10 : u == 'M' ? 20 : u == 'G' ? 30 : 40;
        end++;
        if (toupper((unsigned char)end[0]) == 'I' && toupper((unsigned char)end[1]) == 'B')
            end += 2;
    } else if (u == 'B') {
        end++;
    }
    while (isspace((unsigned char)*end))
        end++;
    if (*end)
        return -1;
    if (v > ((unsigned long long)INT64_MAX >> shift))
        return -1;
    return (int64_t)(v << shift);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int parse_sizes(const char *spec, options *o)
{
    o->nsizes = 0;
    const char *colon = strchr(spec, ':');
    if (colon) {
        char a[32], b[32];
        size_t la = (size_t)(colon - spec);
        if (la == 0 || la >= sizeof a || strlen(colon + 1) == 0 || strlen(colon + 1) >= sizeof b)
            return arg_error("bad --sizes range '%s'%s: expected MIN:MAX log2 exponents, e.g. 0:22",
                             spec, "");
        memcpy(a, spec, la);
        a[la] = 0;
        strcpy(b, colon + 1);
        for (char *p = a; *p; p++)
            if (!isdigit((unsigned char)*p))
                return arg_error("bad --sizes range '%s'%s: expected MIN:MAX log2 exponents, "
                                 "e.g. 0:22", spec, "");
        for (char *p = b; *p; p++)
            if (!isdigit((unsigned char)*p))
                return arg_error("bad --sizes range '%s'%s: expected MIN:MAX log2 exponents, "
                                 "e.g. 0:22", spec, "");
        long lo = strtol(a, NULL, 10), hi = strtol(b, NULL, 10);
        if (lo > hi)
            return arg_error("bad --sizes range '%s'%s: MIN is larger than MAX", spec, "");
        if (hi > 40)
            return arg_error("bad --sizes range '%s'%s: MAX must be <= 40 (1 TiB)", spec, "");
        if (lo == 0)
            o->sizes[o->nsizes++] = 0;
        for (long e = lo; e <= hi; e++)
            o->sizes[o->nsizes++] = (int64_t)1 << e;
    } else {
        char buf[4096];
        if (strlen(spec) == 0 || strlen(spec) >= sizeof buf)
            return arg_error("bad --sizes '%s'%s: expected a list such as 0,8,1K,1M or a range 0:22",
                             spec, "");
        strcpy(buf, spec);
        char *save = NULL;
        int ntok = 0;
        for (char *t = buf;; t = NULL) {
            char *tok = strtok_r(t, ",", &save);
            if (!tok)
                break;
            ntok++;
            int64_t v = parse_bytes(tok);
            if (v < 0)
                return arg_error("bad size '%s' in --sizes %s: expected a byte count such as 0, "
                                 "64, 4K, 1M or 2G", tok, spec);
            /* 1 TiB, as the range form: keeps size x ranks far from int64 overflow */
            if (v > INT64_C(1) << 40)
                return arg_error("bad size '%s' in --sizes %s: sizes must be <= 1T (2^40 bytes)",
                                 tok, spec);
            if (o->nsizes >= MAX_SIZES)
                return arg_error("too many sizes in --sizes %s%s (max 256)", spec, "");
            o->sizes[o->nsizes++] = v;
        }
        /* empty items ("1,,2", trailing comma) are errors too */
        int commas = 0;
        for (const char *p = spec; *p; p++)
            commas += *p == ',';
        if (ntok != commas + 1)
            return arg_error("bad --sizes '%s'%s: empty item in the list", spec, "");
    }
    qsort(o->sizes, (size_t)o->nsizes, sizeof(int64_t), cmp_i64);
    int w = 0;
    for (int i = 0; i < o->nsizes; i++)
        if (w == 0 || o->sizes[w - 1] != o->sizes[i])
            o->sizes[w++] = o->sizes[i];
    o->nsizes = w;
    return 0;
}

static const mb_bench *find_bench(const char *name)
{
    const mb_bench *tables[] = {mb_pt2pt_benches, mb_coll_benches};
    for (int t = 0; t < 2; t++)
        for (const mb_bench *b = tables[t]; b->name; b++) {
            const char *x = b->name, *y = name;
            while (*x && *y && tolower((unsigned char)*x) == tolower((unsigned char)*y))
                x++, y++;
            if (!*x && !*y)
                return b;
        }
    return NULL;
}

static void add_bench(options *o, const mb_bench *b)
{
    for (int i = 0; i < o->nbench; i++)
        if (o->bench[i] == b)
            return;
    o->bench[o->nbench++] = b;
}

static int num_arg(const char *opt, const char *v, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double x = v ? strtod(v, &end) : NAN;
    if (!v || errno || end == v || *end || !(x >= lo && x <= hi)) {
        char range[96];
        snprintf(range, sizeof range, "a number in [%g, %g]", lo, hi);
        if (is_rank0_env())
            fprintf(stderr, "mpibench-core: bad value '%s' for %s: expected %s\n",
                    v ? v : "(missing)", opt, range);
        return 2;
    }
    *out = x;
    return 0;
}

static int int_arg(const char *opt, const char *v, int64_t lo, int64_t hi, int64_t *out)
{
    int64_t x = v ? parse_bytes(v) : -1;
    if (x < lo || x > hi) {
        if (is_rank0_env())
            fprintf(stderr, "mpibench-core: bad value '%s' for %s: expected an integer in "
                    "[%lld, %lld]\n", v ? v : "(missing)", opt, (long long)lo, (long long)hi);
        return 2;
    }
    *out = x;
    return 0;
}

static int parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->target_pct = 1.0;
    o->max_time = 1.0;
    o->timeout = 60.0;
    o->batch_us = 20.0;
    o->min_samples = 10;
    o->max_samples = 100000;
    o->warmup = 2;
    o->validate = 1;
    o->debug_corrupt = -1;
    o->debug_stall = -1;
    o->sizes_spec = "0:22";
    o->thread_level = MPI_THREAD_SINGLE;
    int rc;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEEDV() do { if (!v) return arg_error("option %s needs a value%s", a, ""); i++; } while (0)
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            if (is_rank0_env())
                usage(stdout);
            return -1;
        } else if (!strcmp(a, "--sizes")) {
            NEEDV();
            o->sizes_spec = v;
        } else if (!strcmp(a, "--target")) {
            NEEDV();
            if ((rc = num_arg(a, v, 1e-6, 1000, &o->target_pct)))
                return rc;
        } else if (!strcmp(a, "--max-time")) {
            NEEDV();
            if ((rc = num_arg(a, v, 0, 1e6, &o->max_time)))
                return rc;
        } else if (!strcmp(a, "--batch-us")) {
            NEEDV();
            if ((rc = num_arg(a, v, 0, 1e7, &o->batch_us)))
                return rc;
        } else if (!strcmp(a, "--timeout")) {
            NEEDV();
            if ((rc = num_arg(a, v, 0.001, 1e7, &o->timeout)))
                return rc;
        } else if (!strcmp(a, "--min-samples")) {
            NEEDV();
            if ((rc = int_arg(a, v, 1, 100000000, &o->min_samples)))
                return rc;
        } else if (!strcmp(a, "--max-samples")) {
            NEEDV();
            if ((rc = int_arg(a, v, 1, 100000000, &o->max_samples)))
                return rc;
        } else if (!strcmp(a, "--warmup")) {
            NEEDV();
            if ((rc = int_arg(a, v, 0, 1000000, &o->warmup)))
                return rc;
        } else if (!strcmp(a, "--iterations")) {
            NEEDV();
            if ((rc = int_arg(a, v, 1, INT64_C(1) << 40, &o->iterations)))
                return rc;
        } else if (!strcmp(a, "--iterations-volume")) {
            NEEDV();
            if ((rc = int_arg(a, v, 1, INT64_MAX, &o->iterations_volume)))
                return rc;
        } else if (!strcmp(a, "--mem-limit")) {
            NEEDV();
            if ((rc = int_arg(a, v, 1, INT64_MAX, &o->mem_limit)))
                return rc;
        } else if (!strcmp(a, "--debug-corrupt")) {
            NEEDV();
            if ((rc = int_arg(a, v, 0, INT64_MAX, &o->debug_corrupt)))
                return rc;
        } else if (!strcmp(a, "--debug-stall")) {
            NEEDV();
            if ((rc = int_arg(a, v, 0, INT64_MAX, &o->debug_stall)))
                return rc;
        } else if (!strcmp(a, "--debug-large-count")) {
            o->debug_large = 1;
        } else if (!strcmp(a, "--jsonl")) {
            NEEDV();
            o->jsonl = v;
        } else if (!strcmp(a, "--sync")) {
            NEEDV();
            if (!strcmp(v, "barrier"))
                o->sync_window = 0;
            else if (!strcmp(v, "window"))
                o->sync_window = 1;
            else
                return arg_error("bad value '%s' for --sync%s: expected barrier or window", v, "");
        } else if (!strcmp(a, "--thread-level")) {
            NEEDV();
            if ((o->thread_level = thread_level_of(v)) < 0)
                return arg_error("bad value '%s' for --thread-level%s: expected single, funneled, "
                                 "serialized or multiple", v, "");
        } else if (!strcmp(a, "--futility")) {
            o->futility = 1;
        } else if (!strcmp(a, "--no-validate")) {
            o->validate = 0;
        } else if (!strcmp(a, "--off-cache")) {
            o->off_cache = 1;
        } else if (!strcmp(a, "--root-shift")) {
            o->root_shift = 1;
        } else if (!strcmp(a, "--quiet")) {
            o->quiet = 1;
        } else if (!strcmp(a, "--list")) {
            o->list = 1;
        } else if (!strcmp(a, "--self-test")) {
            o->self_test = 1;
        } else if (a[0] == '-' && a[1]) {
            return arg_error("unknown option '%s'%s; see --help", a, "");
        } else if (!strcasecmp(a, "all")) {
            for (const mb_bench *b = mb_pt2pt_benches; b->name; b++)
                add_bench(o, b);
            for (const mb_bench *b = mb_coll_benches; b->name; b++)
                add_bench(o, b);
        } else {
            const mb_bench *b = find_bench(a);
            if (!b)
                return arg_error("unknown benchmark '%s'%s; expected IMB names: PingPong PingPing "
                                 "Sendrecv Exchange Uniband Biband Allreduce Reduce Reduce_scatter "
                                 "Allgather Allgatherv Gather Gatherv Scatter Scatterv Alltoall "
                                 "Alltoallv Bcast Barrier (or all)", a, "");
            add_bench(o, b);
        }
#undef NEEDV
    }
    if ((rc = parse_sizes(o->sizes_spec, o)))
        return rc;
    if (o->min_samples > o->max_samples)
        return arg_error("--min-samples is larger than --max-samples%s%s", "", "");
    if (!o->iterations && o->timeout <= o->max_time) {
        char t[64], m[64];
        snprintf(t, sizeof t, "%g", o->timeout);
        snprintf(m, sizeof m, "%g", o->max_time);
        return arg_error("--timeout %s s is not longer than --max-time %s s: the watchdog would "
                         "end every size that uses its budget; give --timeout a margin", t, m);
    }
    if (o->iterations_volume && !o->iterations)
        return arg_error("--iterations-volume needs --iterations%s%s", "", "");
    if (!o->nbench && !o->list && !o->self_test)
        return arg_error("no benchmark given%s%s; name one or more (or 'all'); see --help", "", "");
    return 0;
}

/* ---- watchdog ---- */

typedef struct result {
    const char *status;
    char reason[512];
    int64_t batch, warmup, n, iters_total;
    double first_us;
    double *samples;  /* rank 0: per-iteration time, max over ranks */
    mb_summary s;
    const char *stop_reason;
    int validated, valid_ok, bad_rank, bad_it;
    int64_t bad_index;
    double bad_expected, bad_got;
    double rank_min_us, rank_max_us, rank_avg_us;
    int pool;
    double timer_fraction;
    int64_t mem_per_rank;
    int rebatches;
    double elapsed_s; /* wall time spent on this size, set-up to statistics */
    double floor_us;  /* shortest batch interval allowed for this benchmark */
    int64_t late;     /* --sync window: samples dropped because a rank started late */
    double clock_offset_max_us; /* --sync window: largest |offset| to rank 0's clock */
    int large;        /* the MPI-4 large-count (_c) calls were used */
} result;
static void emit_result(const mb_bench *b, int64_t size, const result *r);

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static double elapsed_s(void) { return (double)(now_ns() - g_start_ns) / 1e9; }

static void write_line(mb_json *j)
{
    if (!g_json)
        return;
    fwrite(j->buf, 1, j->len, g_json);
    fputc('\n', g_json);
    fflush(g_json);
}

static void footer(const char *status)
{
    mb_json j;
    mj_init(&j);
    mj_obj_begin(&j);
    mj_str(&j, "record", "footer");
    mj_str(&j, "status", status);
    mj_num(&j, "elapsed_s", elapsed_s());
    mj_obj_end(&j);
    write_line(&j);
    mj_free(&j);
}

static int watchdog(void *arg)
{
    (void)arg;
    while (!atomic_load(&g_wd_stop)) {
        long long dl = atomic_load(&g_deadline_ns);
        /* rank 0 writes the record and exits first; the others give it a head start so the
         * launcher does not kill rank 0 before its record is on disk */
        long long grace = g_rank == 0 ? 0 : 3000000000LL;
        if (dl && now_ns() > dl + grace) {
            if (g_rank == 0) {
                result r;
                memset(&r, 0, sizeof r);
                r.status = "timeout";
                snprintf(r.reason, sizeof r.reason,
                         "watchdog: size did not finish within --timeout %g s (stage: %s)",
                         O.timeout, g_cur_stage);
                r.first_us = r.rank_min_us = r.rank_max_us = r.rank_avg_us = NAN;
                r.timer_fraction = NAN;
                emit_result(g_cur_b, g_cur_size, &r);
                const char *reason = r.reason;
                mtx_lock(&g_out_mtx);
                footer("timeout");
                if (g_json && g_json != stdout)
                    fsync(fileno(g_json));
                if (g_text) {
                    fprintf(g_text, "# TIMEOUT %s size %lld: %s\n", g_cur_bench,
                            (long long)g_cur_size, reason);
                    fflush(g_text);
                }
                fprintf(stderr, "mpibench-core: TIMEOUT in %s at size %lld bytes: %s; exiting\n",
                        g_cur_bench, (long long)g_cur_size, reason);
                fflush(stdout);
                fflush(stderr);
            }
            /* MPI_Abort is not safe from a second thread without MPI_THREAD_MULTIPLE; a process
             * exit makes every launcher (mpirun, hydra) tear the job down. */
            _exit(1);
        }
        struct timespec ts = {0, 20 * 1000 * 1000};
        thrd_sleep(&ts, NULL);
    }
    return 0;
}

static void arm(const mb_bench *b, int64_t size)
{
    g_cur_b = b;
    g_cur_bench = b->name;
    g_cur_size = size;
    atomic_store(&g_deadline_ns, now_ns() + (long long)(O.timeout * 1e9));
}
static void disarm(void) { atomic_store(&g_deadline_ns, 0); }

/* ---- timer calibration ---- */

typedef struct timer_info {
    double overhead_us, resolution_us, wtick_us, min_interval_us;
} timer_info;

static timer_info calibrate_timer(void)
{
    timer_info t;
    const int N = 20000;
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
    double loc[2] = {best * 1e6, res * 1e6}, glob[2];
    MPI_Allreduce(loc, glob, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    t.overhead_us = glob[0];
    t.resolution_us = glob[1];
    t.wtick_us = MPI_Wtick() * 1e6;
    /* the two MPI_Wtime calls of an interval cost at most 2 overheads, and the reading is
     * quantised by the resolution: both must stay under 1% of the interval */
    double cost = fmax(2.0 * t.overhead_us, t.resolution_us);
    t.min_interval_us = 100.0 * cost;
    return t;
}

/* ---- memory ---- */

static int64_t llc_bytes(void)
{
    int64_t best = 0;
    for (int i = 0; i < 8; i++) {
        char path[128], buf[64];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(buf, sizeof buf, f)) {
            int64_t v = parse_bytes(buf);
            if (v > best)
                best = v;
        }
        fclose(f);
    }
    return best > 0 ? best : (int64_t)32 << 20;
}

static int64_t round_page(int64_t x) { return (x + 4095) / 4096 * 4096; }

/* ---- one benchmark x size ---- */



typedef struct pool {
    unsigned char *s, *r;
    int64_t sstride, rstride;
    int copies;
} pool;

static void use_slot(mb_ctx *c, const pool *p, int64_t it)
{
    int64_t slot = p->copies > 1 ? it % p->copies : 0;
    c->sbuf = p->s + slot * p->sstride;
    c->rbuf = p->r + slot * p->rstride;
}

/* Run k iterations; the only code inside the timed interval. */
static inline void run_batch(const mb_bench *b, mb_ctx *c, const pool *p, int64_t k,
                             int64_t *it)
{
    if (!O.off_cache && !O.root_shift) {
        for (int64_t i = 0; i < k; i++)
            b->run(c);
        return;
    }
    for (int64_t i = 0; i < k; i++, (*it)++) {
        if (O.off_cache)
            use_slot(c, p, *it);
        if (O.root_shift)
            c->root = (int)(*it % c->np);
        b->run(c);
    }
}

static void set_stage(int s) { g_cur_stage = stage_names[s]; }

/* --sync window: this rank's clock minus rank 0's, in seconds, from the ping-pong with the
 * smallest round trip among 16 (Cristian's method); 0 on rank 0. */
static double clock_offset(void)
{
    double off = 0.0;
    for (int r = 1; r < g_np; r++) {
        if (g_rank == 0) {
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
        } else if (g_rank == r) {
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

/* --debug-corrupt: flip byte 0 of what one rank received, choosing the highest rank whose
 * check actually reads that byte in this iteration (a non-root rank of Reduce or Gather
 * holds a receive buffer under --root-shift but checks nothing), so the corruption is
 * always caught where a check exists.  Barrier has nothing to corrupt. */
static void debug_corrupt(const mb_bench *b, mb_ctx *c, int64_t rb)
{
    int sensitive = 0;
    if (rb > 0) {
        double e, g;
        c->rbuf[0] ^= 0x5a;
        sensitive = b->check(c, 0, &e, &g) >= 0;
        c->rbuf[0] ^= 0x5a;
    }
    int mine = sensitive ? g_rank : -1, who;
    MPI_Allreduce(&mine, &who, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (who == g_rank)
        c->rbuf[0] ^= 0x5a;
}

static void run_size(const mb_bench *b, int64_t size, const timer_info *ti, result *r)
{
    memset(r, 0, sizeof *r);
    double t_setup = MPI_Wtime();
    r->status = "ok";
    r->first_us = NAN;
    r->timer_fraction = NAN;
    r->rank_min_us = r->rank_max_us = r->rank_avg_us = NAN;
    r->stop_reason = NULL;
    mb_ctx c;
    memset(&c, 0, sizeof c);
    c.comm = MPI_COMM_WORLD;
    c.rank = g_rank;
    c.np = g_np;
    c.size = size;
    c.root = 0;
    c.any_root = O.root_shift;

    if (g_np < b->min_np) {
        r->status = "skipped";
        snprintf(r->reason, sizeof r->reason, "needs at least %d ranks, running with %d",
                 b->min_np, g_np);
        return;
    }
    /* counts beyond INT_MAX: decided before any allocation */
    /* the largest count or displacement the calls take: elements, not bytes (reductions
     * count floats); v-variants' displacements reach (np-1) x size */
    int64_t biggest = b->elem_bytes == 4 ? size / 4 : size;
    if (b->vdispl)
        biggest *= g_np;
    if (biggest > INT_MAX || O.debug_large) {
        if (!MB_HAVE_LARGE) {
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
                         (long long)biggest,
                         lib, ver, sub);
            else
                snprintf(r->reason, sizeof r->reason,
                         "not supported by this stack: --debug-large-count asks for MPI-4 "
                         "large-count calls; %s is MPI-%d.%d", lib, ver, sub);
            return;
        }
        c.large = 1;
        r->large = 1;
    }
    c.counts = calloc((size_t)g_np, sizeof(int));
    c.displs = calloc((size_t)g_np, sizeof(int));
#if MB_HAVE_LARGE
    c.lcounts = calloc((size_t)g_np, sizeof(MPI_Count));
    c.ldispls = calloc((size_t)g_np, sizeof(MPI_Aint));
#endif
    if (b->setup)
        b->setup(&c);
    int64_t sb = 0, rb = 0;
    b->bufsize(&c, &sb, &rb);
    c.sbytes = sb;
    c.rbytes = rb;
    pool p = {0};
    p.sstride = round_page(sb > 0 ? sb : 1);
    p.rstride = round_page(rb > 0 ? rb : 1);
    p.copies = 1;
    if (O.off_cache) {
        int64_t fp = p.sstride + p.rstride;
        int64_t want = (2 * llc_bytes() + fp - 1) / fp;
        p.copies = (int)(want < 2 ? 2 : want > 100000 ? 100000 : want);
    }
    int64_t need = (p.sstride + p.rstride) * p.copies, need_max;
    MPI_Allreduce(&need, &need_max, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    int64_t limit = O.mem_limit, limit_min;
    if (!limit) {
        long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
        limit = pages > 0 && psz > 0 ? (int64_t)((double)pages * (double)psz * 0.75) : INT64_MAX;
        limit /= g_np; /* conservative: assume every rank shares this host */
    }
    MPI_Allreduce(&limit, &limit_min, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
    if (O.off_cache && need_max > limit_min) {
        /* keep the pool as large as memory allows, at least two copies */
        int64_t fp = p.sstride + p.rstride, fpmax;
        MPI_Allreduce(&fp, &fpmax, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
        int64_t fit = limit_min / fpmax;
        if (fit >= 2) {
            p.copies = (int)(fit < p.copies ? fit : p.copies);
            need_max = fpmax * p.copies;
        }
    }
    r->mem_per_rank = need_max; /* after any shrinking of the off-cache pool */
    if (need_max > limit_min) {
        r->status = "skipped";
        snprintf(r->reason, sizeof r->reason,
                 "needs %lld bytes of buffers per rank, over the memory limit of %lld bytes%s",
                 (long long)need_max, (long long)limit_min,
                 O.mem_limit ? " (--mem-limit)" : " (75% of RAM / ranks; raise with --mem-limit)");
        goto out;
    }
    p.s = malloc((size_t)(p.sstride * p.copies));
    p.r = malloc((size_t)(p.rstride * p.copies));
    int bad_alloc = !p.s || !p.r, any_bad;
    MPI_Allreduce(&bad_alloc, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any_bad) {
        r->status = "skipped";
        snprintf(r->reason, sizeof r->reason, "allocating %lld bytes per rank failed",
                 (long long)need_max);
        goto out;
    }
    /* touch every page now so page faults never land in a timed interval */
    memset(p.s, 0, (size_t)(p.sstride * p.copies));
    memset(p.r, 0, (size_t)(p.rstride * p.copies));
    r->pool = p.copies;
    use_slot(&c, &p, 0);

    arm(b, size);

    /* first iteration timed alone (initialisation cost), doubling as validation iteration 0;
     * then validation iteration 1 with a different pattern.  Checking is untimed. */
    r->validated = O.validate;
    r->valid_ok = 1;
    for (int it = 0; it < (O.validate ? 2 : 1); it++) {
        set_stage(it == 0 ? 0 : 1);
        if (O.root_shift)
            c.root = it % g_np;
        if (O.validate) {
            memset(c.rbuf, 0, (size_t)rb);
            b->fill(&c, it);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        b->run(&c);
        double t1 = MPI_Wtime();
        if (it == 0) {
            double loc = (t1 - t0) * 1e6 / b->iter_div, glob;
            MPI_Reduce(&loc, &glob, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            r->first_us = glob;
        }
        if (!O.validate)
            break;
        if (O.debug_corrupt == size && it == 0)
            debug_corrupt(b, &c, rb);
        double e = 0, g = 0;
        int64_t bad = b->check(&c, it, &e, &g);
        int mine = bad >= 0 ? g_rank : g_np, first_bad;
        MPI_Allreduce(&mine, &first_bad, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (first_bad < g_np) {
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
            disarm();
            goto out;
        }
    }
    c.root = 0;

    /* batch size: rank 0 decides from the max over ranks, broadcast to all */
    set_stage(2);
    if (O.debug_stall == size && g_rank == g_np - 1) {
        set_stage(4);
        for (;;) {
            struct timespec ts = {1, 0};
            thrd_sleep(&ts, NULL);
        }
    }
    double tsize0 = MPI_Wtime();
    int64_t it_counter = 0;
    int64_t k = 1;
    int64_t kmax = O.iterations ? O.iterations : INT64_C(1) << 30;
    if (O.iterations && O.iterations_volume) {
        int64_t cap = O.iterations_volume / (size > 0 ? size : 1);
        kmax = cap < 1 ? 1 : cap < O.iterations ? cap : O.iterations;
    }
    int64_t total_iters = O.iterations ? kmax : 0; /* fixed mode: iterations for this size */
    /* one batch per step, max over ranks; k grows until the batch reaches the floor.  A
     * preempted batch can make k too small here: the re-batch check on real samples below
     * catches that, which is cheaper than timing every step several times. */
    /* shortest batch: the timer floor (cost < 1%); point-to-point batches also reach
     * --batch-us, because every sample costs a barrier and on a busy machine a barrier can
     * cost a scheduler time slice, while batching pt2pt iterations changes nothing they
     * measure (IMB and OSU time whole loops).  Collectives batch only to the timer floor. */
    double est_batch_us = 0.0; /* rank 0: latest estimate of one batch's duration */
    double floor_us = ti->min_interval_us;
    if (b->kind == MB_PT2PT && O.batch_us > floor_us)
        floor_us = O.batch_us;
    r->floor_us = floor_us;
    set_stage(2);
    for (int round = 0; round < 40; round++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        run_batch(b, &c, &p, k, &it_counter);
        double t1 = MPI_Wtime();
        double loc1 = (t1 - t0) * 1e6, glob1 = 0;
        MPI_Reduce(&loc1, &glob1, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        est_batch_us = glob1;
        int64_t next[2] = {k, 1};
        if (g_rank == 0) {
            if (glob1 < floor_us && k < kmax) {
                double f = glob1 > 0 ? 1.5 * floor_us / glob1 : 16.0;
                f = f < 2.0 ? 2.0 : f > 64.0 ? 64.0 : f;
                int64_t nk = (int64_t)ceil((double)k * f);
                next[0] = nk > kmax ? kmax : nk;
                next[1] = 0;
            }
            /* never let calibration itself eat the time budget */
            if (!O.iterations && MPI_Wtime() - tsize0 > O.max_time)
                next[1] = 1;
        }
        MPI_Bcast(next, 2, MPI_INT64_T, 0, MPI_COMM_WORLD);
        k = next[0];
        if (next[1])
            break;
    }
    /* warm-up samples, discarded */
    set_stage(3);
    for (int64_t w = 0; w < O.warmup; w++) {
        MPI_Barrier(MPI_COMM_WORLD);
        run_batch(b, &c, &p, k, &it_counter);
    }
    r->warmup = O.warmup;
    /* fixed-count mode runs exactly total_iters iterations: round k up to a divisor */
    if (O.iterations)
        while (total_iters % k)
            k++;
    r->batch = k;

    /* measurement rounds */
    set_stage(4);
    int64_t cap = O.iterations ? (total_iters + k - 1) / k : O.max_samples;
    if (cap < 1)
        cap = 1;
    /* rank 0's sample store grows with n, so a large --max-samples costs nothing unused */
    int64_t room = g_rank == 0 ? 4096 : 0;
    double *all = g_rank == 0 ? malloc(sizeof(double) * (size_t)room) : NULL;
    double *sorted = g_rank == 0 ? malloc(sizeof(double) * (size_t)room) : NULL;
    int64_t n = 0;
#define FIRST_R() (O.iterations ? (cap < 1000 ? cap : 1000) : (O.min_samples < cap ? O.min_samples : cap))
    int64_t R = FIRST_R();
    /* per-sample times, then (with --sync window) per-sample late flags, reduced together */
    double *loc = malloc(2 * sizeof(double) * (size_t)(cap < 4096 ? cap : 4096));
    double *glob = malloc(2 * sizeof(double) * (size_t)(cap < 4096 ? cap : 4096));
    double my_off = O.sync_window ? clock_offset() : 0.0;
    if (O.sync_window) {
        double a = fabs(my_off) * 1e6, amax;
        MPI_Reduce(&a, &amax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        r->clock_offset_max_us = amax;
    }
    double win_scale = 1.0;
    double my_sum = 0;
    int64_t my_n = 0;
    int active = !b->single_pair || g_rank < 2;
    int rebatches = 0;
    for (;;) {
        if (R > 4096)
            R = 4096;
        double tr0 = MPI_Wtime();
        if (!O.sync_window) {
            for (int64_t s = 0; s < R; s++) {
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                run_batch(b, &c, &p, k, &it_counter);
                double t1 = MPI_Wtime();
                loc[s] = (t1 - t0) * 1e6 / (double)k / b->iter_div;
                loc[R + s] = 0.0;
            }
        } else {
            /* rank 0 schedules sample s to start at start + s * win on its clock; every rank
             * spins until that moment on its own clock (corrected by its offset).  A rank
             * that arrives after the tolerance flags the sample late: it is dropped and
             * counted, never silently. */
            double sched[2];
            if (g_rank == 0) {
                double w = fmax(3.0 * est_batch_us, est_batch_us + 20.0) * win_scale;
                sched[1] = w * 1e-6;
                sched[0] = MPI_Wtime() + 0.002 * win_scale; /* covers the broadcast */
            }
            MPI_Bcast(sched, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
            double tol = 0.05 * sched[1] + 0.5e-6;
            for (int64_t s = 0; s < R; s++) {
                double when = sched[0] + (double)s * sched[1] + my_off, t0;
                while ((t0 = MPI_Wtime()) < when)
                    ;
                run_batch(b, &c, &p, k, &it_counter);
                double t1 = MPI_Wtime();
                loc[s] = (t1 - t0) * 1e6 / (double)k / b->iter_div;
                loc[R + s] = t0 - when > tol ? 1.0 : 0.0;
            }
        }
        MPI_Reduce(loc, glob, (int)(2 * R), MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (active)
            for (int64_t s = 0; s < R; s++)
                my_sum += loc[s];
        my_n += R;
        /* stop reason code (0 = continue, 5 = re-batch), next round size, new batch size */
        int64_t ctl[3] = {0, 0, k};
        if (g_rank == 0) {
            int64_t nvalid = 0;
            for (int64_t s2 = 0; s2 < R; s2++)
                if (glob[R + s2] == 0.0)
                    glob[nvalid++] = glob[s2];
            r->late += R - nvalid;
            if (O.sync_window && nvalid * 10 < R * 9)
                win_scale *= 2.0; /* more than 10% late: widen the schedule */
            int64_t Rall = R;
            R = nvalid;
            /* median of this round alone: the path may speed up well after warm-up */
            if (n + R > room) {
                while (n + R > room)
                    room *= 2;
                double *na = realloc(all, sizeof(double) * (size_t)room);
                double *ns = realloc(sorted, sizeof(double) * (size_t)room);
                if (!na || !ns) {
                    fprintf(stderr, "mpibench-core: out of memory for %lld samples\n",
                            (long long)room);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
                all = na;
                sorted = ns;
            }
            memcpy(sorted, glob, sizeof(double) * (size_t)R);
            mb_sort_doubles(sorted, R);
            double round_med = mb_quantile(sorted, R, 0.5);
            if (R > 0)
                est_batch_us = round_med * (double)k * b->iter_div;
            memcpy(all + n, glob, sizeof(double) * (size_t)R);
            n += R;
            double now = MPI_Wtime(), round_wall = now - tr0;
            memcpy(sorted, all, sizeof(double) * (size_t)n);
            mb_sort_doubles(sorted, n);
            mb_summary s;
            mb_summarise(sorted, n, &s);
            double batch_us = round_med * (double)k * b->iter_div;
            if (R > 0 && batch_us < floor_us && k < kmax && rebatches < 3) {
                /* the path got faster after calibration (lazy connection set-up, caches):
                 * the batch no longer keeps the timer under 1%.  Grow k and start over; the
                 * samples so far count as warm-up. */
                double f = batch_us > 0 ? 1.5 * floor_us / batch_us : 16.0;
                f = f < 2.0 ? 2.0 : f > 64.0 ? 64.0 : f;
                int64_t nk = (int64_t)ceil((double)k * f);
                nk = nk > kmax ? kmax : nk;
                if (O.iterations)
                    while (total_iters % nk)
                        nk++;
                ctl[0] = 5;
                ctl[2] = nk;
            } else if (O.iterations) {
                /* late samples (--sync window) count towards the fixed total, not the stats */
                int64_t done = n + r->late;
                ctl[0] = done >= cap ? 4 : 0;
                ctl[1] = cap - done < 1000 ? cap - done : 1000;
            } else {
                double hw = fmax(s.median - s.ci_low, s.ci_high - s.median) /
                            (s.median > 0 ? s.median : 1e-300);
                double spent = now - tsize0;
                if (n >= O.min_samples && s.ci_exact && hw * 100.0 <= O.target_pct)
                    ctl[0] = 1;
                else if (n >= cap)
                    ctl[0] = 3;
                else if (spent >= O.max_time)
                    ctl[0] = 2;
                else if (O.futility && n >= 2 * O.min_samples && s.ci_exact &&
                         spent >= 0.25 * O.max_time) {
                    /* the CI half-width shrinks like 1/sqrt(n): project the time the target
                     * needs; give up when it is more than twice the budget */
                    double ratio = hw * 100.0 / O.target_pct;
                    if (spent * ratio * ratio > 2.0 * O.max_time)
                        ctl[0] = 6;
                }
                /* next round: a quarter more samples (overshoot past the target <= 25%),
                 * within the remaining time and the cap */
                double per = round_wall / (double)Rall;
                double left = O.max_time - (now - tsize0);
                int64_t nr = n / 4 > 8 ? n / 4 : 8;
                if (n < O.min_samples)
                    nr = O.min_samples - n;
                if (per > 0 && left > 0 && (double)nr * per > left)
                    nr = (int64_t)(left / per) + 1;
                if (nr > cap - n)
                    nr = cap - n;
                ctl[1] = nr < 1 ? 1 : nr;
            }
        }
        MPI_Bcast(ctl, 3, MPI_INT64_T, 0, MPI_COMM_WORLD);
        if (ctl[0] == 5) {
            r->warmup += my_n; /* includes late samples so far */
            r->late = 0;
            rebatches++;
            k = ctl[2];
            n = 0;
            my_sum = 0;
            my_n = 0;
            if (O.iterations)
                cap = total_iters / k;
            R = FIRST_R();
            continue;
        }
        if (ctl[0]) {
            const char *why[] = {"", "target", "max_time", "max_samples", "iterations", "",
                                 "futile"};
            r->stop_reason = why[ctl[0]];
            break;
        }
        R = ctl[1];
    }
#undef FIRST_R
    r->batch = k;
    r->rebatches = rebatches;
    disarm();
    free(loc);
    free(glob);
    free(sorted);
    /* IMB's t_min/t_max/t_avg: per-rank mean time, then min/max/avg over (active) ranks */
    {
        double mean = active && my_n ? my_sum / (double)my_n : NAN;
        double in[2] = {active ? mean : INFINITY, active ? -mean : -INFINITY}, mm[2];
        double sum = active ? mean : 0, tot;
        int cnt = active, cnts;
        MPI_Reduce(in, mm, 2, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
        MPI_Reduce(&sum, &tot, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        MPI_Reduce(&cnt, &cnts, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
        if (g_rank == 0) {
            r->rank_min_us = mm[0];
            r->rank_max_us = -mm[1];
            r->rank_avg_us = tot / cnts;
        }
    }
    if (g_rank == 0 && n == 0) {
        r->status = "skipped";
        snprintf(r->reason, sizeof r->reason,
                 "all %lld samples started late (--sync window on a busy machine); use --sync "
                 "barrier", (long long)r->late);
    }
    if (g_rank == 0) {
        r->samples = all;
        r->n = n;
        r->iters_total = n * k;
        double *tmp = malloc(sizeof(double) * (size_t)n);
        memcpy(tmp, all, sizeof(double) * (size_t)n);
        mb_sort_doubles(tmp, n);
        mb_summarise(tmp, n, &r->s);
        free(tmp);
        /* the timer's cost relative to one batch interval at the median */
        r->timer_fraction = 2.0 * ti->overhead_us / (r->s.median * b->iter_div * (double)k);
    }
out:
    r->elapsed_s = MPI_Wtime() - t_setup;
    disarm();
    free(p.s);
    free(p.r);
    free(c.counts);
    free(c.displs);
#if MB_HAVE_LARGE
    free(c.lcounts);
    free(c.ldispls);
#endif
}

/* ---- output ---- */

static void emit_result(const mb_bench *b, int64_t size, const result *r)
{
    mb_ctx c;
    memset(&c, 0, sizeof c);
    c.np = g_np;
    c.size = size;
    double bytes = b->bytes(&c);
    int ok = !strcmp(r->status, "ok");
    double med = r->s.median;
    int has_bw = ok && bytes > 0 && med > 0;
    double bw = has_bw ? bytes / med : NAN; /* bytes/us == MB/s (10^6) */
    double bus = has_bw && b->busbw ? bw * b->busbw(g_np) : NAN;
    double rate = ok && b->msgs_per_iter > 0 && med > 0 ? b->msgs_per_iter / med * 1e6 : NAN;

    mb_json j;
    mj_init(&j);
    mj_obj_begin(&j);
    mj_str(&j, "record", "result");
    mj_str(&j, "benchmark", b->name);
    mj_int(&j, "size", size);
    mj_int(&j, "np", g_np);
    mj_str(&j, "status", r->status);
    if (r->reason[0])
        mj_str(&j, "reason", r->reason);
    else
        mj_null(&j, "reason");
    mj_str(&j, "family", b->kind == MB_PT2PT ? "pt2pt" : "collective");
    mj_int(&j, "active_ranks", b->single_pair && g_np > 2 ? 2 : g_np);
    mj_int(&j, "idle_ranks", b->single_pair && g_np > 2 ? g_np - 2 : 0);
    mj_str(&j, "metric", "time");
    mj_str(&j, "unit", "us");
    mj_str(&j, "statistic", "median");
    if (ok) {
        mj_int(&j, "batch", r->batch);
        mj_bool(&j, "batched", r->batch > 1);
        mj_int(&j, "warmup", r->warmup);
    } else {
        mj_null(&j, "batch");
        mj_bool(&j, "batched", 0);
        mj_int(&j, "warmup", 0);
    }
    mj_int(&j, "rebatched", r->rebatches);
    mj_num(&j, "first_us", r->first_us);
    mj_arr_begin(&j, "samples_us");
    for (int64_t i = 0; ok && i < r->n; i++)
        mj_num(&j, NULL, r->samples[i]);
    mj_arr_end(&j);
    mj_int(&j, "n", ok ? r->n : 0);
    mj_int(&j, "iterations", ok ? r->iters_total : 0);
    const mb_summary *s = &r->s;
#define NUM(key, v) mj_num(&j, key, ok ? (v) : NAN)
    NUM("median_us", s->median);
    NUM("ci_low_us", s->ci_low);
    NUM("ci_high_us", s->ci_high);
    mj_num(&j, "ci_level", 0.95);
    mj_bool(&j, "ci_exact", ok && s->ci_exact);
    NUM("min_us", s->min);
    NUM("p5_us", s->p5);
    NUM("p95_us", s->p95);
    NUM("p99_us", s->p99);
    NUM("max_us", s->max);
    NUM("mean_us", s->mean);
    NUM("std_us", s->std);
    NUM("rank_min_us", r->rank_min_us);
    NUM("rank_max_us", r->rank_max_us);
    NUM("rank_avg_us", r->rank_avg_us);
#undef NUM
    if (r->stop_reason)
        mj_str(&j, "stop_reason", r->stop_reason);
    else
        mj_null(&j, "stop_reason");
    mj_num(&j, "bytes", bytes);
    mj_num(&j, "bandwidth_mbps", bw);
    mj_num(&j, "busbw_mbps", bus);
    mj_num(&j, "busbw_factor", b->busbw ? b->busbw(g_np) : NAN);
    mj_num(&j, "msg_rate", rate);
    mj_num(&j, "timer_fraction", ok ? r->timer_fraction : NAN);
    mj_num(&j, "batch_floor_us", ok ? r->floor_us : NAN);
    mj_str(&j, "sync", O.sync_window ? "window" : "barrier");
    mj_int(&j, "late_samples", r->late);
    if (O.sync_window)
        mj_num(&j, "clock_offset_max_us", ok ? r->clock_offset_max_us : NAN);
    mj_key_obj(&j, "validation");
    mj_bool(&j, "checked", r->validated);
    if (r->validated) {
        mj_bool(&j, "ok", r->valid_ok);
        if (!r->valid_ok) {
            mj_int(&j, "rank", r->bad_rank);
            mj_int(&j, "index", r->bad_index);
            mj_str(&j, "element", b->elem_bytes == 4 ? "float" : "byte");
            mj_num(&j, "expected", r->bad_expected);
            mj_num(&j, "got", r->bad_got);
            mj_int(&j, "iteration", r->bad_it);
        }
    }
    mj_obj_end(&j);
    mj_bool(&j, "off_cache", O.off_cache);
    mj_int(&j, "buffer_copies", r->pool);
    mj_int(&j, "mem_per_rank", r->mem_per_rank);
    mj_bool(&j, "root_shift", O.root_shift);
    mj_bool(&j, "large_count", r->large);
    mj_num(&j, "elapsed_s", r->elapsed_s);
    mj_obj_end(&j);
    mtx_lock(&g_out_mtx);
    write_line(&j);
    mtx_unlock(&g_out_mtx);
    mj_free(&j);

    if (!g_text)
        return;
    if (!ok) {
        fprintf(g_text, "%12lld   %-18s %s\n", (long long)size, r->status, r->reason);
    } else {
        double hw = fmax(med - s->ci_low, s->ci_high - med) / med * 100.0;
        char ci[48];
        snprintf(ci, sizeof ci, "%s%.2f%%", s->ci_exact ? "+-" : "~", hw);
        if (b->msgs_per_iter > 0) {
            fprintf(g_text, "%12lld %12lld %12.2f %12.0f %12.2f %9s %8lld %7lld %s\n",
                    (long long)size, (long long)r->iters_total, isfinite(bw) ? bw : 0.0,
                    isfinite(rate) ? rate : 0.0, med, ci,
                    (long long)r->n, (long long)r->batch, r->stop_reason);
        } else if (b->kind == MB_PT2PT && !b->single_pair) {
            fprintf(g_text, "%12lld %12lld %12.2f %12.2f %12.2f %12.2f %9s %12.2f %8lld %7lld %s\n",
                    (long long)size, (long long)r->iters_total, r->rank_min_us, r->rank_max_us,
                    r->rank_avg_us, med, ci, isfinite(bw) ? bw : 0.0, (long long)r->n,
                    (long long)r->batch, r->stop_reason);
        } else if (b->kind == MB_PT2PT) {
            fprintf(g_text, "%12lld %12lld %12.2f %12.2f %9s %12.2f %8lld %7lld %s\n",
                    (long long)size, (long long)r->iters_total, s->mean, med, ci,
                    isfinite(bw) ? bw : 0.0,
                    (long long)r->n, (long long)r->batch, r->stop_reason);
        } else if (!b->sized) {
            fprintf(g_text, "%12lld %12.2f %12.2f %12.2f %12.2f %9s %8lld %7lld %s\n",
                    (long long)r->iters_total, r->rank_min_us, r->rank_max_us, r->rank_avg_us,
                    med, ci, (long long)r->n, (long long)r->batch, r->stop_reason);
        } else {
            fprintf(g_text, "%12lld %12lld %12.2f %12.2f %12.2f %12.2f %9s %12.2f %8lld %7lld %s\n",
                    (long long)size, (long long)r->iters_total, r->rank_min_us, r->rank_max_us,
                    r->rank_avg_us, med, ci, isfinite(bus) ? bus : 0.0, (long long)r->n, (long long)r->batch,
                    r->stop_reason);
        }
    }
    fflush(g_text);
}

static void text_bench_header(const mb_bench *b)
{
    if (!g_text)
        return;
    fprintf(g_text, "\n#----------------------------------------------------------------\n");
    fprintf(g_text, "# Benchmarking %s\n# #processes = %d\n", b->name,
            b->single_pair && g_np > 2 ? 2 : g_np);
    if (b->single_pair && g_np > 2)
        fprintf(g_text, "# ( %d additional process%s waiting in MPI_Barrier)\n", g_np - 2,
                g_np - 2 > 1 ? "es" : "");
    fprintf(g_text, "#----------------------------------------------------------------\n");
    if (b->msgs_per_iter > 0)
        fprintf(g_text, "%12s %12s %12s %12s %12s %9s %8s %7s %s\n", "#bytes", "#repetitions",
                "Mbytes/sec", "Msg/sec", "median[usec]", "ci95", "samples", "batch", "stop");
    else if (b->kind == MB_PT2PT && !b->single_pair)
        fprintf(g_text, "%12s %12s %12s %12s %12s %12s %9s %12s %8s %7s %s\n", "#bytes",
                "#repetitions", "t_min[usec]", "t_max[usec]", "t_avg[usec]", "median[usec]",
                "ci95", "Mbytes/sec", "samples", "batch", "stop");
    else if (b->kind == MB_PT2PT)
        fprintf(g_text, "%12s %12s %12s %12s %9s %12s %8s %7s %s\n", "#bytes", "#repetitions",
                "t[usec]", "median[usec]", "ci95", "Mbytes/sec", "samples", "batch", "stop");
    else if (!b->sized) /* Barrier: IMB prints no #bytes column */
        fprintf(g_text, "%12s %12s %12s %12s %12s %9s %8s %7s %s\n", "#repetitions",
                "t_min[usec]", "t_max[usec]", "t_avg[usec]", "median[usec]", "ci95", "samples",
                "batch", "stop");
    else
        fprintf(g_text, "%12s %12s %12s %12s %12s %12s %9s %12s %8s %7s %s\n", "#bytes",
                "#repetitions", "t_min[usec]", "t_max[usec]", "t_avg[usec]", "median[usec]",
                "ci95", "busbw[MB/s]", "samples", "batch", "stop");
}

static void trimmed_first_line(const char *in, char *out, size_t cap)
{
    while (*in && isspace((unsigned char)*in))
        in++;
    size_t n = 0;
    int sp = 0;
    for (; *in && *in != '\n' && n + 1 < cap; in++) {
        if (isspace((unsigned char)*in)) {
            sp = 1;
            continue;
        }
        if (sp && n)
            out[n++] = ' ';
        sp = 0;
        if (n + 1 < cap)
            out[n++] = *in;
    }
    out[n] = 0;
}

static void emit_header(int argc, char **argv, const timer_info *ti)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING], first[512];
    int len, ver, sub;
    MPI_Get_library_version(lib, &len);
    MPI_Get_version(&ver, &sub);
    trimmed_first_line(lib, first, sizeof first);
    char name[MPI_MAX_PROCESSOR_NAME];
    memset(name, 0, sizeof name);
    MPI_Get_processor_name(name, &len);
    char *names = g_rank == 0 ? malloc((size_t)g_np * MPI_MAX_PROCESSOR_NAME) : NULL;
    MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
               MPI_COMM_WORLD);
    if (g_rank != 0)
        return;
    int *uniq = malloc(sizeof(int) * (size_t)g_np), *cnt = calloc((size_t)g_np, sizeof(int));
    int nu = 0;
    for (int i = 0; i < g_np; i++) {
        int f = -1;
        for (int u = 0; u < nu; u++)
            if (!strcmp(names + (size_t)uniq[u] * MPI_MAX_PROCESSOR_NAME,
                        names + (size_t)i * MPI_MAX_PROCESSOR_NAME))
                f = u;
        if (f < 0) {
            f = nu;
            uniq[nu++] = i;
        }
        cnt[f]++;
    }
    char vbuf[16], utc[32];
    snprintf(vbuf, sizeof vbuf, "%d.%d", ver, sub);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(utc, sizeof utc, "%Y-%m-%dT%H:%M:%SZ", &tm);

    mb_json j;
    mj_init(&j);
    mj_obj_begin(&j);
    mj_str(&j, "record", "header");
    mj_int(&j, "schema_version", MB_SCHEMA_VERSION);
    mj_str(&j, "core_version", MB_VERSION);
    mj_str(&j, "mpi_library_version", first);
    mj_str(&j, "mpi_library_version_full", lib);
    mj_str(&j, "mpi_version", vbuf);
    mj_bool(&j, "large_count", MB_HAVE_LARGE);
    mj_str(&j, "thread_level_provided", thread_level_name(g_thread_provided));
    mj_int(&j, "np", g_np);
    mj_arr_begin(&j, "hosts");
    for (int u = 0; u < nu; u++)
        mj_str(&j, NULL, names + (size_t)uniq[u] * MPI_MAX_PROCESSOR_NAME);
    mj_arr_end(&j);
    mj_key_obj(&j, "ranks_per_host");
    for (int u = 0; u < nu; u++)
        mj_int(&j, names + (size_t)uniq[u] * MPI_MAX_PROCESSOR_NAME, cnt[u]);
    mj_obj_end(&j);
    mj_key_obj(&j, "timer");
    mj_str(&j, "source", "MPI_Wtime");
    mj_num(&j, "resolution_us", ti->resolution_us);
    mj_num(&j, "overhead_us", ti->overhead_us);
    mj_num(&j, "wtick_us", ti->wtick_us);
    mj_num(&j, "min_interval_us", ti->min_interval_us);
    mj_bool(&j, "subtracted", 0);
    mj_obj_end(&j);
    mj_key_obj(&j, "options");
    mj_arr_begin(&j, "benchmarks");
    for (int i = 0; i < O.nbench; i++)
        mj_str(&j, NULL, O.bench[i]->name);
    mj_arr_end(&j);
    mj_str(&j, "sizes_spec", O.sizes_spec);
    mj_arr_begin(&j, "sizes");
    for (int i = 0; i < O.nsizes; i++)
        mj_int(&j, NULL, O.sizes[i]);
    mj_arr_end(&j);
    mj_str(&j, "mode", O.iterations ? "iterations" : "adaptive");
    mj_num(&j, "target_pct", O.target_pct);
    mj_num(&j, "max_time_s", O.max_time);
    mj_int(&j, "min_samples", O.min_samples);
    mj_int(&j, "max_samples", O.max_samples);
    mj_int(&j, "warmup", O.warmup);
    if (O.iterations)
        mj_int(&j, "iterations", O.iterations);
    else
        mj_null(&j, "iterations");
    if (O.iterations_volume)
        mj_int(&j, "iterations_volume", O.iterations_volume);
    else
        mj_null(&j, "iterations_volume");
    mj_num(&j, "timeout_s", O.timeout);
    mj_num(&j, "batch_us", O.batch_us);
    mj_str(&j, "sync", O.sync_window ? "window" : "barrier");
    mj_str(&j, "thread_level", thread_level_name(O.thread_level));
    mj_bool(&j, "futility", O.futility);
    mj_bool(&j, "validate", O.validate);
    mj_bool(&j, "off_cache", O.off_cache);
    mj_bool(&j, "root_shift", O.root_shift);
    if (O.mem_limit)
        mj_int(&j, "mem_limit", O.mem_limit);
    else
        mj_null(&j, "mem_limit");
    mj_int(&j, "window", MB_WINDOW);
    mj_int(&j, "llc_bytes", llc_bytes());
    if (O.debug_corrupt >= 0)
        mj_int(&j, "debug_corrupt", O.debug_corrupt);
    if (O.debug_stall >= 0)
        mj_int(&j, "debug_stall", O.debug_stall);
    if (O.debug_large)
        mj_bool(&j, "debug_large_count", 1);
    mj_obj_end(&j);
    mj_arr_begin(&j, "argv");
    for (int i = 0; i < argc; i++)
        mj_str(&j, NULL, argv[i]);
    mj_arr_end(&j);
    mj_str(&j, "start_utc", utc);
    mj_obj_end(&j);
    write_line(&j);
    mj_free(&j);

    if (g_text) {
        fprintf(g_text,
                "#------------------------------------------------------------\n"
                "#    mpibench-core %s (IMB-style view; JSON Lines has every sample)\n"
                "#------------------------------------------------------------\n"
                "# Date                : %s\n# MPI library         : %s (MPI-%s)\n"
                "# Processes           : %d on %d host%s\n"
                "# Timer               : MPI_Wtime, overhead %.4f us/call, resolution %.4f us; "
                "batches >= %.2f us (timer cost < 1%%), not subtracted\n"
                "# Batches             : pt2pt >= %.1f us (--batch-us); collectives batch only "
                "below the timer floor\n"
                "# Statistic           : median of samples; sample = max over ranks of "
                "(batch time / batch)\n"
                "# ci95                : half-width of the distribution-free 95%% CI of the "
                "median (~ = fewer than 6 samples)\n",
                MB_VERSION, utc, first, vbuf, g_np, nu, nu > 1 ? "s" : "", ti->overhead_us,
                ti->resolution_us, ti->min_interval_us, fmax(O.batch_us, ti->min_interval_us));
        if (O.iterations)
            fprintf(g_text, "# Stopping            : fixed %lld iterations per size%s\n",
                    (long long)O.iterations,
                    O.iterations_volume ? " (fewer for large sizes: volume cap)" : "");
        else
            fprintf(g_text, "# Stopping            : adaptive, CI within +-%g%% or %g s per size "
                    "or %lld samples (min %lld)\n", O.target_pct, O.max_time,
                    (long long)O.max_samples, (long long)O.min_samples);
        fprintf(g_text,
                "# Warm-up             : %lld samples per size, discarded\n"
                "# MB/s = Mbytes/sec   : 10^6 bytes per second, from the median time\n"
                "# PingPong t          : half the round-trip time (IMB)\n"
                "# Validation          : %s\n",
                (long long)O.warmup, O.validate ? "on (separate untimed pass)" : "off");
        fprintf(g_text, "# Thread level        : %s (requested %s)\n",
                thread_level_name(g_thread_provided), thread_level_name(O.thread_level));
        if (O.root_shift || O.off_cache)
            fprintf(g_text, "# Buffers and roots   :%s%s\n",
                    O.root_shift ? " root rotates every iteration (--root-shift);" : "",
                    O.off_cache ? " buffer pool >= 2x LLC, one copy per iteration (--off-cache)"
                                : "");
        fflush(g_text);
    }
    free(uniq);
    free(cnt);
    free(names);
}

int main(int argc, char **argv)
{
    int rc = parse_args(argc, argv, &O);
    if (rc == -1)
        return 0;
    if (rc)
        return rc;
    if (O.self_test)
        return mb_stats_selftest();
    if (O.list) {
        if (is_rank0_env()) {
            for (const mb_bench *b = mb_pt2pt_benches; b->name; b++)
                printf("%s\tpt2pt\n", b->name);
            for (const mb_bench *b = mb_coll_benches; b->name; b++)
                printf("%s\tcollective\n", b->name);
        }
        return 0;
    }
    g_start_ns = now_ns();
    int provided;
    /* MPI_THREAD_SINGLE by default, as MPI_Init in IMB, OSU, NetPIPE and most applications:
     * Open MPI 4.1 turns on its internal locks for any higher level, which cost 8-byte
     * PingPong ~0.07 us (30%) here.  The watchdog thread never calls MPI. */
    MPI_Init_thread(&argc, &argv, O.thread_level, &provided);
    g_thread_provided = provided;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_np);
    mtx_init(&g_out_mtx, mtx_plain);

    int open_ok = 1;
    if (g_rank == 0) {
        if (O.jsonl) {
            g_json = strcmp(O.jsonl, "-") ? fopen(O.jsonl, "w") : stdout;
            if (!g_json) {
                fprintf(stderr, "mpibench-core: cannot write --jsonl %s: %s\n", O.jsonl,
                        strerror(errno));
                open_ok = 0;
            }
        }
        if (!O.quiet)
            g_text = g_json == stdout ? stderr : stdout;
    }
    MPI_Bcast(&open_ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!open_ok) {
        MPI_Finalize();
        return 2;
    }
    timer_info ti = calibrate_timer();
    emit_header(argc, argv, &ti);

    thrd_t wd;
    thrd_create(&wd, watchdog, NULL);

    int failed = 0;
    for (int bi = 0; bi < O.nbench; bi++) {
        const mb_bench *b = O.bench[bi];
        if (g_rank == 0)
            text_bench_header(b);
        int nsz = b->sized ? O.nsizes : 1;
        for (int si = 0; si < nsz; si++) {
            int64_t size = b->sized ? O.sizes[si] : 0;
            result r;
            run_size(b, size, &ti, &r);
            if (g_rank == 0)
                emit_result(b, size, &r);
            if (!strcmp(r.status, "validation_failed"))
                failed = 1;
            free(r.samples);
        }
    }
    atomic_store(&g_wd_stop, 1);
    thrd_join(wd, NULL);
    if (g_rank == 0) {
        mtx_lock(&g_out_mtx);
        footer(failed ? "failed" : "ok");
        if (g_text)
            fprintf(g_text, "\n# All processes entering MPI_Finalize%s\n",
                    failed ? " (VALIDATION FAILED)" : "");
        mtx_unlock(&g_out_mtx);
        if (g_json && g_json != stdout)
            fclose(g_json);
    }
    MPI_Finalize();
    return failed ? 1 : 0;
}

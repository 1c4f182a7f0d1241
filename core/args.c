/* mpibench-core command line: options, the size grammar, benchmark names.  Every name the
 * user sees (usage, errors, --list) comes from the descriptor tables, so adding a benchmark
 * is one table entry; every option (its parsing, default, bounds, usage() line and
 * --list-options entry) is one entry of mb_optdefs[] below. */
#define _POSIX_C_SOURCE 200809L

#include "driver.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Every benchmark family's table; a new family file adds its table here. */
const mb_bench *const mb_tables[] = {mb_pt2pt_benches, mb_coll_benches, NULL};

/* before MPI_Init: only the launcher's rank-0 process prints argument errors */
int mb_is_rank0_env(void)
{
    const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v)
            return strcmp(v, "0") == 0;
    }
    return 1;
}

const char *mb_family_name(const mb_bench *b) { return b->kind == MB_PT2PT ? "pt2pt" : "collective"; }

void mb_list(FILE *f)
{
    for (int t = 0; mb_tables[t]; t++)
        for (const mb_bench *b = mb_tables[t]; b->name; b++)
            fprintf(f, "%s\t%s\n", b->name, mb_family_name(b));
}

static int arg_error(const char *fmt, const char *a, const char *b)
{
    if (mb_is_rank0_env()) {
        fprintf(stderr, "mpibench-core: ");
        fprintf(stderr, fmt, a, b);
        fprintf(stderr, "\n");
    }
    return 2;
}

/* "4K" -> 4096; returns -1 when malformed or negative or overflowing */
int64_t mb_parse_bytes(const char *s)
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

static int parse_sizes(const char *spec, mb_options *o)
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
            int64_t v = mb_parse_bytes(tok);
            if (v < 0)
                return arg_error("bad size '%s' in --sizes %s: expected a byte count such as 0, "
                                 "64, 4K, 1M or 2G", tok, spec);
            /* 1 TiB, as the range form: keeps size x ranks far from int64 overflow */
            if (v > INT64_C(1) << 40)
                return arg_error("bad size '%s' in --sizes %s: sizes must be <= 1T (2^40 bytes)",
                                 tok, spec);
            if (o->nsizes >= MB_MAX_SIZES)
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
    for (int t = 0; mb_tables[t]; t++)
        for (const mb_bench *b = mb_tables[t]; b->name; b++) {
            const char *x = b->name, *y = name;
            while (*x && *y && tolower((unsigned char)*x) == tolower((unsigned char)*y))
                x++, y++;
            if (!*x && !*y)
                return b;
        }
    return NULL;
}

static void add_bench(mb_options *o, const mb_bench *b)
{
    for (int i = 0; i < o->nbench; i++)
        if (o->bench[i] == b)
            return;
    o->bench[o->nbench++] = b;
}


/* Every option of mpibench-core, once: this table drives parsing, the defaults, usage() and
 * --list-options (one JSON line per option: name, type, bounds, default, help), which a test
 * holds equal to the Python side's table (mpibench.execute.CORE_OPTION_TABLE). Bounds are
 * inclusive. An option without a default either starts at zero ("off") or says in its help
 * what it derives its value from. */
enum mb_opt_type { OPT_FLAG, OPT_NUMBER, OPT_INTEGER, OPT_BYTES, OPT_CHOICE, OPT_STRING };
static const char *const opt_type_names[] = {"flag", "number", "integer", "bytes", "choice",
                                             "string"};

typedef struct mb_optdef {
    const char *name;              /* long option without "--" */
    const char *metavar;           /* the value's name in usage(); NULL for a flag */
    enum mb_opt_type type;
    size_t off;                    /* offsetof(mb_options, field) */
    double lo, hi;                 /* OPT_NUMBER bounds */
    int64_t ilo, ihi;              /* OPT_INTEGER / OPT_BYTES bounds */
    const char *deflt;             /* as written on the command line; NULL: none */
    const char *const *choices;    /* OPT_CHOICE: NULL-terminated */
    const int *values;             /* OPT_CHOICE: what each choice stores (NULL: its index) */
    int set;                       /* OPT_FLAG: the value stored when given (default !set) */
    const char *help;              /* '\n' starts a continuation line in usage() */
} mb_optdef;

static const char *const thread_level_names[] = {"single", "funneled", "serialized",
                                                 "multiple", NULL};
static const int thread_levels[] = {MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED,
                                    MPI_THREAD_SERIALIZED, MPI_THREAD_MULTIPLE};
static const char *const sync_names[] = {"auto", "barrier", "window", NULL};

#define OFF(f) offsetof(mb_options, f)
#define NUM(n, m, f, lo, hi, d, h) {n, m, OPT_NUMBER, OFF(f), lo, hi, 0, 0, d, NULL, NULL, 0, h}
#define INT(n, m, f, lo, hi, d, h) {n, m, OPT_INTEGER, OFF(f), 0, 0, lo, hi, d, NULL, NULL, 0, h}
#define BYTES(n, m, f, lo, hi, d, h) {n, m, OPT_BYTES, OFF(f), 0, 0, lo, hi, d, NULL, NULL, 0, h}
#define FLAG(n, f, set, h) {n, NULL, OPT_FLAG, OFF(f), 0, 0, 0, 0, NULL, NULL, NULL, set, h}
#define STR(n, m, f, d, h) {n, m, OPT_STRING, OFF(f), 0, 0, 0, 0, d, NULL, NULL, 0, h}
#define CHOICE(n, m, f, c, v, d, h) {n, m, OPT_CHOICE, OFF(f), 0, 0, 0, 0, d, c, v, 0, h}

static const mb_optdef mb_optdefs[] = {
    STR("sizes", "SPEC", sizes_spec, "0:22",
        "log2 range A:B (0 only if A==0, then 2^A..2^B) or list 0,8,1K,1M\n"
        "(K/M/G = 2^10/2^20/2^30)"),
    NUM("target", "PCT", target_pct, 1e-6, 1000, "5",
        "stop when the 95% CI of the median is within +-PCT"),
    NUM("max-time", "SEC", max_time, 0, 1e6, "0.05", "time budget per size for sampling"),
    INT("min-samples", "N", min_samples, 1, 100000000, "20", "fewest samples per size"),
    INT("max-samples", "N", max_samples, 1, 100000000, "100000", "most samples per size"),
    INT("warmup", "N", warmup, 0, 1000000, "2", "warm-up samples per size, discarded"),
    INT("iterations", "N", iterations, 1, INT64_C(1) << 40, NULL,
        "fixed count: N iterations per size (IMB-like), no adaptive stop"),
    BYTES("iterations-volume", "B", iterations_volume, 1, INT64_MAX, NULL,
          "with --iterations: at most B/size iterations per size, min 1\n"
          "(IMB's rule is --iterations 1000 --iterations-volume 40M)"),
    NUM("timeout", "SEC", timeout, 0.001, 1e7, "60",
        "watchdog per size: record a timeout and exit 1"),
    NUM("batch-us", "US", batch_us, 0, 1e7, "20",
        "point-to-point batches last at least US;\n"
        "every batch also keeps the timer under 1% of it"),
    CHOICE("sync", NULL, sync_mode, sync_names, NULL, "auto",
           "how samples start: auto = a barrier before each round of\n"
           "samples for PingPong/PingPing/Uniband/Biband (each iteration\n"
           "waits for the peer), before each sample for the rest;\n"
           "barrier = before each sample; window = at scheduled times\n"
           "on clocks synchronised to rank 0"),
    CHOICE("thread-level", NULL, thread_level, thread_level_names, thread_levels, "single",
           "what MPI_Init_thread requests (Open MPI takes locks above single)"),
    FLAG("per-call", per_call, 1,
         "every sample is one call timed alone (k = 1), for small\n"
         "fixed counts; the timer's share is in timer_fraction"),
    FLAG("futility", futility, 1,
         "stop a size early (stop_reason futile) when its CI cannot\n"
         "plausibly reach --target within --max-time"),
    FLAG("accept-approximate", accept_approximate, 1,
         "stop a size once its CI is within --target after\n"
         "--min-samples even when the CI is approximate (too few\n"
         "samples for their autocorrelation, or the series moved):\n"
         "stop_reason approximate, ci_exact false; for launches whose\n"
         "between-launch spread dwarfs the within-launch CI"),
    FLAG("exclude-preempted", exclude_preempted, 1,
         "keep samples during or after which a rank was descheduled\n"
         "(an involuntary context switch, getrusage RUSAGE_THREAD,\n"
         "Linux) out of the statistic, counted in 'preempted'; a size\n"
         "then needs --min-samples unflagged samples (or as many as\n"
         "--max-time gave in all) and may sample past --max-time up\n"
         "to --preempted-max-time: stop_reason preempted when that ends"),
    NUM("preempted-max-time", "SEC", preempt_time, 0, 1e6, NULL,
        "with --exclude-preempted: the most a size may sample in all\n"
        "(default 10 x --max-time; not less than --max-time)"),
    NUM("state-ms", "MS", state_ms, 0, 1000, "1",
        "machine-state reading: ranks 0 and 1 bounce a cache line in\n"
        "shared memory for MS ms at the launch's start and end\n"
        "(header/footer machine_state; 0 = none)"),
    FLAG("no-validate", validate, 0, "skip the untimed validation pass"),
    FLAG("no-settle", settle, 0,
         "time from the first iteration after calibration even when\n"
         "the MPI library is still page-faulting its own buffers in\n"
         "(by default each size first runs until a stretch of\n"
         "iterations, on every rank, takes no page fault)"),
    FLAG("off-cache", off_cache, 1, "rotate through a buffer pool larger than the last-level cache"),
    FLAG("root-shift", root_shift, 1, "rotate the root of rooted collectives every iteration"),
    BYTES("mem-limit", "BYTES", mem_limit, 1, INT64_MAX, NULL,
          "per-rank buffer limit (K/M/G); larger sizes are skipped\n"
          "(default 75% of physical memory / np)"),
    STR("jsonl", "FILE", jsonl, NULL,
        "write JSON Lines (schema docs/core-output.md); '-' = stdout\n"
        "(the text view then goes to stderr)"),
    FLAG("quiet", quiet, 1, "no text table"),
    FLAG("list", list, 1, "list benchmarks and exit"),
    FLAG("list-options", list_options, 1,
         "list these options as JSON lines (name, type, bounds, default, help) and exit"),
    FLAG("self-test", self_test, 1, "run the statistics self-test (no MPI) and exit"),
    INT("ci-simulation", "N", ci_simulation, 1, 1000000, NULL,
        "coverage of the within-launch CI on N simulated AR(1) runs\n"
        "per autocorrelation (no MPI), JSON lines, exit"),
    INT("debug-corrupt", "SIZE", debug_corrupt, 0, INT64_MAX, NULL,
        "DEBUG ONLY: corrupt one received element at SIZE (validation)"),
    INT("debug-stall", "SIZE", debug_stall, 0, INT64_MAX, NULL,
        "DEBUG ONLY: the last rank stalls at SIZE (watchdog)"),
    FLAG("debug-large-count", debug_large, 1,
         "DEBUG ONLY: treat every size as above INT_MAX (MPI-4 _c\n"
         "calls on MPI-4 stacks, 'unsupported' on MPI-3 stacks)"),
    {NULL, NULL, OPT_FLAG, 0, 0, 0, 0, 0, NULL, NULL, NULL, 0, NULL},
};
#undef OFF
#undef NUM
#undef INT
#undef BYTES
#undef FLAG
#undef STR
#undef CHOICE

static void usage(FILE *f)
{
    fprintf(f, "usage: mpibench-core [options] BENCHMARK... | all\n");
    fprintf(f, "  benchmarks (case-insensitive):");
    int col = 32;
    for (int t = 0; mb_tables[t]; t++)
        for (const mb_bench *b = mb_tables[t]; b->name; b++) {
            int w = (int)strlen(b->name) + 1;
            if (col + w > 90) {
                fprintf(f, "\n   ");
                col = 3;
            }
            fprintf(f, " %s", b->name);
            col += w;
        }
    fprintf(f, "\n");
    for (const mb_optdef *d = mb_optdefs; d->name; d++) {
        char head[96], meta[64] = "";
        if (d->type == OPT_CHOICE) /* --sync auto|barrier|window */
            for (int i = 0; d->choices[i]; i++)
                snprintf(meta + strlen(meta), sizeof meta - strlen(meta), "%s%s", i ? "|" : "",
                         d->choices[i]);
        else if (d->metavar)
            snprintf(meta, sizeof meta, "%s", d->metavar);
        snprintf(head, sizeof head, "--%s%s%s", d->name, *meta ? " " : "", meta);
        if (strlen(head) > 21) /* too long for the column: help on the next line */
            fprintf(f, "  %s\n  %-21s ", head, "");
        else
            fprintf(f, "  %-21s ", head);
        for (const char *p = d->help; *p; p++) {
            fputc(*p, f);
            if (*p == '\n')
                fprintf(f, "  %-21s ", "");
        }
        if (d->deflt)
            fprintf(f, " (default %s)", d->deflt);
        fprintf(f, "\n");
    }
    fprintf(f, "  %-21s this text\n", "--help");
    fprintf(f, "exit status: 0 ok, 1 validation failure or timeout, 2 bad arguments\n");
}

/* --list-options: one JSON object per line, in the table's order. */
static void list_options(FILE *f)
{
    for (const mb_optdef *d = mb_optdefs; d->name; d++) {
        mb_json j;
        mj_init(&j);
        mj_obj_begin(&j);
        mj_str(&j, "name", d->name);
        mj_str(&j, "type", opt_type_names[d->type]);
        if (d->type == OPT_NUMBER) {
            mj_num_exact(&j, "min", d->lo);
            mj_num_exact(&j, "max", d->hi);
        } else if (d->type == OPT_INTEGER || d->type == OPT_BYTES) {
            mj_int(&j, "min", d->ilo);
            mj_int(&j, "max", d->ihi);
        }
        if (d->type == OPT_CHOICE) {
            mj_arr_begin(&j, "choices");
            for (int i = 0; d->choices[i]; i++)
                mj_str(&j, NULL, d->choices[i]);
            mj_arr_end(&j);
        }
        if (d->type == OPT_FLAG)
            mj_bool(&j, "default", 0);
        else if (!d->deflt)
            mj_null(&j, "default");
        else if (d->type == OPT_NUMBER || d->type == OPT_INTEGER || d->type == OPT_BYTES)
            mj_raw(&j, "default", d->deflt);
        else
            mj_str(&j, "default", d->deflt);
        char help[512];
        snprintf(help, sizeof help, "%s", d->help);
        for (char *p = help; *p; p++)
            if (*p == '\n')
                *p = ' ';
        mj_str(&j, "help", help);
        mj_obj_end(&j);
        fprintf(f, "%s\n", j.buf);
        mj_free(&j);
    }
}

/* One option's value into its field; 2 (after one line on rank 0's stderr) when it is not in
 * the option's range or grammar. */
static int set_option(const mb_optdef *d, const char *v, mb_options *o)
{
    char *field = (char *)o + d->off;
    if (d->type == OPT_FLAG) {
        *(int *)field = d->set;
        return 0;
    }
    if (d->type == OPT_STRING) {
        *(const char **)field = v;
        return 0;
    }
    if (d->type == OPT_NUMBER) {
        char *end;
        errno = 0;
        double x = strtod(v, &end);
        if (errno || end == v || *end || !(x >= d->lo && x <= d->hi)) {
            if (mb_is_rank0_env())
                fprintf(stderr, "mpibench-core: bad value '%s' for --%s: expected a number in "
                        "[%g, %g]\n", v, d->name, d->lo, d->hi);
            return 2;
        }
        *(double *)field = x;
        return 0;
    }
    if (d->type == OPT_INTEGER || d->type == OPT_BYTES) {
        int64_t x = mb_parse_bytes(v);
        if (x < d->ilo || x > d->ihi) {
            if (mb_is_rank0_env())
                fprintf(stderr, "mpibench-core: bad value '%s' for --%s: expected an integer in "
                        "[%lld, %lld]\n", v, d->name, (long long)d->ilo, (long long)d->ihi);
            return 2;
        }
        *(int64_t *)field = x;
        return 0;
    }
    for (int i = 0; d->choices[i]; i++)
        if (!strcmp(v, d->choices[i])) {
            *(int *)field = d->values ? d->values[i] : i;
            return 0;
        }
    if (mb_is_rank0_env()) {
        fprintf(stderr, "mpibench-core: bad value '%s' for --%s: expected ", v, d->name);
        int n = 0;
        while (d->choices[n])
            n++;
        for (int i = 0; i < n; i++)
            fprintf(stderr, "%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ", d->choices[i]);
        fprintf(stderr, "\n");
    }
    return 2;
}

const char *mb_thread_level_name(int level)
{
    for (int i = 0; thread_level_names[i]; i++)
        if (level == thread_levels[i])
            return thread_level_names[i];
    return "unknown";
}

/* --exclude-preempted needs the per-thread switch count; its cap: at least --max-time, and
 * the watchdog beyond it */
static int check_preempt(mb_options *o)
{
    char t[64], m[64];
    if (o->preempt_time == 0)
        o->preempt_time = 10.0 * o->max_time;
    snprintf(t, sizeof t, "%g", o->preempt_time);
    snprintf(m, sizeof m, "%g", o->max_time);
    if (!o->exclude_preempted)
        return 0;
    if (!mb_nivcsw_available())
        return arg_error("--exclude-preempted needs getrusage(RUSAGE_THREAD) (Linux)%s%s; this "
                         "build has none: the preemption flag is unavailable", "", "");
    if (o->preempt_time < o->max_time)
        return arg_error("--preempted-max-time %s s is shorter than --max-time %s s", t, m);
    if (!o->iterations && o->timeout <= o->preempt_time) {
        char to[64];
        snprintf(to, sizeof to, "%g", o->timeout);
        if (mb_is_rank0_env())
            fprintf(stderr, "mpibench-core: --timeout %s s is not longer than "
                    "--preempted-max-time %s s (--exclude-preempted may sample that long); "
                    "give --timeout a margin\n", to, t);
        return 2;
    }
    return 0;
}

int mb_parse_args(int argc, char **argv, mb_options *o)
{
    memset(o, 0, sizeof *o);
    for (const mb_optdef *d = mb_optdefs; d->name; d++)
        if (d->type == OPT_FLAG)
            *(int *)((char *)o + d->off) = !d->set;
        else if (d->deflt && set_option(d, d->deflt, o))
            return 2; /* a default outside its own bounds: the table is wrong */
    o->debug_corrupt = -1; /* off */
    o->debug_stall = -1;
    int rc;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const mb_optdef *d = NULL;
        if (a[0] == '-' && a[1] == '-')
            for (d = mb_optdefs; d->name && strcmp(a + 2, d->name); d++)
                ;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            if (mb_is_rank0_env())
                usage(stdout);
            return -1;
        } else if (d && d->name) {
            const char *v = NULL;
            if (d->type != OPT_FLAG) {
                if (i + 1 >= argc)
                    return arg_error("option %s needs a value%s", a, "");
                v = argv[++i];
            }
            if ((rc = set_option(d, v, o)))
                return rc;
        } else if (a[0] == '-' && a[1]) {
            return arg_error("unknown option '%s'%s; see --help", a, "");
        } else if (!strcasecmp(a, "all")) {
            for (int t = 0; mb_tables[t]; t++)
                for (const mb_bench *b = mb_tables[t]; b->name; b++)
                    add_bench(o, b);
        } else {
            const mb_bench *b = find_bench(a);
            if (!b) {
                char names[1024];
                size_t len = 0;
                names[0] = 0;
                for (int t = 0; mb_tables[t]; t++)
                    for (const mb_bench *x = mb_tables[t]; x->name; x++)
                        if (len + strlen(x->name) + 2 < sizeof names)
                            len += (size_t)snprintf(names + len, sizeof names - len, "%s%s",
                                                    len ? " " : "", x->name);
                return arg_error("unknown benchmark '%s'; expected IMB names: %s (or all)", a,
                                 names);
            }
            add_bench(o, b);
        }
    }
    if (o->list_options) {
        if (mb_is_rank0_env())
            list_options(stdout);
        return -1;
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
    if ((rc = check_preempt(o)))
        return rc;
    if (o->iterations_volume && !o->iterations)
        return arg_error("--iterations-volume needs --iterations%s%s", "", "");
    if (!o->nbench && !o->list && !o->self_test && !o->ci_simulation)
        return arg_error("no benchmark given%s%s; name one or more (or 'all'); see --help", "", "");
    return 0;
}


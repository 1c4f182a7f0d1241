/* mpibench-core command line: options, the size grammar, benchmark names.  Every name the
 * user sees (usage, errors, --list) comes from the descriptor tables, so adding a benchmark
 * is one table entry. */
#define _POSIX_C_SOURCE 200809L

#include "driver.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
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

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpibench-core [options] BENCHMARK... | all\n");
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
    fprintf(f,
            "  --sizes SPEC          log2 range A:B (0 only if A==0, then 2^A..2^B) or list 0,8,1K,1M\n"
            "                        (default 0:22; K/M/G = 2^10/2^20/2^30)\n"
            "  --target PCT          stop when the 95%% CI of the median is within +-PCT (default 5)\n"
            "  --max-time SEC        time budget per size for sampling (default 0.05)\n"
            "  --min-samples N       (default 20)    --max-samples N (default 100000)\n"
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
            "  --per-call            every sample is one call timed alone (k = 1), for small\n"
            "                        fixed counts; the timer's share is in timer_fraction\n"
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
            "  --ci-simulation N     coverage of the within-launch CI on N simulated AR(1) runs\n"
            "                        per autocorrelation (no MPI), JSON lines, exit\n"
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

const char *mb_thread_level_name(int level)
{
    for (int i = 0; i < 4; i++)
        if (level == thread_levels[i])
            return thread_level_names[i];
    return "unknown";
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

static int num_arg(const char *opt, const char *v, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double x = v ? strtod(v, &end) : NAN;
    if (!v || errno || end == v || *end || !(x >= lo && x <= hi)) {
        char range[96];
        snprintf(range, sizeof range, "a number in [%g, %g]", lo, hi);
        if (mb_is_rank0_env())
            fprintf(stderr, "mpibench-core: bad value '%s' for %s: expected %s\n",
                    v ? v : "(missing)", opt, range);
        return 2;
    }
    *out = x;
    return 0;
}

static int int_arg(const char *opt, const char *v, int64_t lo, int64_t hi, int64_t *out)
{
    int64_t x = v ? mb_parse_bytes(v) : -1;
    if (x < lo || x > hi) {
        if (mb_is_rank0_env())
            fprintf(stderr, "mpibench-core: bad value '%s' for %s: expected an integer in "
                    "[%lld, %lld]\n", v ? v : "(missing)", opt, (long long)lo, (long long)hi);
        return 2;
    }
    *out = x;
    return 0;
}

int mb_parse_args(int argc, char **argv, mb_options *o)
{
    memset(o, 0, sizeof *o);
    o->target_pct = 5.0;
    o->max_time = 0.05;
    o->timeout = 60.0;
    o->batch_us = 20.0;
    o->min_samples = 20;
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
            if (mb_is_rank0_env())
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
        } else if (!strcmp(a, "--per-call")) {
            o->per_call = 1;
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
        } else if (!strcmp(a, "--ci-simulation")) {
            NEEDV();
            if ((rc = int_arg(a, v, 1, 1000000, &o->ci_simulation)))
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
    if (!o->nbench && !o->list && !o->self_test && !o->ci_simulation)
        return arg_error("no benchmark given%s%s; name one or more (or 'all'); see --help", "", "");
    return 0;
}


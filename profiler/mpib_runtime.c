/* mpibench PMPI profiler runtime: init, calibration, snapshots, signal dumps and the merge at
 * MPI_Finalize. The generated wrappers (mpib_wrappers.c) do the recording.
 *
 * Files in $MPIBENCH_PROFILE_DIR (default ./mpibench-profile):
 *   rank-<r>.json             per-rank raw counters (also written, marked incomplete, on
 *                             MPI_Abort and on catchable fatal signals)
 *   rank-<r>.pcontrol-<k>.json  snapshots requested with MPI_Pcontrol(2)
 *   profile.json              the merged document, written by rank 0 at MPI_Finalize
 * Schemas: docs/profiler.md.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mpib_internal.h"

#define RANK_SCHEMA_VERSION 1
#define MERGED_SCHEMA_VERSION 1

int mpib_active = 0;
__thread struct mpib_tls mpib_tls __attribute__((tls_model("initial-exec")));

/* Slot MPIB_MAX_THREADS is the shared overflow slot. Zeroed BSS: pages cost nothing until a
 * thread touches them. */
static mpib_slot_t mpib_slots[MPIB_MAX_THREADS + 1];
static unsigned mpib_nslots = 0;
static int mpib_overflow = 0;
static mpib_fn_t mpib_agg[MPIB_NFUNCS]; /* snapshot buffer: no allocation when dumping */

static int g_rank = -1, g_size = 0, g_thread_level = -1;
static int g_dumping = 0, g_snap = 0;
static uint64_t g_tick0, g_ns0;            /* end of MPI_Init */
static uint64_t g_init_ns;                 /* time spent in MPI_Init */
static double g_ns_per_tick = 1.0;
/* Calibrated cost of the wrapper: a trivial call, a call with byte counting, a collective
 * (whose byte rule also asks for the communicator's size and rank). */
static double g_ovh_ns = 0, g_ovh_bytes_ns = 0, g_ovh_coll_ns = 0;
static double g_est_ns = 0; /* calls x calibrated cost, from the last aggregate() */
static char g_dir[3072];
static char g_host[64];
static char g_lib[256];

static const int g_signals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGSEGV, SIGBUS,
                                SIGFPE, SIGILL, SIGABRT, SIGUSR1, SIGUSR2, SIGXCPU};
#define NSIG_HANDLED (sizeof(g_signals) / sizeof(g_signals[0]))
static struct sigaction g_old[NSIG_HANDLED];
static int g_handlers = 0;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

mpib_slot_t *mpib_claim_slot(void)
{
    unsigned i = __atomic_fetch_add(&mpib_nslots, 1, __ATOMIC_RELAXED);
    if (i < MPIB_MAX_THREADS) {
        mpib_tls.slot = &mpib_slots[i];
        mpib_tls.shared = 0;
    } else {
        mpib_tls.slot = &mpib_slots[MPIB_MAX_THREADS];
        mpib_tls.shared = 1;
        MPIB_ST(&mpib_overflow, 1);
    }
    return mpib_tls.slot;
}

static unsigned used_slots(void)
{
    unsigned n = MPIB_LD(&mpib_nslots);
    return n < MPIB_MAX_THREADS ? n : MPIB_MAX_THREADS;
}

/* A (ticks, ns) pair read close together: a preemption between the two reads would skew the
 * ratio by the whole time slice, so retry until both clock reads bracket the tick read
 * within 2 us (keep the tightest pair if the machine never allows it). */
static void clock_pair(uint64_t *ticks, uint64_t *ns)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 200; i++) {
        uint64_t n1 = now_ns(), t = mpib_ticks(), n2 = now_ns();
        if (n2 - n1 < best) {
            best = n2 - n1;
            *ticks = t;
            *ns = n1 + (n2 - n1) / 2;
        }
        if (best < 2000) return;
    }
}

/* Ticks to ns from the interval since MPI_Init; spin until it is long enough (20 ms) to give
 * a ratio good to ~1e-4. clock_gettime is async-signal-safe, so this works in handlers. */
static double ns_per_tick(void)
{
#if defined(__x86_64__) || defined(__i386__)
    uint64_t t = 0, n = 0;
    do {
        clock_pair(&t, &n);
    } while (n - g_ns0 < 20000000u);
    if (t > g_tick0) g_ns_per_tick = (double)(n - g_ns0) / (double)(t - g_tick0);
#endif
    return g_ns_per_tick;
}

static uint64_t tick_ns(uint64_t ticks) { return (uint64_t)((double)ticks * g_ns_per_tick); }

static void aggregate(void)
{
    memset(mpib_agg, 0, sizeof mpib_agg);
    unsigned n = used_slots();
    for (unsigned s = 0; s <= MPIB_MAX_THREADS; s++) {
        if (s >= n && s != MPIB_MAX_THREADS) continue;
        if (s == MPIB_MAX_THREADS && !MPIB_LD(&mpib_overflow)) continue;
        for (int f = 0; f < MPIB_NFUNCS; f++) {
            const mpib_fn_t *src = &mpib_slots[s].fn[f];
            uint64_t calls = MPIB_LD(&src->calls);
            if (!calls) continue;
            mpib_fn_t *d = &mpib_agg[f];
            d->calls += calls;
            d->ticks += MPIB_LD(&src->ticks);
            uint64_t mn = MPIB_LD(&src->tmin_inv), mx = MPIB_LD(&src->tmax);
            if (mn > d->tmin_inv) d->tmin_inv = mn;
            if (mx > d->tmax) d->tmax = mx;
            d->sent += MPIB_LD(&src->sent);
            d->recv += MPIB_LD(&src->recv);
            d->posted += MPIB_LD(&src->posted);
            d->unknown += MPIB_LD(&src->unknown);
            for (int b = 0; b < MPIB_NBINS; b++) {
                d->hcalls[b] += MPIB_LD(&src->hcalls[b]);
                d->hticks[b] += MPIB_LD(&src->hticks[b]);
                d->hbytes[b] += MPIB_LD(&src->hbytes[b]);
            }
        }
    }
}

/* ---- async-signal-safe JSON writer (write(2) on a static buffer) ---------------------- */
static char w_buf[1 << 16];
static size_t w_len;
static int w_fd = -1;

static void w_flush(void)
{
    size_t off = 0;
    while (off < w_len && w_fd >= 0) {
        ssize_t k = write(w_fd, w_buf + off, w_len - off);
        if (k < 0) {
            if (errno == EINTR) continue;
            break;
        }
        off += (size_t)k;
    }
    w_len = 0;
}
static void w_ch(char c)
{
    if (w_len == sizeof w_buf) w_flush();
    w_buf[w_len++] = c;
}
static void w_s(const char *s)
{
    while (*s) w_ch(*s++);
}
static void w_u64(uint64_t v)
{
    char t[24];
    int i = 0;
    do {
        t[i++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (i) w_ch(t[--i]);
}
static void w_i64(int64_t v)
{
    if (v < 0) {
        w_ch('-');
        w_u64((uint64_t)(-(v + 1)) + 1);
    } else {
        w_u64((uint64_t)v);
    }
}
static void w_f3(double v) /* fixed, 3 decimals */
{
    if (v < 0) {
        w_ch('-');
        v = -v;
    }
    uint64_t milli = (uint64_t)(v * 1000.0 + 0.5);
    w_u64(milli / 1000);
    w_ch('.');
    w_ch((char)('0' + (milli / 100) % 10));
    w_ch((char)('0' + (milli / 10) % 10));
    w_ch((char)('0' + milli % 10));
}
static void w_str(const char *s)
{
    static const char hex[] = "0123456789abcdef";
    w_ch('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            w_ch('\\');
            w_ch((char)c);
        } else if (c < 0x20) {
            w_s("\\u00");
            w_ch(hex[c >> 4]);
            w_ch(hex[c & 15]);
        } else {
            w_ch((char)c);
        }
    }
    w_ch('"');
}
static void w_key(const char *k)
{
    w_str(k);
    w_ch(':');
}

static void path_join(char *out, size_t cap, const char *name, int k)
{
    /* dir + "/rank-" + r [+ ".pcontrol-" + k] + ".json", without snprintf (signal-safe) */
    size_t n = 0;
    char num[24];
    const char *parts[6];
    int np = 0;
    parts[np++] = g_dir;
    parts[np++] = name;
    for (int i = 0; i < np; i++)
        for (const char *p = parts[i]; *p && n + 1 < cap; p++) out[n++] = *p;
    int v = g_rank < 0 ? 0 : g_rank, i = 0;
    do {
        num[i++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (i && n + 1 < cap) out[n++] = num[--i];
    if (k > 0) {
        const char *pc = ".pcontrol-";
        for (const char *p = pc; *p && n + 1 < cap; p++) out[n++] = *p;
        v = k;
        do {
            num[i++] = (char)('0' + v % 10);
            v /= 10;
        } while (v);
        while (i && n + 1 < cap) out[n++] = num[--i];
    }
    for (const char *p = ".json"; *p && n + 1 < cap; p++) out[n++] = *p;
    out[n] = 0;
}

/* Write this rank's counters. Async-signal-safe: open/write/rename/close only. */
static void write_rank_file(const char *reason, int complete, int snapshot)
{
    char path[3200], tmp[3210];
    uint64_t end_ns = now_ns();
    double npt = ns_per_tick();
    aggregate();
    path_join(path, sizeof path, "/rank-", snapshot);
    size_t n = strlen(path);
    memcpy(tmp, path, n);
    memcpy(tmp + n, ".tmp", 5);
    w_fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (w_fd < 0) return;
    w_len = 0;
    uint64_t mpi_ns = 0, calls = 0;
    g_est_ns = 0;
    for (int f = 0; f < MPIB_NFUNCS; f++) {
        const mpib_fn_t *a = &mpib_agg[f];
        mpi_ns += tick_ns(a->ticks);
        calls += a->calls;
        const char *cls = mpib_fn_class[f];
        double per = (cls[0] == 'c' && cls[1] == 'o' && cls[2] == 'l') ? g_ovh_coll_ns
                     : (a->sent || a->recv || a->posted) ? g_ovh_bytes_ns : g_ovh_ns;
        g_est_ns += (double)a->calls * per;
    }
    w_s("{");
    w_key("schema"); w_str("mpibench-profile-rank"); w_ch(',');
    w_key("version"); w_u64(RANK_SCHEMA_VERSION); w_ch(',');
    w_key("rank"); w_i64(g_rank); w_ch(',');
    w_key("size"); w_i64(g_size); w_ch(',');
    w_key("pid"); w_i64((int64_t)getpid()); w_ch(',');
    w_key("host"); w_str(g_host); w_ch(',');
    w_key("reason"); w_str(reason); w_ch(',');
    w_key("complete"); w_s(complete ? "true" : "false"); w_ch(',');
    w_key("mpi_library"); w_str(g_lib); w_ch(',');
    w_key("header_mpi_version"); w_str(MPIB_HEADER_MPI_VERSION); w_ch(',');
    w_key("thread_level"); w_i64(g_thread_level); w_ch(',');
    w_key("recv_tracking"); w_s(mpib_track_on ? "true" : "false"); w_ch(',');
#if defined(__x86_64__) || defined(__i386__)
    w_key("timer"); w_str("rdtsc"); w_ch(',');
#else
    w_key("timer"); w_str("clock_gettime"); w_ch(',');
#endif
    w_key("ns_per_tick"); w_f3(npt * 1000.0); w_s("e-3,");
    w_key("init_ns"); w_u64(g_init_ns); w_ch(',');
    w_key("wall_ns"); w_u64(end_ns - g_ns0); w_ch(',');
    w_key("mpi_ns"); w_u64(mpi_ns); w_ch(',');
    w_key("calls"); w_u64(calls); w_ch(',');
    w_key("overhead_ns_per_call"); w_f3(g_ovh_ns); w_ch(',');
    w_key("overhead_bytes_ns_per_call"); w_f3(g_ovh_bytes_ns); w_ch(',');
    w_key("overhead_coll_ns_per_call"); w_f3(g_ovh_coll_ns); w_ch(',');
    w_key("estimated_overhead_ns"); w_u64((uint64_t)g_est_ns); w_ch(',');
    w_key("threads"); w_u64(MPIB_LD(&mpib_nslots)); w_ch(',');
    w_key("thread_overflow"); w_s(MPIB_LD(&mpib_overflow) ? "true" : "false"); w_ch(',');
    w_key("per_thread"); w_ch('[');
    unsigned ns = used_slots();
    for (unsigned s = 0; s < ns; s++) {
        uint64_t c = 0, t = 0;
        for (int f = 0; f < MPIB_NFUNCS; f++) {
            c += MPIB_LD(&mpib_slots[s].fn[f].calls);
            t += MPIB_LD(&mpib_slots[s].fn[f].ticks);
        }
        if (s) w_ch(',');
        w_s("{\"thread\":"); w_u64(s);
        w_s(",\"calls\":"); w_u64(c);
        w_s(",\"mpi_ns\":"); w_u64(tick_ns(t)); w_ch('}');
    }
    w_s("],\n");
    w_key("functions"); w_s("{");
    int first = 1;
    for (int f = 0; f < MPIB_NFUNCS; f++) {
        const mpib_fn_t *a = &mpib_agg[f];
        if (!a->calls) continue;
        if (!first) w_s(",\n");
        first = 0;
        w_key(mpib_fn_name[f]); w_ch('{');
        w_key("class"); w_str(mpib_fn_class[f]); w_ch(',');
        w_key("calls"); w_u64(a->calls); w_ch(',');
        w_key("time_ns"); w_u64(tick_ns(a->ticks)); w_ch(',');
        w_key("min_ns"); w_u64(tick_ns(~a->tmin_inv)); w_ch(',');
        w_key("max_ns"); w_u64(tick_ns(a->tmax)); w_ch(',');
        w_key("bytes_sent"); w_u64(a->sent); w_ch(',');
        w_key("bytes_recv"); w_u64(a->recv); w_ch(',');
        w_key("bytes_recv_posted"); w_u64(a->posted); w_ch(',');
        w_key("recv_unknown"); w_u64(a->unknown); w_ch(',');
        w_key("hist"); w_ch('[');
        int hf = 1;
        for (int b = 0; b < MPIB_NBINS; b++) {
            if (!a->hcalls[b]) continue;
            if (!hf) w_ch(',');
            hf = 0;
            w_ch('[');
            w_u64(b ? (uint64_t)1 << (b - 1) : 0); w_ch(',');
            w_u64(a->hcalls[b]); w_ch(',');
            w_u64(tick_ns(a->hticks[b])); w_ch(',');
            w_u64(a->hbytes[b]); w_ch(']');
        }
        w_s("]}");
    }
    w_s("}}\n");
    w_flush();
    close(w_fd);
    w_fd = -1;
    rename(tmp, path);
}

/* ---- signals ------------------------------------------------------------------------- */
static void on_signal(int sig, siginfo_t *si, void *ctx)
{
    (void)si;
    (void)ctx;
    int saved = errno;
    if (!__atomic_exchange_n(&g_dumping, 1, __ATOMIC_ACQ_REL)) {
        MPIB_ST(&mpib_active, 0);
        char reason[32] = "signal:";
        int n = 7, v = sig, i = 0;
        char num[8];
        do {
            num[i++] = (char)('0' + v % 10);
            v /= 10;
        } while (v);
        while (i) reason[n++] = num[--i];
        reason[n] = 0;
        write_rank_file(reason, 0, 0);
    }
    for (size_t k = 0; k < NSIG_HANDLED; k++)
        if (g_signals[k] == sig) sigaction(sig, &g_old[k], NULL);
    errno = saved;
    /* Delivered once this handler returns, to the previous handler or the default action.
     * A synchronous fault (SIGSEGV...) also simply recurs on return. */
    raise(sig);
}

/* SIGRTMIN+7: write this rank's counters now and carry on. mpibench sends it to every rank
 * shortly before a timeout, waits for the files, and only then sends SIGTERM: otherwise the
 * first rank to die makes the launcher SIGKILL the others before they can write. */
#define MPIB_DUMP_SIGNAL (SIGRTMIN + 7)
static struct sigaction g_old_dump;

static void on_dump_signal(int sig, siginfo_t *si, void *ctx)
{
    (void)sig;
    (void)si;
    (void)ctx;
    int saved = errno;
    if (!__atomic_exchange_n(&g_dumping, 1, __ATOMIC_ACQ_REL)) {
        write_rank_file("dump-signal", 0, 0);
        __atomic_store_n(&g_dumping, 0, __ATOMIC_RELEASE);
    }
    errno = saved;
}

static void install_handlers(void)
{
    const char *e = getenv("MPIBENCH_PROFILE_SIGNALS");
    if (e && e[0] == '0') return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (size_t k = 0; k < NSIG_HANDLED; k++) sigaction(g_signals[k], &sa, &g_old[k]);
    sa.sa_sigaction = on_dump_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(MPIB_DUMP_SIGNAL, &sa, &g_old_dump);
    g_handlers = 1;
}

static void remove_handlers(void)
{
    if (!g_handlers) return;
    for (size_t k = 0; k < NSIG_HANDLED; k++) sigaction(g_signals[k], &g_old[k], NULL);
    /* A late dump signal must not kill a finishing rank: ignore rather than restore. */
    signal(MPIB_DUMP_SIGNAL, SIG_IGN);
    g_handlers = 0;
}

/* ---- init ---------------------------------------------------------------------------- */
static void mkdirs(const char *dir)
{
    char tmp[sizeof g_dir];
    size_t n = strlen(dir);
    if (n >= sizeof tmp) return;
    memcpy(tmp, dir, n + 1);
    for (size_t i = 1; i < n; i++)
        if (tmp[i] == '/') {
            tmp[i] = 0;
            mkdir(tmp, 0755);
            tmp[i] = '/';
        }
    mkdir(tmp, 0755);
}

/* Cost of the wrapper itself: the same trivial calls with and without interception, best of
 * several rounds. The counters touched are restored afterwards. */
static double calibrate_one(int id, int kind)
{
    mpib_slot_t *s = mpib_tls.slot ? mpib_tls.slot : mpib_claim_slot();
    mpib_fn_t saved = s->fn[id];
    double best = 1e30;
    const int n = 2000;
    int r;
    char c = 0;
    for (int round = 0; round < 5; round++) {
        uint64_t t0 = mpib_ticks();
        for (int i = 0; i < n; i++) {
            if (kind == 2)
                PMPI_Bcast(&c, 1, MPI_BYTE, 0, MPI_COMM_SELF);
            else if (kind == 1)
                PMPI_Send(&c, 1, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_SELF);
            else
                PMPI_Comm_rank(MPI_COMM_SELF, &r);
        }
        uint64_t t1 = mpib_ticks();
        for (int i = 0; i < n; i++) {
            if (kind == 2)
                MPI_Bcast(&c, 1, MPI_BYTE, 0, MPI_COMM_SELF);
            else if (kind == 1)
                MPI_Send(&c, 1, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_SELF);
            else
                MPI_Comm_rank(MPI_COMM_SELF, &r);
        }
        uint64_t t2 = mpib_ticks();
        double d = ((double)(t2 - t1) - (double)(t1 - t0)) / n;
        if (d < best) best = d;
    }
    s->fn[id] = saved;
    return best < 0 ? 0 : best;
}

/* An application that exits without MPI_Finalize still leaves its counters behind. */
static void at_exit(void)
{
    if (g_rank >= 0 && !__atomic_exchange_n(&g_dumping, 1, __ATOMIC_ACQ_REL)) {
        MPIB_ST(&mpib_active, 0);
        write_rank_file("exit-without-finalize", 0, 0);
    }
}

static void after_init(uint64_t t_before)
{
    PMPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &g_size);
    gethostname(g_host, sizeof g_host - 1);
    int len = 0;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    lib[0] = 0;
    PMPI_Get_library_version(lib, &len);
    size_t i = 0;
    while (lib[i] && lib[i] != '\n' && i + 1 < sizeof g_lib) {
        g_lib[i] = lib[i];
        i++;
    }
    g_lib[i] = 0;
    const char *dir = getenv("MPIBENCH_PROFILE_DIR");
    if (!dir || !*dir) dir = "mpibench-profile";
    strncpy(g_dir, dir, sizeof g_dir - 1);
    mkdirs(g_dir);
    if (access(g_dir, W_OK) != 0)
        fprintf(stderr, "mpibench-profiler: rank %d cannot write to %s (%s); no profile will "
                        "be written\n", g_rank, g_dir, strerror(errno));
    clock_pair(&g_tick0, &g_ns0);
    g_init_ns = g_ns0 - t_before;
    install_handlers();
    atexit(at_exit);
    const char *tr = getenv("MPIBENCH_PROFILE_TRACK");
    mpib_track_on = g_thread_level < MPI_THREAD_SERIALIZED && !(tr && tr[0] == '0');
    MPIB_ST(&mpib_active, 1);
    /* A first ratio for calibration; refined over the whole run at every dump. */
    uint64_t a = 0, na = 0, b = 0, nb = 0;
    clock_pair(&a, &na);
    do {
        clock_pair(&b, &nb);
    } while (nb - na < 2000000u);
    if (b > a) g_ns_per_tick = (double)(nb - na) / (double)(b - a);
    g_ovh_ns = calibrate_one(MPIB_F_MPI_Comm_rank, 0) * g_ns_per_tick;
    g_ovh_bytes_ns = calibrate_one(MPIB_F_MPI_Send, 1) * g_ns_per_tick;
    g_ovh_coll_ns = calibrate_one(MPIB_F_MPI_Bcast, 2) * g_ns_per_tick;
}

int MPI_Init(int *argc, char ***argv)
{
    uint64_t t = now_ns();
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) {
        PMPI_Query_thread(&g_thread_level);
        after_init(t);
    }
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    uint64_t t = now_ns();
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) {
        g_thread_level = *provided;
        after_init(t);
    }
    return rc;
}

int MPI_Pcontrol(const int level, ...)
{
    if (g_rank < 0 || g_dumping) return MPI_SUCCESS;
    mpib_bytes_t none = {0, 0, 0, 0};
    uint64_t t0 = mpib_ticks();
    if (level == 0) {
        MPIB_ST(&mpib_active, 0);
        mpib_track_clear(); /* completions while paused are not seen: stay "unknown" */
    } else if (level == 1) {
        MPIB_ST(&mpib_active, 1);
    } else if (level == 2) {
        /* Holding g_dumping keeps a signal arriving meanwhile from reusing the writer. */
        if (!__atomic_exchange_n(&g_dumping, 1, __ATOMIC_ACQ_REL)) {
            write_rank_file("pcontrol", 0, ++g_snap);
            __atomic_store_n(&g_dumping, 0, __ATOMIC_RELEASE);
        }
    } else if (level == 3) {
        /* Counters and the wall clock restart together, so the MPI time fraction stays
         * meaningful; the tick ratio is re-measured from here. */
        unsigned n = used_slots();
        for (unsigned s = 0; s < n; s++) memset(&mpib_slots[s], 0, sizeof mpib_slots[s]);
        memset(&mpib_slots[MPIB_MAX_THREADS], 0, sizeof mpib_slots[MPIB_MAX_THREADS]);
        mpib_track_clear();
        clock_pair(&g_tick0, &g_ns0);
        t0 = g_tick0;
    }
    mpib_record(MPIB_F_MPI_Pcontrol, mpib_ticks() - t0, &none);
    return MPI_SUCCESS;
}

int MPI_Abort(MPI_Comm comm, int errorcode)
{
    if (g_rank >= 0 && !__atomic_exchange_n(&g_dumping, 1, __ATOMIC_ACQ_REL)) {
        MPIB_ST(&mpib_active, 0);
        mpib_bytes_t none = {0, 0, 0, 0};
        mpib_record(MPIB_F_MPI_Abort, 0, &none);
        write_rank_file("abort", 0, 0);
    }
    remove_handlers();
    return PMPI_Abort(comm, errorcode);
}

/* ---- merge at MPI_Finalize ----------------------------------------------------------- */
enum { V_CALLS, V_NS, V_SENT, V_RECV, V_POSTED, V_UNKNOWN, V_HIST };
#define VW (V_HIST + 3 * MPIB_NBINS)
enum { R_WALL, R_MPI, R_CALLS, R_THREADS, R_INIT, R_OVH, R_OVHB, R_OVHC, R_EST, R_PID, RW };

static void jstats(FILE *f, const char *key, const double *v, int n, int with_total)
{
    double mn = 0, mx = 0, sum = 0;
    for (int i = 0; i < n; i++) {
        if (i == 0 || v[i] < mn) mn = v[i];
        if (i == 0 || v[i] > mx) mx = v[i];
        sum += v[i];
    }
    fprintf(f, "\"%s\":{", key);
    if (with_total) fprintf(f, "\"total\":%.9g,", sum);
    fprintf(f, "\"min\":%.9g,\"mean\":%.9g,\"max\":%.9g}", mn, n ? sum / n : 0.0, mx);
}

static void jstr(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void merge(uint64_t wall_ns)
{
    MPI_Comm c;
    if (PMPI_Comm_dup(MPI_COMM_WORLD, &c) != MPI_SUCCESS) return;
    int me, np;
    PMPI_Comm_rank(c, &me);
    PMPI_Comm_size(c, &np);
    uint64_t *act = calloc(MPIB_NFUNCS, sizeof *act);
    int *ids = calloc(MPIB_NFUNCS, sizeof *ids);
    for (int f = 0; f < MPIB_NFUNCS; f++) act[f] = mpib_agg[f].calls ? 1 : 0;
    PMPI_Allreduce(MPI_IN_PLACE, act, MPIB_NFUNCS, MPI_UINT64_T, MPI_MAX, c);
    int na = 0;
    for (int f = 0; f < MPIB_NFUNCS; f++)
        if (act[f]) ids[na++] = f;
    int nv = na ? na : 1;
    uint64_t *vec = calloc((size_t)nv * VW, sizeof *vec);
    uint64_t *tot = calloc((size_t)nv * VW, sizeof *tot);
    uint64_t *mins = calloc(nv, sizeof *mins), *maxs = calloc(nv, sizeof *maxs);
    uint64_t *gmin = calloc(nv, sizeof *gmin), *gmax = calloc(nv, sizeof *gmax);
    uint64_t *mine = calloc((size_t)2 * nv, sizeof *mine);
    uint64_t rinfo[RW];
    uint64_t mpi_ns = 0, calls = 0;
    for (int i = 0; i < na; i++) {
        const mpib_fn_t *a = &mpib_agg[ids[i]];
        uint64_t *v = vec + (size_t)i * VW;
        v[V_CALLS] = a->calls;
        v[V_NS] = tick_ns(a->ticks);
        v[V_SENT] = a->sent;
        v[V_RECV] = a->recv;
        v[V_POSTED] = a->posted;
        v[V_UNKNOWN] = a->unknown;
        for (int b = 0; b < MPIB_NBINS; b++) {
            v[V_HIST + b] = a->hcalls[b];
            v[V_HIST + MPIB_NBINS + b] = tick_ns(a->hticks[b]);
            v[V_HIST + 2 * MPIB_NBINS + b] = a->hbytes[b];
        }
        mins[i] = a->calls ? tick_ns(~a->tmin_inv) : UINT64_MAX;
        maxs[i] = tick_ns(a->tmax);
        mine[2 * i] = v[V_NS];
        mine[2 * i + 1] = a->calls;
    }
    for (int f = 0; f < MPIB_NFUNCS; f++) {
        mpi_ns += tick_ns(mpib_agg[f].ticks);
        calls += mpib_agg[f].calls;
    }
    rinfo[R_WALL] = wall_ns;
    rinfo[R_MPI] = mpi_ns;
    rinfo[R_CALLS] = calls;
    rinfo[R_THREADS] = MPIB_LD(&mpib_nslots);
    rinfo[R_INIT] = g_init_ns;
    rinfo[R_OVH] = (uint64_t)(g_ovh_ns * 1000.0);
    rinfo[R_OVHB] = (uint64_t)(g_ovh_bytes_ns * 1000.0);
    rinfo[R_OVHC] = (uint64_t)(g_ovh_coll_ns * 1000.0);
    rinfo[R_EST] = (uint64_t)g_est_ns;
    rinfo[R_PID] = (uint64_t)getpid();
    uint64_t *all = me == 0 ? calloc((size_t)np * 2 * nv, sizeof *all) : NULL;
    uint64_t *rall = me == 0 ? calloc((size_t)np * RW, sizeof *rall) : NULL;
    char *hosts = me == 0 ? calloc((size_t)np, sizeof g_host) : NULL;
    PMPI_Reduce(vec, tot, nv * VW, MPI_UINT64_T, MPI_SUM, 0, c);
    PMPI_Reduce(mins, gmin, nv, MPI_UINT64_T, MPI_MIN, 0, c);
    PMPI_Reduce(maxs, gmax, nv, MPI_UINT64_T, MPI_MAX, 0, c);
    PMPI_Gather(mine, 2 * nv, MPI_UINT64_T, all, 2 * nv, MPI_UINT64_T, 0, c);
    PMPI_Gather(rinfo, RW, MPI_UINT64_T, rall, RW, MPI_UINT64_T, 0, c);
    PMPI_Gather(g_host, sizeof g_host, MPI_CHAR, hosts, sizeof g_host, MPI_CHAR, 0, c);
    if (me == 0) {
        char path[3200], tmp[3220];
        snprintf(path, sizeof path, "%s/profile.json", g_dir);
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        FILE *f = fopen(tmp, "w");
        if (f) {
            double *d = calloc((size_t)np, sizeof *d);
            fprintf(f, "{\"schema\":\"mpibench-profile\",\"version\":%d,\"complete\":true,"
                       "\"reason\":\"finalize\",\n\"mpi_library\":", MERGED_SCHEMA_VERSION);
            jstr(f, g_lib);
            fprintf(f, ",\"header_mpi_version\":\"%s\",\"ranks\":%d,\"thread_level\":%d,"
                       "\"recv_tracking\":%s,",
                    MPIB_HEADER_MPI_VERSION, np, g_thread_level, mpib_track_on ? "true" : "false");
#if defined(__x86_64__) || defined(__i386__)
            fprintf(f, "\"timer\":{\"source\":\"rdtsc\",\"ns_per_tick\":%.9g},\n", g_ns_per_tick);
#else
            fprintf(f, "\"timer\":{\"source\":\"clock_gettime\",\"ns_per_tick\":1},\n");
#endif
            double total_calls = 0, est = 0;
            for (int r = 0; r < np; r++) {
                total_calls += (double)rall[r * RW + R_CALLS];
                est += (double)rall[r * RW + R_EST] * 1e-9;
            }
            fprintf(f, "\"calls_total\":%.0f,\n\"overhead\":{", total_calls);
            for (int r = 0; r < np; r++) d[r] = rall[r * RW + R_OVH] / 1000.0;
            jstats(f, "ns_per_call", d, np, 0);
            fputc(',', f);
            for (int r = 0; r < np; r++) d[r] = rall[r * RW + R_OVHB] / 1000.0;
            jstats(f, "ns_per_call_with_bytes", d, np, 0);
            fputc(',', f);
            for (int r = 0; r < np; r++) d[r] = rall[r * RW + R_OVHC] / 1000.0;
            jstats(f, "ns_per_call_collective", d, np, 0);
            fprintf(f, ",\"estimated_total_s\":%.9g},\n", est);
            for (int r = 0; r < np; r++) d[r] = rall[r * RW + R_WALL] * 1e-9;
            jstats(f, "wall_s", d, np, 0);
            fputs(",\n", f);
            for (int r = 0; r < np; r++) d[r] = rall[r * RW + R_MPI] * 1e-9;
            jstats(f, "mpi_time_s", d, np, 1);
            fputs(",\n", f);
            int rmax = 0, rmin = 0;
            for (int r = 0; r < np; r++) {
                double w = (double)rall[r * RW + R_WALL];
                d[r] = w > 0 ? rall[r * RW + R_MPI] / w : 0;
                if (rall[r * RW + R_MPI] > rall[rmax * RW + R_MPI]) rmax = r;
                if (rall[r * RW + R_MPI] < rall[rmin * RW + R_MPI]) rmin = r;
            }
            jstats(f, "mpi_fraction", d, np, 0);
            /* The rank spending least time in MPI carries the most work: the others wait. */
            fprintf(f, ",\n\"most_loaded_rank\":{\"rank\":%d,\"mpi_s\":%.9g,\"mpi_fraction\":%.9g},"
                       "\n\"least_loaded_rank\":{\"rank\":%d,\"mpi_s\":%.9g,\"mpi_fraction\":%.9g},\n",
                    rmin, rall[rmin * RW + R_MPI] * 1e-9, d[rmin],
                    rmax, rall[rmax * RW + R_MPI] * 1e-9, d[rmax]);
            fputs("\"per_rank\":[", f);
            for (int r = 0; r < np; r++) {
                const uint64_t *ri = rall + (size_t)r * RW;
                char *h = hosts + (size_t)r * sizeof g_host;
                h[sizeof g_host - 1] = 0;
                fprintf(f, "%s\n{\"rank\":%d,\"host\":", r ? "," : "", r);
                jstr(f, h);
                fprintf(f, ",\"pid\":%llu,\"wall_s\":%.9g,\"mpi_s\":%.9g,\"mpi_fraction\":%.9g,"
                           "\"calls\":%llu,\"threads\":%llu,\"init_s\":%.9g,"
                           "\"overhead_ns_per_call\":%.3f}",
                        (unsigned long long)ri[R_PID], ri[R_WALL] * 1e-9, ri[R_MPI] * 1e-9, d[r],
                        (unsigned long long)ri[R_CALLS], (unsigned long long)ri[R_THREADS],
                        ri[R_INIT] * 1e-9, ri[R_OVH] / 1000.0);
            }
            fputs("],\n\"functions\":{", f);
            for (int i = 0; i < na; i++) {
                const uint64_t *v = tot + (size_t)i * VW;
                fprintf(f, "%s\n\"%s\":{\"class\":\"%s\",\"calls\":%llu,\"time_s\":%.9g,"
                           "\"min_call_s\":%.9g,\"max_call_s\":%.9g,\"mean_call_s\":%.9g,"
                           "\"bytes_sent\":%llu,\"bytes_recv\":%llu,\"bytes_recv_posted\":%llu,"
                           "\"recv_unknown\":%llu,",
                        i ? "," : "", mpib_fn_name[ids[i]], mpib_fn_class[ids[i]],
                        (unsigned long long)v[V_CALLS], v[V_NS] * 1e-9,
                        gmin[i] == UINT64_MAX ? 0.0 : gmin[i] * 1e-9, gmax[i] * 1e-9,
                        v[V_CALLS] ? v[V_NS] * 1e-9 / v[V_CALLS] : 0.0,
                        (unsigned long long)v[V_SENT], (unsigned long long)v[V_RECV],
                        (unsigned long long)v[V_POSTED], (unsigned long long)v[V_UNKNOWN]);
                int calling = 0;
                for (int r = 0; r < np; r++) {
                    d[r] = all[(size_t)r * 2 * nv + 2 * i] * 1e-9;
                    if (all[(size_t)r * 2 * nv + 2 * i + 1]) calling++;
                }
                fprintf(f, "\"ranks_calling\":%d,", calling);
                jstats(f, "time_per_rank_s", d, np, 0);
                fputs(",\"per_rank_time_s\":[", f);
                for (int r = 0; r < np; r++) fprintf(f, "%s%.9g", r ? "," : "", d[r]);
                fputs("],\"per_rank_calls\":[", f);
                for (int r = 0; r < np; r++)
                    fprintf(f, "%s%llu", r ? "," : "",
                            (unsigned long long)all[(size_t)r * 2 * nv + 2 * i + 1]);
                fputs("],\"hist\":[", f);
                int hf = 1;
                for (int b = 0; b < MPIB_NBINS; b++) {
                    if (!v[V_HIST + b]) continue;
                    fprintf(f, "%s[%llu,%llu,%.9g,%llu]", hf ? "" : ",",
                            (unsigned long long)(b ? (uint64_t)1 << (b - 1) : 0),
                            (unsigned long long)v[V_HIST + b], v[V_HIST + MPIB_NBINS + b] * 1e-9,
                            (unsigned long long)v[V_HIST + 2 * MPIB_NBINS + b]);
                    hf = 0;
                }
                fputs("]}", f);
            }
            fputs("}}\n", f);
            free(d);
            if (fclose(f) == 0) rename(tmp, path);
        }
    }
    free(act); free(ids); free(vec); free(tot); free(mins); free(maxs); free(gmin);
    free(gmax); free(mine); free(all); free(rall); free(hosts);
    PMPI_Comm_free(&c);
}

int MPI_Finalize(void)
{
    if (g_rank >= 0 && !__atomic_exchange_n(&g_dumping, 1, __ATOMIC_ACQ_REL)) {
        uint64_t wall = now_ns() - g_ns0;
        MPIB_ST(&mpib_active, 0);
        remove_handlers();
        write_rank_file("finalize", 1, 0); /* aggregates into mpib_agg */
        merge(wall);
    }
    remove_handlers();
    return PMPI_Finalize();
}

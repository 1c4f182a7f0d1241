/* mpibench-cacheline: the round trip of one cache line between two CPUs, measured outside MPI.
 *
 *   mpibench-cacheline [--cpus A,B] [--ms M] [--batch K]
 *
 * Two threads, pinned to CPUs A and B (default: the first two CPUs of this process's
 * affinity mask), bounce one cache-line-aligned counter: A writes an odd value, B answers
 * with the next even one. A sample is the wall time of K round trips divided by K; samples
 * are taken for M milliseconds (after a discarded warm-up of 1/4 of that; longer when fewer
 * than MIN_SAMPLES were taken, up to CAP_FACTOR x M but at least CAP_MIN_MS) and one JSON
 * line reports their count, median and quartiles in nanoseconds. A sample in which a thread was descheduled is long;
 * the median ignores such samples while fewer than half are.
 *
 * Why: on a VM the cost of moving a cache line between the two vCPUs an MPI job's ranks are
 * bound to depends on where the host runs those vCPUs at the moment, and a shared-memory
 * PingPong's small-message time follows it. Measured right before and after a launch, this
 * probe says which machine state the launch ran in, without MPI.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PROBE_VERSION 1
#define MAX_SAMPLES 200000
#define STOP_VALUE UINT64_MAX
/* On a loaded machine a thread waits for a scheduler slice now and then; such a sample is
 * long, and a whole --ms window can pass in one. Go on past --ms until MIN_SAMPLES (the
 * median then ignores up to half of them), but stop at CAP_FACTOR x --ms (at least CAP_MIN_MS,
 * so a short --ms is no likelier to starve under load) whatever the count. */
#define MIN_SAMPLES 200
#define CAP_FACTOR 100
#define CAP_MIN_MS 300.0

typedef struct {
    _Alignas(64) _Atomic uint64_t line;   /* the bounced cache line */
    _Alignas(64) int cpu_a, cpu_b;
    _Atomic int ready;   /* B: 1 pinned, -1 could not pin */
} shared_t;

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int pin_self(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

/* B: answer every odd value with the next even one until A writes STOP_VALUE */
static void *responder(void *arg)
{
    shared_t *sh = arg;
    if (pin_self(sh->cpu_b) != 0) {
        atomic_store(&sh->ready, -1);
        return NULL;
    }
    atomic_store(&sh->ready, 1);
    uint64_t seen = 0;
    for (;;) {
        uint64_t v = atomic_load_explicit(&sh->line, memory_order_acquire);
        if (v == STOP_VALUE) return NULL;
        if (v != seen && (v & 1u)) {
            seen = v;
            atomic_store_explicit(&sh->line, v + 1, memory_order_release);
        }
    }
}

/* K round trips from A */
static void bounce(shared_t *sh, uint64_t *next, int k)
{
    for (int i = 0; i < k; i++) {
        uint64_t v = *next;
        atomic_store_explicit(&sh->line, v, memory_order_release);
        while (atomic_load_explicit(&sh->line, memory_order_acquire) != v + 1)
            ;
        *next = v + 2;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double quantile(const double *sorted, int n, double q)
{
    double pos = q * (n - 1);
    int lo = (int)pos;
    int hi = lo + 1 < n ? lo + 1 : lo;
    return sorted[lo] + (pos - lo) * (sorted[hi] - sorted[lo]);
}

/* samples for ms milliseconds and at least MIN_SAMPLES of them, but for no more than
 * max(CAP_FACTOR x ms, CAP_MIN_MS) (after a warm-up of ms/4); returns the count */
static int measure(shared_t *sh, double ms, int k, double *samples)
{
    uint64_t next = 1;
    double warm_end = now_ns() + ms * 0.25e6;
    while (now_ns() < warm_end)
        bounce(sh, &next, k);
    int n = 0;
    double cap_ms = CAP_FACTOR * ms > CAP_MIN_MS ? CAP_FACTOR * ms : CAP_MIN_MS;
    double end = now_ns() + ms * 1e6, cap = now_ns() + cap_ms * 1e6;
    for (double t0 = now_ns(); (t0 < end || n < MIN_SAMPLES) && t0 < cap && n < MAX_SAMPLES; n++) {
        bounce(sh, &next, k);
        double t1 = now_ns();
        samples[n] = (t1 - t0) / k;
        t0 = t1;
    }
    return n;
}

static int first_two_cpus(int *a, int *b)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return -1;
    int found = 0;
    for (int c = 0; c < CPU_SETSIZE && found < 2; c++)
        if (CPU_ISSET(c, &set)) *(found++ == 0 ? a : b) = c;
    return found == 2 ? 0 : -1;
}

static int usage(const char *msg)
{
    fprintf(stderr, "mpibench-cacheline: %s\nusage: mpibench-cacheline [--cpus A,B] [--ms M]"
                    " [--batch K] (M in 0.1-1000, K in 1-100000)\n", msg);
    return 2;
}

typedef struct {
    int cpu_a, cpu_b, batch;
    double ms;
} options_t;

static int parse(int argc, char **argv, options_t *o)
{
    for (int i = 1; i < argc; i++) {
        char *end = NULL;
        if (i + 1 >= argc) return usage("an option without its value");
        const char *v = argv[++i];
        errno = 0;
        if (strcmp(argv[i - 1], "--cpus") == 0) {
            if (sscanf(v, "%d,%d", &o->cpu_a, &o->cpu_b) != 2 || o->cpu_a < 0 || o->cpu_b < 0
                || o->cpu_a == o->cpu_b || o->cpu_a >= CPU_SETSIZE || o->cpu_b >= CPU_SETSIZE)
                return usage("--cpus wants two different CPU numbers, e.g. 0,1");
        } else if (strcmp(argv[i - 1], "--ms") == 0) {
            o->ms = strtod(v, &end);
            if (errno || *end || !(o->ms >= 0.1 && o->ms <= 1000)) return usage("bad --ms");
        } else if (strcmp(argv[i - 1], "--batch") == 0) {
            long k = strtol(v, &end, 10);
            if (errno || *end || k < 1 || k > 100000) return usage("bad --batch");
            o->batch = (int)k;
        } else {
            return usage("unknown option");
        }
    }
    return 0;
}

static void report(const options_t *o, double *s, int n, double elapsed_ms)
{
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    printf("{\"record\":\"probe\",\"probe\":\"cacheline\",\"version\":%d,\"cpus\":[%d,%d],"
           "\"batch\":%d,\"samples\":%d,\"median_ns\":%.3f,\"q1_ns\":%.3f,\"q3_ns\":%.3f,"
           "\"min_ns\":%.3f,\"elapsed_ms\":%.3f}\n",
           PROBE_VERSION, o->cpu_a, o->cpu_b, o->batch, n, quantile(s, n, 0.5),
           quantile(s, n, 0.25), quantile(s, n, 0.75), s[0], elapsed_ms);
}

int main(int argc, char **argv)
{
    options_t o = {-1, -1, 16, 2.0};
    int rc = parse(argc, argv, &o);
    if (rc) return rc;
    if (o.cpu_a < 0 && first_two_cpus(&o.cpu_a, &o.cpu_b) != 0)
        return usage("this process may run on fewer than two CPUs; name them with --cpus");
    static shared_t sh;
    static double samples[MAX_SAMPLES];
    sh.cpu_a = o.cpu_a;
    sh.cpu_b = o.cpu_b;
    if (pin_self(o.cpu_a) != 0) return usage("cannot pin to the first CPU of --cpus");
    pthread_t tb;
    if (pthread_create(&tb, NULL, responder, &sh) != 0) return usage("cannot start a thread");
    int ready;
    while ((ready = atomic_load(&sh.ready)) == 0)
        sched_yield();
    if (ready < 0) {
        pthread_join(tb, NULL);
        return usage("cannot pin to the second CPU of --cpus");
    }
    double t0 = now_ns();
    int n = measure(&sh, o.ms, o.batch, samples);
    atomic_store(&sh.line, STOP_VALUE);
    pthread_join(tb, NULL);
    if (n == 0) return usage("no sample within --ms");
    report(&o, samples, n, (now_ns() - t0) / 1e6);
    return 0;
}

/* mpibench-cacheline: the round trip of one cache line between two CPUs, measured outside MPI.
 *
 *   mpibench-cacheline [--cpus A,B] [--ms M] [--batch K]
 *
 * Two threads, pinned to CPUs A and B (default: the first two CPUs of this process's
 * affinity mask), bounce one cache-line-aligned counter: A writes an odd value, B answers
 * with the next even one. A sample is the wall time of K round trips divided by K; samples
 * are taken for M milliseconds (after a discarded warm-up of 1/4 of that; longer when fewer
 * than MB_CL_MIN_SAMPLES were taken, up to the cap: cacheline.h, the loop the core's
 * in-launch reading shares) and one JSON
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

#include "cacheline.h"

#define PROBE_VERSION 1
#define MAX_SAMPLES 200000
/* On a loaded machine a thread waits for a scheduler slice now and then; such a sample is
 * long, and a whole --ms window can pass in one: cacheline.h goes on past --ms until
 * MB_CL_MIN_SAMPLES (the median then ignores up to half of them), but starts no batch past
 * its cap (a short --ms is no likelier to starve under load) whatever the count - except the
 * first sample, taken always: a reading may end a batch or two past the cap (the one running
 * at the cap, then the first sample's) with as few as 1 sample, which stats/probe.py does not
 * judge (fewer than its MIN_SAMPLES). */

typedef struct {
    _Alignas(64) _Atomic uint64_t line;   /* the bounced cache line */
    _Alignas(64) int cpu_a, cpu_b;
    _Atomic int ready;   /* B: 1 pinned, -1 could not pin */
} shared_t;

static int pin_self(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

/* B: answer every odd value with the next even one until A writes MB_CL_STOP */
static void *responder(void *arg)
{
    shared_t *sh = arg;
    if (pin_self(sh->cpu_b) != 0) {
        atomic_store(&sh->ready, -1);
        return NULL;
    }
    atomic_store(&sh->ready, 1);
    mb_cl_respond(&sh->line);
    return NULL;
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
    double t0 = mb_cl_now_ns();
    int n = (int)mb_cl_sample(&sh.line, o.ms, o.batch, samples, MAX_SAMPLES);
    atomic_store(&sh.line, MB_CL_STOP);
    pthread_join(tb, NULL);
    if (n == 0) return usage("no sample within --ms");
    report(&o, samples, n, (mb_cl_now_ns() - t0) / 1e6);
    return 0;
}

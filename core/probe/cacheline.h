/* core/probe/cacheline.h: the cache-line round trip, written once for its two users - the
 * probe program (core/probe/mpibench-cacheline.c: two threads pinned to two CPUs) and the
 * core's in-launch reading (core/state.c: ranks 0 and 1 in an MPI-3 shared window).
 *
 * The measuring side writes an odd value to the line, the answering side answers with the
 * next even one; a sample is the wall time of k round trips divided by k. Samples are taken
 * for ms milliseconds after a warm-up of ms/4, and at least MB_CL_MIN_SAMPLES of them (the
 * median then ignores up to half that a scheduler slice made long), but never past a cap of
 * MB_CL_CAP_FACTOR x ms (at least MB_CL_CAP_MIN_MS) counted from the warm-up's start: sides
 * that share a CPU (unbound, oversubscribed) take a slice per round trip. One sample is
 * taken whatever the cap (on a loaded machine a warm-up of 16-round-trip batches that each
 * wait for a slice can pass it: the stop-35 CI run's np=3 launch had no start reading). Header-only
 * (static inline) so that each user's build needs no extra object.
 */
#ifndef MB_CACHELINE_H
#define MB_CACHELINE_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#define MB_CL_STOP UINT64_MAX
#define MB_CL_MIN_SAMPLES 200
#define MB_CL_CAP_FACTOR 100
#define MB_CL_CAP_MIN_MS 300.0

static inline double mb_cl_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* the answering side: every odd value gets the next even one, until MB_CL_STOP */
static inline void mb_cl_respond(_Atomic uint64_t *line)
{
    uint64_t seen = 0;
    for (;;) {
        uint64_t v = atomic_load_explicit(line, memory_order_acquire);
        if (v == MB_CL_STOP)
            return;
        if (v != seen && (v & 1u)) {
            seen = v;
            atomic_store_explicit(line, v + 1, memory_order_release);
        }
    }
}

/* the measuring side: k round trips */
static inline void mb_cl_bounce(_Atomic uint64_t *line, uint64_t *next, int k)
{
    for (int i = 0; i < k; i++) {
        uint64_t v = *next;
        atomic_store_explicit(line, v, memory_order_release);
        while (atomic_load_explicit(line, memory_order_acquire) != v + 1)
            ;
        *next = v + 2;
    }
}

/* the measuring side: samples (ns per round trip, batches of k) into s, at most max of
 * them, under the rule above; returns the count. The caller writes MB_CL_STOP after. */
static inline int64_t mb_cl_sample(_Atomic uint64_t *line, double ms, int k, double *s,
                                   int64_t max)
{
    uint64_t next = 1;
    double cap_ms = MB_CL_CAP_FACTOR * ms > MB_CL_CAP_MIN_MS ? MB_CL_CAP_FACTOR * ms
                                                             : MB_CL_CAP_MIN_MS;
    double start = mb_cl_now_ns(), cap = start + cap_ms * 1e6;
    double warm_end = start + ms * 0.25e6;
    double t0 = start;
    while (t0 < warm_end && t0 < cap) {
        mb_cl_bounce(line, &next, k);
        t0 = mb_cl_now_ns();
    }
    double end = t0 + ms * 1e6;
    int64_t n = 0;
    /* the first sample is taken even past the cap: a reading with fewer than the valid
     * minimum says the sides waited for a CPU (stats/probe.py does not judge it), where no
     * reading at all would say the launch could not take one */
    for (; n < max && (n == 0 || ((t0 < end || n < MB_CL_MIN_SAMPLES) && t0 < cap)); n++) {
        mb_cl_bounce(line, &next, k);
        double t1 = mb_cl_now_ns();
        s[n] = (t1 - t0) / k;
        t0 = t1;
    }
    return n;
}

#endif

/* mpibench PMPI profiler: the hot path shared by generated wrappers and the runtime.
 *
 * Per thread, one preallocated slot of fixed-size counters per MPI function. A thread claims
 * its slot once (one atomic add); afterwards recording is plain loads and stores into memory
 * no other thread writes, so there is no lock and no allocation on the hot path. Counters are
 * written with relaxed atomic stores (plain moves on x86) so that a reader taking a snapshot
 * (Pcontrol, a signal handler, MPI_Finalize) is race-free in the C11 sense. Threads beyond
 * MPIB_MAX_THREADS share one overflow slot updated with atomic read-modify-writes: slower,
 * but nothing is ever dropped.
 */
#ifndef MPIB_INTERNAL_H
#define MPIB_INTERNAL_H

#include <mpi.h>
#include <stdint.h>
#include <time.h>

/* Everything below is internal to the library: hidden symbols are reached without the GOT
 * or PLT, which matters on the hot path. Only the MPI_ wrappers (declared by mpi.h) export. */
#pragma GCC visibility push(hidden)
#include "mpib_funcs.h"

/* Bin 0: 0 bytes; bin k (1..64): [2^(k-1), 2^k) bytes. */
#define MPIB_NBINS 65
#define MPIB_MAX_THREADS 64

typedef struct {
    int64_t sent;   /* bytes this rank sent or contributed */
    int64_t recv;   /* bytes received, known from a status or the call's semantics */
    int64_t posted; /* bytes of receive buffers posted where the received size is unknown */
    int64_t unknown;/* 1 if the received size is unknown for this call */
} mpib_bytes_t;

typedef struct {
    uint64_t calls, ticks, tmin_inv, tmax, sent, recv, posted, unknown;
    uint64_t hcalls[MPIB_NBINS];
    uint64_t hticks[MPIB_NBINS];
    uint64_t hbytes[MPIB_NBINS]; /* the sizes (h below) of the bin's calls, summed */
} mpib_fn_t;

typedef struct {
    mpib_fn_t fn[MPIB_NFUNCS];
} mpib_slot_t;

struct mpib_tls {
    mpib_slot_t *slot;
    int depth;  /* > 0 while inside an intercepted call: nested MPI calls pass through */
    int shared; /* slot is the shared overflow slot */
};

extern int mpib_active;
extern __thread struct mpib_tls mpib_tls __attribute__((tls_model("initial-exec")));
mpib_slot_t *mpib_claim_slot(void);

static inline uint64_t mpib_ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

#define MPIB_LD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define MPIB_ST(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

static inline void mpib_add(uint64_t *p, uint64_t v, int shared)
{
    if (shared)
        __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
    else
        MPIB_ST(p, MPIB_LD(p) + v);
}

static inline void mpib_max(uint64_t *p, uint64_t v, int shared)
{
    uint64_t cur = MPIB_LD(p);
    if (!shared) {
        if (v > cur) MPIB_ST(p, v);
        return;
    }
    while (v > cur && !__atomic_compare_exchange_n(p, &cur, v, 1, __ATOMIC_RELAXED,
                                                   __ATOMIC_RELAXED)) {
    }
}

static inline uint64_t mpib_pos(int64_t v) { return v > 0 ? (uint64_t)v : 0; }

static inline void mpib_record(int id, uint64_t dt, const mpib_bytes_t *b)
{
    mpib_slot_t *s = mpib_tls.slot;
    if (__builtin_expect(s == 0, 0)) s = mpib_claim_slot();
    int sh = mpib_tls.shared;
    mpib_fn_t *f = &s->fn[id];
    uint64_t sent = mpib_pos(b->sent), recv = mpib_pos(b->recv), posted = mpib_pos(b->posted);
    uint64_t h = sent ? sent : (recv ? recv : posted);
    int bin = h ? 64 - __builtin_clzll(h) : 0;
    mpib_add(&f->calls, 1, sh);
    mpib_add(&f->ticks, dt, sh);
    mpib_max(&f->tmax, dt, sh);
    mpib_max(&f->tmin_inv, ~dt, sh); /* min kept inverted so zeroed memory is "no call yet" */
    if (sent) mpib_add(&f->sent, sent, sh);
    if (recv) mpib_add(&f->recv, recv, sh);
    if (posted) mpib_add(&f->posted, posted, sh);
    if (b->unknown) mpib_add(&f->unknown, 1, sh);
    mpib_add(&f->hcalls[bin], 1, sh);
    mpib_add(&f->hticks[bin], dt, sh);
    if (h) mpib_add(&f->hbytes[bin], h, sh);
}

#define MPIB_SKIP() (!MPIB_LD(&mpib_active) || mpib_tls.depth)
#define MPIB_ENTER()        \
    mpib_tls.depth = 1;     \
    uint64_t mpib_t0 = mpib_ticks()
#define MPIB_LEAVE() uint64_t mpib_t1 = mpib_ticks()
#define MPIB_RECORD(id, b)                     \
    do {                                       \
        mpib_record((id), mpib_t1 - mpib_t0, (b)); \
        mpib_tls.depth = 0;                    \
    } while (0)

/* Byte rules, called after a successful call (see gen_wrappers.py for which function uses
 * which). Counts are 64-bit; count arrays are int or MPI_Count as the flag says. */
void mpib_b_send(mpib_bytes_t *b, int64_t count, MPI_Datatype t);
void mpib_b_posted(mpib_bytes_t *b, int64_t count, MPI_Datatype t);
void mpib_b_psend(mpib_bytes_t *b, int64_t partitions, int64_t count, MPI_Datatype t);
void mpib_b_precv(mpib_bytes_t *b, int64_t partitions, int64_t count, MPI_Datatype t);
void mpib_b_status(mpib_bytes_t *b, const MPI_Status *st);
void mpib_b_sendrecv(mpib_bytes_t *b, int64_t scount, MPI_Datatype st, const MPI_Status *s);
void mpib_b_isendrecv(mpib_bytes_t *b, int64_t scount, MPI_Datatype st, int64_t rcount,
                      MPI_Datatype rt);
void mpib_b_bcast(mpib_bytes_t *b, int64_t count, MPI_Datatype t, int root, MPI_Comm c);
void mpib_b_reduce(mpib_bytes_t *b, int64_t count, MPI_Datatype t, int root, MPI_Comm c);
void mpib_b_allreduce(mpib_bytes_t *b, int64_t count, MPI_Datatype t);
void mpib_b_reduce_scatter_block(mpib_bytes_t *b, int64_t rcount, MPI_Datatype t, MPI_Comm c);
void mpib_b_reduce_scatter(mpib_bytes_t *b, const void *rcounts, int r64, MPI_Datatype t,
                           MPI_Comm c);
void mpib_b_allgather(mpib_bytes_t *b, const void *sbuf, int64_t scount, MPI_Datatype st,
                      int64_t rcount, MPI_Datatype rt, MPI_Comm c);
void mpib_b_allgatherv(mpib_bytes_t *b, const void *sbuf, int64_t scount, MPI_Datatype st,
                       const void *rcounts, int r64, MPI_Datatype rt, MPI_Comm c);
void mpib_b_gather(mpib_bytes_t *b, const void *sbuf, int64_t scount, MPI_Datatype st,
                   int64_t rcount, MPI_Datatype rt, int root, MPI_Comm c);
void mpib_b_gatherv(mpib_bytes_t *b, const void *sbuf, int64_t scount, MPI_Datatype st,
                    const void *rcounts, int r64, MPI_Datatype rt, int root, MPI_Comm c);
void mpib_b_scatter(mpib_bytes_t *b, int64_t scount, MPI_Datatype st, const void *rbuf,
                    int64_t rcount, MPI_Datatype rt, int root, MPI_Comm c);
void mpib_b_scatterv(mpib_bytes_t *b, const void *scounts, int s64, MPI_Datatype st,
                     const void *rbuf, int64_t rcount, MPI_Datatype rt, int root, MPI_Comm c);
void mpib_b_alltoall(mpib_bytes_t *b, const void *sbuf, int64_t scount, MPI_Datatype st,
                     int64_t rcount, MPI_Datatype rt, MPI_Comm c);
void mpib_b_alltoallv(mpib_bytes_t *b, const void *sbuf, const void *scounts, int s64,
                      MPI_Datatype st, const void *rcounts, int r64, MPI_Datatype rt,
                      MPI_Comm c);
void mpib_b_alltoallw(mpib_bytes_t *b, const void *sbuf, const void *scounts, int s64,
                      const MPI_Datatype *st, const void *rcounts, int r64,
                      const MPI_Datatype *rt, MPI_Comm c);
void mpib_b_nb_allgather(mpib_bytes_t *b, int64_t scount, MPI_Datatype st, int64_t rcount,
                         MPI_Datatype rt, MPI_Comm c);
void mpib_b_nb_allgatherv(mpib_bytes_t *b, int64_t scount, MPI_Datatype st,
                          const void *rcounts, int r64, MPI_Datatype rt, MPI_Comm c);
void mpib_b_nb_alltoall(mpib_bytes_t *b, int64_t scount, MPI_Datatype st, int64_t rcount,
                        MPI_Datatype rt, MPI_Comm c);
void mpib_b_nb_alltoallv(mpib_bytes_t *b, const void *scounts, int s64, MPI_Datatype st,
                         const void *rcounts, int r64, MPI_Datatype rt, MPI_Comm c);
void mpib_b_nb_alltoallw(mpib_bytes_t *b, const void *scounts, int s64, const MPI_Datatype *st,
                         const void *rcounts, int r64, const MPI_Datatype *rt, MPI_Comm c);
void mpib_b_put(mpib_bytes_t *b, int64_t count, MPI_Datatype t);
void mpib_b_get(mpib_bytes_t *b, int64_t count, MPI_Datatype t);
void mpib_b_get_accumulate(mpib_bytes_t *b, int64_t ocount, MPI_Datatype ot, int64_t rcount,
                           MPI_Datatype rt);
void mpib_b_fetch_and_op(mpib_bytes_t *b, MPI_Datatype t);
void mpib_b_io_write(mpib_bytes_t *b, int64_t count, MPI_Datatype t);
void mpib_b_io_posted(mpib_bytes_t *b, int64_t count, MPI_Datatype t);

/* Completing non-blocking receives (mpib_track.c). */
#define MPIB_TRK_SCRATCH 4096
#define MPIB_TRK_ALL 0  /* status i belongs to request i (Wait, Test, Waitall, Testall) */
#define MPIB_TRK_ANY 1  /* one status, for request *index (Waitany, Testany) */
#define MPIB_TRK_SOME 2 /* status k belongs to request indices[k] (Waitsome, Testsome) */
extern int mpib_track_on;
void mpib_track_post(int fid, MPI_Request r, const mpib_bytes_t *b, uint64_t dt);
int mpib_track_pre(int count, const MPI_Request *reqs);
MPI_Status *mpib_track_statuses(void);
void mpib_track_done(int count, const MPI_Request *after, const MPI_Status *st, int mode,
                     int index, int outcount, const int *indices, int rc);
void mpib_track_forget(MPI_Request r);
void mpib_track_clear(void);

#pragma GCC visibility pop
#endif

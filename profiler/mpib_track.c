/* Received sizes of non-blocking receives, learned when the request completes.
 *
 * MPI_Irecv / MPI_Imrecv (and their _c forms) cannot know how many bytes will arrive. Their
 * requests go into a fixed-size open-addressing table (no allocation); when a Wait/Test call
 * completes one, the size is read from the status (the wrapper supplies its own statuses when
 * the caller passed MPI_STATUS(ES)_IGNORE) and moved onto the receive's counters: bytes_recv
 * grows, recv_unknown and bytes_recv_posted shrink, and the call moves from the histogram bin
 * of the posted size to the bin of the received size.
 *
 * Only when the process is at MPI_THREAD_SINGLE or MPI_THREAD_FUNNELED: then one thread
 * makes every MPI call, the table needs no lock, and a request can never be completed where
 * the table cannot see it. Otherwise (and when the table is full, a Wait/Test takes more than
 * MPIB_TRK_SCRATCH requests, or collection is paused) receives stay "unknown", as documented.
 */
#include <string.h>

#include "mpib_internal.h"

#define TRK_BITS 12
#define TRK_SIZE (1u << TRK_BITS)
#define TRK_MASK (TRK_SIZE - 1)
#define TRK_MAX_LIVE (TRK_SIZE * 3 / 4)

typedef struct {
    uintptr_t key; /* 0 = empty */
    int fid;
    uint64_t posted, dt;
} trk_ent_t;

int mpib_track_on = 0;
static trk_ent_t trk[TRK_SIZE];
static unsigned trk_live = 0;
static MPI_Request trk_saved[MPIB_TRK_SCRATCH];
static MPI_Status trk_st[MPIB_TRK_SCRATCH];

static uintptr_t key_of(MPI_Request r)
{
    uintptr_t k = 0;
    memcpy(&k, &r, sizeof r < sizeof k ? sizeof r : sizeof k);
    return k ? k : 1; /* keep 0 for "empty" */
}

static unsigned home(uintptr_t k)
{
    return (unsigned)(((uint64_t)k * 0x9E3779B97F4A7C15ull) >> (64 - TRK_BITS));
}

static int find(uintptr_t k)
{
    for (unsigned i = home(k), n = 0; n < TRK_SIZE; i = (i + 1) & TRK_MASK, n++) {
        if (trk[i].key == k) return (int)i;
        if (!trk[i].key) return -1;
    }
    return -1;
}

static void del(unsigned i) /* backward-shift deletion keeps probe chains intact */
{
    trk[i].key = 0;
    trk_live--;
    for (unsigned j = (i + 1) & TRK_MASK; trk[j].key; j = (j + 1) & TRK_MASK) {
        unsigned h = home(trk[j].key);
        int movable = (i <= j) ? (h <= i || h > j) : (h <= i && h > j);
        if (movable) {
            trk[i] = trk[j];
            trk[j].key = 0;
            i = j;
        }
    }
}

void mpib_track_clear(void)
{
    if (trk_live) memset(trk, 0, sizeof trk);
    trk_live = 0;
}

void mpib_track_post(int fid, MPI_Request r, const mpib_bytes_t *b, uint64_t dt)
{
    if (!mpib_track_on || r == MPI_REQUEST_NULL || trk_live >= TRK_MAX_LIVE) return;
    uintptr_t k = key_of(r);
    unsigned i = home(k);
    while (trk[i].key && trk[i].key != k) i = (i + 1) & TRK_MASK;
    if (!trk[i].key) trk_live++;
    trk[i].key = k;
    trk[i].fid = fid;
    trk[i].posted = mpib_pos(b->posted);
    trk[i].dt = dt;
}

int mpib_track_pre(int count, const MPI_Request *reqs)
{
    if (!trk_live || count <= 0 || !reqs) return 0;
    if (count > MPIB_TRK_SCRATCH) { /* cannot follow them all: forget, stay "unknown" */
        mpib_track_clear();
        return 0;
    }
    int any = 0;
    for (int i = 0; i < count; i++) {
        trk_saved[i] = reqs[i];
        if (!any && reqs[i] != MPI_REQUEST_NULL && find(key_of(reqs[i])) >= 0) any = 1;
    }
    return any;
}

MPI_Status *mpib_track_statuses(void) { return trk_st; }

void mpib_track_forget(MPI_Request r)
{
    if (!trk_live || r == MPI_REQUEST_NULL) return;
    int i = find(key_of(r));
    if (i >= 0) del((unsigned)i);
}

static int bin_of(uint64_t h) { return h ? 64 - __builtin_clzll(h) : 0; }

static void attribute(const trk_ent_t *e, const MPI_Status *st)
{
    MPI_Count n = 0;
    if (PMPI_Get_elements_x(st, MPI_BYTE, &n) != MPI_SUCCESS || n == MPI_UNDEFINED || n < 0)
        return;
    mpib_slot_t *s = mpib_tls.slot;
    if (!s) return;
    mpib_fn_t *f = &s->fn[e->fid];
    uint64_t bytes = (uint64_t)n;
    /* Single-threaded by construction (see top): plain updates of this thread's slot. */
    MPIB_ST(&f->recv, MPIB_LD(&f->recv) + bytes);
    if (MPIB_LD(&f->unknown)) MPIB_ST(&f->unknown, MPIB_LD(&f->unknown) - 1);
    uint64_t p = MPIB_LD(&f->posted);
    MPIB_ST(&f->posted, p >= e->posted ? p - e->posted : 0);
    int from = bin_of(e->posted), to = bin_of(bytes);
    if (!MPIB_LD(&f->hcalls[from])) return;
    /* the call was binned by its posted size; now it is known by its received size */
    uint64_t hb = MPIB_LD(&f->hbytes[from]);
    MPIB_ST(&f->hbytes[from], hb >= e->posted ? hb - e->posted : 0);
    MPIB_ST(&f->hbytes[to], MPIB_LD(&f->hbytes[to]) + bytes);
    if (from != to) {
        MPIB_ST(&f->hcalls[from], MPIB_LD(&f->hcalls[from]) - 1);
        uint64_t t = MPIB_LD(&f->hticks[from]);
        MPIB_ST(&f->hticks[from], t >= e->dt ? t - e->dt : 0);
        MPIB_ST(&f->hcalls[to], MPIB_LD(&f->hcalls[to]) + 1);
        MPIB_ST(&f->hticks[to], MPIB_LD(&f->hticks[to]) + e->dt);
    }
}

void mpib_track_done(int count, const MPI_Request *after, const MPI_Status *st, int mode,
                     int index, int outcount, const int *indices, int rc)
{
    for (int i = 0; i < count; i++) {
        if (trk_saved[i] == MPI_REQUEST_NULL) continue;
        /* A completed non-persistent request is deallocated: its handle became NULL. */
        if (after[i] != MPI_REQUEST_NULL) continue;
        int at = find(key_of(trk_saved[i]));
        if (at < 0) continue;
        const MPI_Status *s = NULL;
        if (rc == MPI_SUCCESS) {
            if (mode == MPIB_TRK_ALL) {
                s = &st[i];
            } else if (mode == MPIB_TRK_ANY) {
                if (i == index) s = st;
            } else {
                for (int k = 0; k < outcount; k++)
                    if (indices[k] == i) s = &st[k];
            }
        }
        if (s) attribute(&trk[at], s);
        del((unsigned)at);
    }
}

/* Collective family, with IMB's size semantics:
 *   Allreduce, Reduce, Reduce_scatter: size = the whole vector (MPI_FLOAT, MPI_SUM, size/4
 *     elements); Reduce_scatter splits it into balanced blocks over the ranks;
 *   Allgather(v), Gather(v), Scatter(v), Alltoall(v): size = the block one rank sends to /
 *     receives from one peer (MPI_BYTE);
 *   Bcast: size = the broadcast message; Barrier: no size.
 * v-variants use balanced counts (every block = size) so they compare with the plain calls.
 * Bandwidth counts the whole data of one operation (nccl-tests "algbw"); bus bandwidth
 * multiplies it by the factors in DESIGN.md.
 */
#include "mb.h"

#include <string.h>

#if MB_HAVE_LARGE
#define LC(c, plain, big) ((c)->large ? (big) : (plain))
#else
#define LC(c, plain, big) (plain)
#endif

#define N(c) ((int)(c)->size)
#define NL(c) ((MPI_Count)(c)->size)
#define FN(c) ((int)((c)->size / 4))
#define FNL(c) ((MPI_Count)((c)->size / 4))

static int64_t fcount(const mb_ctx *c) { return c->size / 4; }
static int is_root(const mb_ctx *c) { return c->rank == c->root; }
/* with --root-shift every rank becomes root, so every rank needs the root's buffers */
static int may_be_root(const mb_ctx *c) { return c->any_root || c->rank == c->root; }

/* the pattern of the block rank src sends to rank dst */
static int blockwho(int src, int dst) { return src * 17 + dst * 5 + 3; }

/* expected element i of a sum over all ranks of mb_fpat */
static float fsum(int np, int64_t i, int it)
{
    float s = 0;
    for (int p = 0; p < np; p++)
        s += mb_fpat(p, i, it);
    return s;
}

static int64_t check_fsum(const mb_ctx *c, const float *v, int64_t n, int64_t off, int it,
                          double *e, double *g)
{
    for (int64_t i = 0; i < n; i++) {
        float want = fsum(c->np, off + i, it);
        if (v[i] != want) {
            *e = want;
            *g = v[i];
            return i;
        }
    }
    return -1;
}

static int64_t check_blocks(const unsigned char *b, int64_t n, int src, int dst, int it,
                            double *e, double *g)
{
    return mb_check_pat(b, n, blockwho(src, dst), it, e, g);
}

static void fill_fpat(mb_ctx *c, int it)
{
    float *v = (float *)(void *)c->sbuf;
    for (int64_t i = 0; i < c->sbytes / 4; i++)
        v[i] = mb_fpat(c->rank, i, it);
}

static void fill_bytes(mb_ctx *c, int it) { mb_fill_pat(c->sbuf, c->sbytes, c->rank, it); }

/* root's send buffer holds one block per destination */
static void fill_blocks_root(mb_ctx *c, int it)
{
    if (!is_root(c))
        return;
    for (int p = 0; p < c->np; p++)
        mb_fill_pat(c->sbuf + (int64_t)p * c->size, c->size, blockwho(c->rank, p), it);
}

static void fill_blocks_all(mb_ctx *c, int it)
{
    for (int p = 0; p < c->np; p++)
        mb_fill_pat(c->sbuf + (int64_t)p * c->size, c->size, blockwho(c->rank, p), it);
}

/* balanced counts and displacements: every block = size bytes */
static void setup_v(mb_ctx *c)
{
    for (int p = 0; p < c->np; p++) {
        c->counts[p] = (int)(c->large ? 0 : c->size);
        c->displs[p] = (int)(c->large ? 0 : (int64_t)p * c->size);
#if MB_HAVE_LARGE
        c->lcounts[p] = (MPI_Count)c->size;
        c->ldispls[p] = (MPI_Aint)((int64_t)p * c->size);
#endif
    }
}

/* Reduce_scatter: the vector of size/4 floats split as evenly as possible */
static void setup_rs(mb_ctx *c)
{
    int64_t n = fcount(c), base = n / c->np, rem = n % c->np, off = 0;
    for (int p = 0; p < c->np; p++) {
        int64_t k = base + (p < rem);
        c->counts[p] = (int)(c->large ? 0 : k);
        c->displs[p] = (int)(c->large ? 0 : off);
#if MB_HAVE_LARGE
        c->lcounts[p] = (MPI_Count)k;
        c->ldispls[p] = (MPI_Aint)off;
#endif
        off += k;
    }
}

/* ---- buffer sizes ---- */
static void buf_allreduce(const mb_ctx *c, int64_t *s, int64_t *r)
{
    *s = *r = fcount(c) * 4;
}
static void buf_reduce(const mb_ctx *c, int64_t *s, int64_t *r)
{
    *s = fcount(c) * 4;
    *r = may_be_root(c) ? fcount(c) * 4 : 0;
}
static void buf_rs(const mb_ctx *c, int64_t *s, int64_t *r)
{
    *s = fcount(c) * 4;
    int64_t n = fcount(c), base = n / c->np, rem = n % c->np;
    *r = (base + (c->rank < rem)) * 4;
}
static void buf_allgather(const mb_ctx *c, int64_t *s, int64_t *r)
{
    *s = c->size;
    *r = c->size * c->np;
}
static void buf_gather(const mb_ctx *c, int64_t *s, int64_t *r)
{
    *s = c->size;
    *r = may_be_root(c) ? c->size * c->np : 0;
}
static void buf_scatter(const mb_ctx *c, int64_t *s, int64_t *r)
{
    *s = may_be_root(c) ? c->size * c->np : 0;
    *r = c->size;
}
static void buf_alltoall(const mb_ctx *c, int64_t *s, int64_t *r)
{
    *s = *r = c->size * c->np;
}
static void buf_bcast(const mb_ctx *c, int64_t *s, int64_t *r)
{
    *s = may_be_root(c) ? c->size : 0;
    *r = c->any_root || !is_root(c) ? c->size : 0;
}
static void buf_none(const mb_ctx *c, int64_t *s, int64_t *r)
{
    (void)c;
    *s = *r = 0;
}

/* ---- one iteration ---- */
static int run_allreduce(mb_ctx *c)
{
    return LC(c, MPI_Allreduce(c->sbuf, c->rbuf, FN(c), MPI_FLOAT, MPI_SUM, c->comm),
              MPI_Allreduce_c(c->sbuf, c->rbuf, FNL(c), MPI_FLOAT, MPI_SUM, c->comm));
}
static int run_reduce(mb_ctx *c)
{
    return LC(c, MPI_Reduce(c->sbuf, c->rbuf, FN(c), MPI_FLOAT, MPI_SUM, c->root, c->comm),
              MPI_Reduce_c(c->sbuf, c->rbuf, FNL(c), MPI_FLOAT, MPI_SUM, c->root, c->comm));
}
static int run_rs(mb_ctx *c)
{
    return LC(c, MPI_Reduce_scatter(c->sbuf, c->rbuf, c->counts, MPI_FLOAT, MPI_SUM, c->comm),
              MPI_Reduce_scatter_c(c->sbuf, c->rbuf, c->lcounts, MPI_FLOAT, MPI_SUM, c->comm));
}
static int run_allgather(mb_ctx *c)
{
    return LC(c, MPI_Allgather(c->sbuf, N(c), MPI_BYTE, c->rbuf, N(c), MPI_BYTE, c->comm),
              MPI_Allgather_c(c->sbuf, NL(c), MPI_BYTE, c->rbuf, NL(c), MPI_BYTE, c->comm));
}
static int run_allgatherv(mb_ctx *c)
{
    return LC(c,
              MPI_Allgatherv(c->sbuf, N(c), MPI_BYTE, c->rbuf, c->counts, c->displs, MPI_BYTE,
                             c->comm),
              MPI_Allgatherv_c(c->sbuf, NL(c), MPI_BYTE, c->rbuf, c->lcounts, c->ldispls,
                               MPI_BYTE, c->comm));
}
static int run_gather(mb_ctx *c)
{
    return LC(c,
              MPI_Gather(c->sbuf, N(c), MPI_BYTE, c->rbuf, N(c), MPI_BYTE, c->root, c->comm),
              MPI_Gather_c(c->sbuf, NL(c), MPI_BYTE, c->rbuf, NL(c), MPI_BYTE, c->root,
                           c->comm));
}
static int run_gatherv(mb_ctx *c)
{
    return LC(c,
              MPI_Gatherv(c->sbuf, N(c), MPI_BYTE, c->rbuf, c->counts, c->displs, MPI_BYTE,
                          c->root, c->comm),
              MPI_Gatherv_c(c->sbuf, NL(c), MPI_BYTE, c->rbuf, c->lcounts, c->ldispls,
                            MPI_BYTE, c->root, c->comm));
}
static int run_scatter(mb_ctx *c)
{
    return LC(c,
              MPI_Scatter(c->sbuf, N(c), MPI_BYTE, c->rbuf, N(c), MPI_BYTE, c->root, c->comm),
              MPI_Scatter_c(c->sbuf, NL(c), MPI_BYTE, c->rbuf, NL(c), MPI_BYTE, c->root,
                            c->comm));
}
static int run_scatterv(mb_ctx *c)
{
    return LC(c,
              MPI_Scatterv(c->sbuf, c->counts, c->displs, MPI_BYTE, c->rbuf, N(c), MPI_BYTE,
                           c->root, c->comm),
              MPI_Scatterv_c(c->sbuf, c->lcounts, c->ldispls, MPI_BYTE, c->rbuf, NL(c),
                             MPI_BYTE, c->root, c->comm));
}
static int run_alltoall(mb_ctx *c)
{
    return LC(c, MPI_Alltoall(c->sbuf, N(c), MPI_BYTE, c->rbuf, N(c), MPI_BYTE, c->comm),
              MPI_Alltoall_c(c->sbuf, NL(c), MPI_BYTE, c->rbuf, NL(c), MPI_BYTE, c->comm));
}
static int run_alltoallv(mb_ctx *c)
{
    return LC(c,
              MPI_Alltoallv(c->sbuf, c->counts, c->displs, MPI_BYTE, c->rbuf, c->counts,
                            c->displs, MPI_BYTE, c->comm),
              MPI_Alltoallv_c(c->sbuf, c->lcounts, c->ldispls, MPI_BYTE, c->rbuf, c->lcounts,
                              c->ldispls, MPI_BYTE, c->comm));
}
static int run_bcast(mb_ctx *c)
{
    void *b = is_root(c) ? (void *)c->sbuf : (void *)c->rbuf;
    return LC(c, MPI_Bcast(b, N(c), MPI_BYTE, c->root, c->comm),
              MPI_Bcast_c(b, NL(c), MPI_BYTE, c->root, c->comm));
}
static int run_barrier(mb_ctx *c) { return MPI_Barrier(c->comm); }

/* ---- validation ---- */
static int64_t chk_allreduce(mb_ctx *c, int it, double *e, double *g)
{
    return check_fsum(c, (const float *)(void *)c->rbuf, fcount(c), 0, it, e, g);
}
static int64_t chk_reduce(mb_ctx *c, int it, double *e, double *g)
{
    return is_root(c) ? chk_allreduce(c, it, e, g) : -1;
}
static int64_t chk_rs(mb_ctx *c, int it, double *e, double *g)
{
    int64_t n = fcount(c), base = n / c->np, rem = n % c->np;
    int64_t mine = base + (c->rank < rem);
    int64_t off = (int64_t)c->rank * base + (c->rank < rem ? c->rank : rem);
    return check_fsum(c, (const float *)(void *)c->rbuf, mine, off, it, e, g);
}
static int64_t chk_gathered(mb_ctx *c, int it, double *e, double *g)
{
    for (int p = 0; p < c->np; p++) {
        int64_t bad = mb_check_pat(c->rbuf + (int64_t)p * c->size, c->size, p, it, e, g);
        if (bad >= 0)
            return (int64_t)p * c->size + bad;
    }
    return -1;
}
static int64_t chk_gather(mb_ctx *c, int it, double *e, double *g)
{
    return is_root(c) ? chk_gathered(c, it, e, g) : -1;
}
static int64_t chk_scatter(mb_ctx *c, int it, double *e, double *g)
{
    return check_blocks(c->rbuf, c->size, c->root, c->rank, it, e, g);
}
static int64_t chk_alltoall(mb_ctx *c, int it, double *e, double *g)
{
    for (int q = 0; q < c->np; q++) {
        int64_t bad = check_blocks(c->rbuf + (int64_t)q * c->size, c->size, q, c->rank, it, e, g);
        if (bad >= 0)
            return (int64_t)q * c->size + bad;
    }
    return -1;
}
static void fill_bcast(mb_ctx *c, int it)
{
    if (is_root(c))
        mb_fill_pat(c->sbuf, c->size, c->rank, it);
}
static int64_t chk_bcast(mb_ctx *c, int it, double *e, double *g)
{
    return is_root(c) ? -1 : mb_check_pat(c->rbuf, c->size, c->root, it, e, g);
}
static void fill_none(mb_ctx *c, int it) { (void)c; (void)it; }
static int64_t chk_none(mb_ctx *c, int it, double *e, double *g)
{
    (void)c; (void)it; (void)e; (void)g;
    return -1;
}

/* ---- bytes and bus-bandwidth factors ---- */
static double bytes_size(const mb_ctx *c) { return (double)c->size; }
/* Reductions work on whole floats: 1-3 bytes reduce nothing and must not claim a bandwidth. */
static double bytes_floats(const mb_ctx *c) { return (double)(c->size / 4 * 4); }
static double bytes_np(const mb_ctx *c) { return (double)c->size * c->np; }
static double bytes_zero(const mb_ctx *c) { (void)c; return 0.0; }
static double bus_allreduce(int n) { return 2.0 * (n - 1) / n; }
static double bus_nm1(int n) { return (double)(n - 1) / n; }
static double bus_one(int n) { (void)n; return 1.0; }

#define COLL .kind = MB_COLL, .min_np = 1, .sized = 1, .iter_div = 1

const mb_bench mb_coll_benches[] = {
    {.name = "Allreduce", COLL, .bufsize = buf_allreduce, .run = run_allreduce,
     .bytes = bytes_floats, .busbw = bus_allreduce, .fill = fill_fpat, .check = chk_allreduce,
     .elem_bytes = 4},
    {.name = "Reduce", COLL, .bufsize = buf_reduce, .run = run_reduce, .bytes = bytes_floats,
     .busbw = bus_one, .fill = fill_fpat, .check = chk_reduce, .elem_bytes = 4},
    {.name = "Reduce_scatter", COLL, .setup = setup_rs, .bufsize = buf_rs, .run = run_rs,
     .bytes = bytes_floats, .busbw = bus_nm1, .fill = fill_fpat, .check = chk_rs,
     .elem_bytes = 4},
    {.name = "Allgather", COLL, .bufsize = buf_allgather, .run = run_allgather,
     .bytes = bytes_np, .busbw = bus_nm1, .fill = fill_bytes, .check = chk_gathered,
     .elem_bytes = 1},
    {.name = "Allgatherv", COLL, .vdispl = 1, .setup = setup_v, .bufsize = buf_allgather,
     .run = run_allgatherv, .bytes = bytes_np, .busbw = bus_nm1, .fill = fill_bytes,
     .check = chk_gathered, .elem_bytes = 1},
    {.name = "Gather", COLL, .bufsize = buf_gather, .run = run_gather, .bytes = bytes_np,
     .busbw = bus_nm1, .fill = fill_bytes, .check = chk_gather, .elem_bytes = 1},
    {.name = "Gatherv", COLL, .vdispl = 1, .setup = setup_v, .bufsize = buf_gather,
     .run = run_gatherv, .bytes = bytes_np, .busbw = bus_nm1, .fill = fill_bytes,
     .check = chk_gather, .elem_bytes = 1},
    {.name = "Scatter", COLL, .bufsize = buf_scatter, .run = run_scatter, .bytes = bytes_np,
     .busbw = bus_nm1, .fill = fill_blocks_root, .check = chk_scatter, .elem_bytes = 1},
    {.name = "Scatterv", COLL, .vdispl = 1, .setup = setup_v, .bufsize = buf_scatter,
     .run = run_scatterv, .bytes = bytes_np, .busbw = bus_nm1, .fill = fill_blocks_root,
     .check = chk_scatter, .elem_bytes = 1},
    {.name = "Alltoall", COLL, .bufsize = buf_alltoall, .run = run_alltoall, .bytes = bytes_np,
     .busbw = bus_nm1, .fill = fill_blocks_all, .check = chk_alltoall, .elem_bytes = 1},
    {.name = "Alltoallv", COLL, .vdispl = 1, .setup = setup_v, .bufsize = buf_alltoall,
     .run = run_alltoallv, .bytes = bytes_np, .busbw = bus_nm1, .fill = fill_blocks_all,
     .check = chk_alltoall, .elem_bytes = 1},
    {.name = "Bcast", COLL, .bufsize = buf_bcast, .run = run_bcast, .bytes = bytes_size,
     .busbw = bus_one, .fill = fill_bcast, .check = chk_bcast, .elem_bytes = 1},
    {.name = "Barrier", .kind = MB_COLL, .min_np = 1, .sized = 0, .iter_div = 1,
     .bufsize = buf_none, .run = run_barrier, .bytes = bytes_zero, .fill = fill_none,
     .check = chk_none, .elem_bytes = 1},
    {.name = NULL},
};

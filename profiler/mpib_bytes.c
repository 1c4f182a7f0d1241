/* Byte rules: how many bytes an MPI call sent (contributed) and received on this rank.
 *
 * Datatypes that the standard says are ignored (the send type under MPI_IN_PLACE, the
 * receive type at a non-root) are never passed to MPI_Type_size: they may be garbage. Counts
 * of zero never look at the type either.
 */
#include "mpib_internal.h"

static int64_t tsize(MPI_Datatype t)
{
    MPI_Count s = 0;
    if (t == MPI_DATATYPE_NULL) return 0;
    if (PMPI_Type_size_x(t, &s) != MPI_SUCCESS || s < 0 || s == MPI_UNDEFINED) return 0;
    return (int64_t)s;
}

static int64_t nbytes(int64_t count, MPI_Datatype t)
{
    return count > 0 ? count * tsize(t) : 0;
}

static int64_t at(const void *counts, int is64, int i)
{
    return is64 ? (int64_t)((const MPI_Count *)counts)[i] : (int64_t)((const int *)counts)[i];
}

/* Bit i of a skip mask set: peer i moves no data (a Cartesian MPI_PROC_NULL neighbour; only
 * the first 64 peers can be marked). Every other caller passes 0. */
static int skipped(uint64_t skip, int i) { return i < 64 && ((skip >> i) & 1); }

static int64_t sum(const void *counts, int is64, int n, uint64_t skip)
{
    int64_t s = 0;
    if (!counts) return 0;
    for (int i = 0; i < n; i++) {
        int64_t v = at(counts, is64, i);
        if (v > 0 && !(skip && skipped(skip, i))) s += v;
    }
    return s;
}

typedef struct {
    int n;     /* peers: local size, or remote size on an intercommunicator */
    int rank;
    int inter;
    int local; /* local group size */
} cinfo_t;

static cinfo_t cinfo(MPI_Comm c)
{
    cinfo_t ci = {0, 0, 0, 0};
    PMPI_Comm_test_inter(c, &ci.inter);
    PMPI_Comm_size(c, &ci.local);
    PMPI_Comm_rank(c, &ci.rank);
    ci.n = ci.local;
    if (ci.inter) PMPI_Comm_remote_size(c, &ci.n);
    return ci;
}

/* Role in a rooted collective: 1 root, 0 non-root, -1 no part (intercomm MPI_PROC_NULL). */
static int role(int root, const cinfo_t *ci)
{
    if (ci->inter) return root == MPI_ROOT ? 1 : (root == MPI_PROC_NULL ? -1 : 0);
    return root == ci->rank;
}

void mpib_b_send(mpib_bytes_t *b, int64_t count, MPI_Datatype t) { b->sent = nbytes(count, t); }

void mpib_b_posted(mpib_bytes_t *b, int64_t count, MPI_Datatype t)
{
    b->posted = nbytes(count, t);
    b->unknown = 1;
}

void mpib_b_psend(mpib_bytes_t *b, int64_t partitions, int64_t count, MPI_Datatype t)
{
    b->sent = partitions > 0 ? partitions * nbytes(count, t) : 0;
}

void mpib_b_precv(mpib_bytes_t *b, int64_t partitions, int64_t count, MPI_Datatype t)
{
    b->posted = partitions > 0 ? partitions * nbytes(count, t) : 0;
    b->unknown = 1;
}

void mpib_b_status(mpib_bytes_t *b, const MPI_Status *st)
{
    MPI_Count n = 0;
    if (PMPI_Get_elements_x(st, MPI_BYTE, &n) == MPI_SUCCESS && n != MPI_UNDEFINED && n >= 0)
        b->recv = (int64_t)n;
    else
        b->unknown = 1;
}

void mpib_b_sendrecv(mpib_bytes_t *b, int64_t scount, MPI_Datatype st, const MPI_Status *s)
{
    b->sent = nbytes(scount, st);
    mpib_b_status(b, s);
}

void mpib_b_isendrecv(mpib_bytes_t *b, int64_t scount, MPI_Datatype st, int64_t rcount,
                      MPI_Datatype rt)
{
    b->sent = nbytes(scount, st);
    mpib_b_posted(b, rcount, rt);
}

void mpib_b_bcast(mpib_bytes_t *b, int64_t count, MPI_Datatype t, int root, MPI_Comm c)
{
    cinfo_t ci = cinfo(c);
    int r = role(root, &ci);
    if (r == 1)
        b->sent = nbytes(count, t);
    else if (r == 0)
        b->recv = nbytes(count, t);
}

void mpib_b_reduce(mpib_bytes_t *b, int64_t count, MPI_Datatype t, int root, MPI_Comm c)
{
    cinfo_t ci = cinfo(c);
    int r = role(root, &ci);
    int64_t v = nbytes(count, t);
    if (ci.inter) {
        if (r == 1) b->recv = v;
        else if (r == 0) b->sent = v;
        return;
    }
    b->sent = v;
    if (r == 1) b->recv = v;
}

void mpib_b_allreduce(mpib_bytes_t *b, int64_t count, MPI_Datatype t)
{
    b->sent = b->recv = nbytes(count, t);
}

void mpib_b_reduce_scatter_block(mpib_bytes_t *b, int64_t rcount, MPI_Datatype t, MPI_Comm c)
{
    cinfo_t ci = cinfo(c);
    b->recv = nbytes(rcount, t);
    b->sent = b->recv * ci.local;
}

void mpib_b_reduce_scatter(mpib_bytes_t *b, const void *rcounts, int r64, MPI_Datatype t,
                           MPI_Comm c)
{
    cinfo_t ci = cinfo(c);
    int64_t ts = tsize(t);
    b->sent = sum(rcounts, r64, ci.local, 0) * ts;
    b->recv = rcounts ? at(rcounts, r64, ci.rank) * ts : 0;
}

void mpib_b_allgather(mpib_bytes_t *b, const void *sbuf, int64_t scount, MPI_Datatype st,
                      int64_t rcount, MPI_Datatype rt, MPI_Comm c)
{
    cinfo_t ci = cinfo(c);
    int64_t block = nbytes(rcount, rt);
    b->sent = sbuf == MPI_IN_PLACE ? block : nbytes(scount, st);
    b->recv = block * ci.n;
}

void mpib_b_allgatherv(mpib_bytes_t *b, const void *sbuf, int64_t scount, MPI_Datatype st,
                       const void *rcounts, int r64, MPI_Datatype rt, MPI_Comm c)
{
    cinfo_t ci = cinfo(c);
    int64_t rts = tsize(rt);
    b->sent = sbuf == MPI_IN_PLACE ? at(rcounts, r64, ci.rank) * rts : nbytes(scount, st);
    b->recv = sum(rcounts, r64, ci.n, 0) * rts;
}

void mpib_b_gather(mpib_bytes_t *b, const void *sbuf, int64_t scount, MPI_Datatype st,
                   int64_t rcount, MPI_Datatype rt, int root, MPI_Comm c)
{
    cinfo_t ci = cinfo(c);
    int r = role(root, &ci);
    if (r == 1) {
        int64_t block = nbytes(rcount, rt);
        b->recv = block * ci.n;
        if (!ci.inter) b->sent = sbuf == MPI_IN_PLACE ? block : nbytes(scount, st);
    } else if (r == 0) {
        b->sent = nbytes(scount, st);
    }
}

void mpib_b_gatherv(mpib_bytes_t *b, const void *sbuf, int64_t scount, MPI_Datatype st,
                    const void *rcounts, int r64, MPI_Datatype rt, int root, MPI_Comm c)
{
    cinfo_t ci = cinfo(c);
    int r = role(root, &ci);
    if (r == 1) {
        int64_t rts = tsize(rt);
        b->recv = sum(rcounts, r64, ci.n, 0) * rts;
        if (!ci.inter)
            b->sent = sbuf == MPI_IN_PLACE ? at(rcounts, r64, ci.rank) * rts
                                           : nbytes(scount, st);
    } else if (r == 0) {
        b->sent = nbytes(scount, st);
    }
}

void mpib_b_scatter(mpib_bytes_t *b, int64_t scount, MPI_Datatype st, const void *rbuf,
                    int64_t rcount, MPI_Datatype rt, int root, MPI_Comm c)
{
    cinfo_t ci = cinfo(c);
    int r = role(root, &ci);
    if (r == 1) {
        int64_t block = nbytes(scount, st);
        b->sent = block * ci.n;
        if (!ci.inter) b->recv = rbuf == MPI_IN_PLACE ? block : nbytes(rcount, rt);
    } else if (r == 0) {
        b->recv = nbytes(rcount, rt);
    }
}

void mpib_b_scatterv(mpib_bytes_t *b, const void *scounts, int s64, MPI_Datatype st,
                     const void *rbuf, int64_t rcount, MPI_Datatype rt, int root, MPI_Comm c)
{
    cinfo_t ci = cinfo(c);
    int r = role(root, &ci);
    if (r == 1) {
        int64_t sts = tsize(st);
        b->sent = sum(scounts, s64, ci.n, 0) * sts;
        if (!ci.inter)
            b->recv = rbuf == MPI_IN_PLACE ? at(scounts, s64, ci.rank) * sts
                                           : nbytes(rcount, rt);
    } else if (r == 0) {
        b->recv = nbytes(rcount, rt);
    }
}

void mpib_b_alltoall(mpib_bytes_t *b, const void *sbuf, int64_t scount, MPI_Datatype st,
                     int64_t rcount, MPI_Datatype rt, MPI_Comm c)
{
    cinfo_t ci = cinfo(c);
    b->recv = nbytes(rcount, rt) * ci.n;
    b->sent = sbuf == MPI_IN_PLACE ? b->recv : nbytes(scount, st) * ci.n;
}

void mpib_b_alltoallv(mpib_bytes_t *b, const void *sbuf, const void *scounts, int s64,
                      MPI_Datatype st, const void *rcounts, int r64, MPI_Datatype rt,
                      MPI_Comm c)
{
    cinfo_t ci = cinfo(c);
    b->recv = sum(rcounts, r64, ci.n, 0) * tsize(rt);
    b->sent = sbuf == MPI_IN_PLACE ? b->recv : sum(scounts, s64, ci.n, 0) * tsize(st);
}

static int64_t sum_w(const void *counts, int is64, const MPI_Datatype *types, int n,
                     uint64_t skip)
{
    int64_t s = 0;
    if (!counts || !types) return 0;
    for (int i = 0; i < n; i++)
        if (!(skip && skipped(skip, i))) s += nbytes(at(counts, is64, i), types[i]);
    return s;
}

void mpib_b_alltoallw(mpib_bytes_t *b, const void *sbuf, const void *scounts, int s64,
                      const MPI_Datatype *st, const void *rcounts, int r64,
                      const MPI_Datatype *rt, MPI_Comm c)
{
    cinfo_t ci = cinfo(c);
    b->recv = sum_w(rcounts, r64, rt, ci.n, 0);
    b->sent = sbuf == MPI_IN_PLACE ? b->recv : sum_w(scounts, s64, st, ci.n, 0);
}

void mpib_b_put(mpib_bytes_t *b, int64_t count, MPI_Datatype t) { b->sent = nbytes(count, t); }

void mpib_b_get(mpib_bytes_t *b, int64_t count, MPI_Datatype t) { b->recv = nbytes(count, t); }

void mpib_b_get_accumulate(mpib_bytes_t *b, int64_t ocount, MPI_Datatype ot, int64_t rcount,
                           MPI_Datatype rt)
{
    b->sent = nbytes(ocount, ot);
    b->recv = nbytes(rcount, rt);
}

void mpib_b_fetch_and_op(mpib_bytes_t *b, MPI_Datatype t) { b->sent = b->recv = tsize(t); }

void mpib_b_io_write(mpib_bytes_t *b, int64_t count, MPI_Datatype t) { b->sent = nbytes(count, t); }

void mpib_b_io_posted(mpib_bytes_t *b, int64_t count, MPI_Datatype t) { mpib_b_posted(b, count, t); }

/* ---- neighbourhood collectives ------------------------------------------------------------
 * Peers come from the communicator's topology: Cartesian 2 x ndims (negative then positive
 * direction per dimension, the same order for sources and destinations), graph the rank's
 * neighbour count, distributed graph its in- and out-degree. Cartesian neighbours that are
 * MPI_PROC_NULL (the edges of a non-periodic dimension) move no data: their blocks are not
 * counted. The send block of an allgather is counted once (contributed, as for Allgather). */
typedef struct {
    int in, out;
    uint64_t nullmask; /* Cartesian: bit i set if neighbour i is MPI_PROC_NULL (i < 64) */
} nbinfo_t;

static nbinfo_t nbinfo(MPI_Comm c)
{
    nbinfo_t nb = {0, 0, 0};
    int topo = MPI_UNDEFINED;
    if (PMPI_Topo_test(c, &topo) != MPI_SUCCESS) return nb;
    if (topo == MPI_CART) {
        int nd = 0;
        PMPI_Cartdim_get(c, &nd);
        nb.in = nb.out = 2 * nd;
        for (int d = 0; d < nd && d < 32; d++) {
            int src = MPI_PROC_NULL, dst = MPI_PROC_NULL;
            if (PMPI_Cart_shift(c, d, 1, &src, &dst) != MPI_SUCCESS) continue;
            if (src == MPI_PROC_NULL) nb.nullmask |= 1ull << (2 * d);
            if (dst == MPI_PROC_NULL) nb.nullmask |= 1ull << (2 * d + 1);
        }
    } else if (topo == MPI_GRAPH) {
        int r = 0, n = 0;
        PMPI_Comm_rank(c, &r);
        PMPI_Graph_neighbors_count(c, r, &n);
        nb.in = nb.out = n;
    } else if (topo == MPI_DIST_GRAPH) {
        int weighted = 0;
        PMPI_Dist_graph_neighbors_count(c, &nb.in, &nb.out, &weighted);
    }
    return nb;
}

static int nb_real(const nbinfo_t *nb, int i) { return !skipped(nb->nullmask, i); }

static int nb_nreal(const nbinfo_t *nb, int n)
{
    int k = 0;
    for (int i = 0; i < n; i++) k += nb_real(nb, i);
    return k;
}

void mpib_b_nb_allgather(mpib_bytes_t *b, int64_t scount, MPI_Datatype st, int64_t rcount,
                         MPI_Datatype rt, MPI_Comm c)
{
    nbinfo_t nb = nbinfo(c);
    b->sent = nb_nreal(&nb, nb.out) ? nbytes(scount, st) : 0;
    b->recv = nb_nreal(&nb, nb.in) * nbytes(rcount, rt);
}

void mpib_b_nb_allgatherv(mpib_bytes_t *b, int64_t scount, MPI_Datatype st,
                          const void *rcounts, int r64, MPI_Datatype rt, MPI_Comm c)
{
    nbinfo_t nb = nbinfo(c);
    b->sent = nb_nreal(&nb, nb.out) ? nbytes(scount, st) : 0;
    b->recv = sum(rcounts, r64, nb.in, nb.nullmask) * tsize(rt);
}

void mpib_b_nb_alltoall(mpib_bytes_t *b, int64_t scount, MPI_Datatype st, int64_t rcount,
                        MPI_Datatype rt, MPI_Comm c)
{
    nbinfo_t nb = nbinfo(c);
    b->sent = nb_nreal(&nb, nb.out) * nbytes(scount, st);
    b->recv = nb_nreal(&nb, nb.in) * nbytes(rcount, rt);
}

void mpib_b_nb_alltoallv(mpib_bytes_t *b, const void *scounts, int s64, MPI_Datatype st,
                         const void *rcounts, int r64, MPI_Datatype rt, MPI_Comm c)
{
    nbinfo_t nb = nbinfo(c);
    b->sent = sum(scounts, s64, nb.out, nb.nullmask) * tsize(st);
    b->recv = sum(rcounts, r64, nb.in, nb.nullmask) * tsize(rt);
}

void mpib_b_nb_alltoallw(mpib_bytes_t *b, const void *scounts, int s64, const MPI_Datatype *st,
                         const void *rcounts, int r64, const MPI_Datatype *rt, MPI_Comm c)
{
    nbinfo_t nb = nbinfo(c);
    b->sent = sum_w(scounts, s64, st, nb.out, nb.nullmask);
    b->recv = sum_w(rcounts, r64, rt, nb.in, nb.nullmask);
}

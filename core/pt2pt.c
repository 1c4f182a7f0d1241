/* Point-to-point family: PingPong, PingPing, Sendrecv, Exchange, Uniband, Biband.
 *
 * IMB semantics: PingPong/PingPing/Uniband/Biband use ranks 0 and 1 only (single transfer,
 * the other ranks idle in the driver's barriers); Sendrecv and Exchange run on every rank as a
 * periodic chain.  Sizes are message sizes in bytes, sent as MPI_BYTE.
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

static int mb_send(mb_ctx *c, const void *b, int to, int tag)
{
    return LC(c, MPI_Send(b, N(c), MPI_BYTE, to, tag, c->comm),
              MPI_Send_c(b, NL(c), MPI_BYTE, to, tag, c->comm));
}
static int mb_recv(mb_ctx *c, void *b, int from, int tag)
{
    return LC(c, MPI_Recv(b, N(c), MPI_BYTE, from, tag, c->comm, MPI_STATUS_IGNORE),
              MPI_Recv_c(b, NL(c), MPI_BYTE, from, tag, c->comm, MPI_STATUS_IGNORE));
}
static int mb_isend(mb_ctx *c, const void *b, int to, int tag, MPI_Request *rq)
{
    return LC(c, MPI_Isend(b, N(c), MPI_BYTE, to, tag, c->comm, rq),
              MPI_Isend_c(b, NL(c), MPI_BYTE, to, tag, c->comm, rq));
}
static int mb_irecv(mb_ctx *c, void *b, int from, int tag, MPI_Request *rq)
{
    return LC(c, MPI_Irecv(b, N(c), MPI_BYTE, from, tag, c->comm, rq),
              MPI_Irecv_c(b, NL(c), MPI_BYTE, from, tag, c->comm, rq));
}

/* GCC 12 misreads MPICH's MPI_STATUSES_IGNORE sentinel as a zero-size array (a known false
 * positive of -Wstringop-overflow); silence it here only. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif
static int waitall(int n, MPI_Request *rq) { return MPI_Waitall(n, rq, MPI_STATUSES_IGNORE); }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

static int peer(const mb_ctx *c) { return c->rank == 0 ? 1 : 0; }
static int left(const mb_ctx *c) { return (c->rank - 1 + c->np) % c->np; }
static int right(const mb_ctx *c) { return (c->rank + 1) % c->np; }

/* ---- buffers ---- */
static void buf_pair(const mb_ctx *c, int64_t *s, int64_t *r)
{
    *s = c->rank < 2 ? c->size : 0;
    *r = c->rank < 2 ? c->size : 0;
}
static void buf_chain(const mb_ctx *c, int64_t *s, int64_t *r)
{
    *s = c->size;
    *r = c->size;
}
static void buf_exchange(const mb_ctx *c, int64_t *s, int64_t *r)
{
    *s = c->size;
    *r = 2 * c->size;
}

/* ---- one iteration ---- */
static int run_pingpong(mb_ctx *c)
{
    if (c->rank == 0) {
        mb_send(c, c->sbuf, 1, 1);
        return mb_recv(c, c->rbuf, 1, 2);
    } else if (c->rank == 1) {
        mb_recv(c, c->rbuf, 0, 1);
        return mb_send(c, c->sbuf, 0, 2);
    }
    return MPI_SUCCESS;
}

static int run_pingping(mb_ctx *c)
{
    if (c->rank > 1)
        return MPI_SUCCESS;
    mb_isend(c, c->sbuf, peer(c), 1, &c->reqs[0]);
    mb_recv(c, c->rbuf, peer(c), 1);
    return MPI_Wait(&c->reqs[0], MPI_STATUS_IGNORE);
}

static int run_sendrecv(mb_ctx *c)
{
    return LC(c,
              MPI_Sendrecv(c->sbuf, N(c), MPI_BYTE, right(c), 1, c->rbuf, N(c), MPI_BYTE,
                           left(c), 1, c->comm, MPI_STATUS_IGNORE),
              MPI_Sendrecv_c(c->sbuf, NL(c), MPI_BYTE, right(c), 1, c->rbuf, NL(c), MPI_BYTE,
                             left(c), 1, c->comm, MPI_STATUS_IGNORE));
}

/* IMB Exchange: send the same buffer to both neighbours, receive one message from each */
static int run_exchange(mb_ctx *c)
{
    mb_isend(c, c->sbuf, right(c), 1, &c->reqs[0]);
    mb_isend(c, c->sbuf, left(c), 2, &c->reqs[1]);
    mb_recv(c, c->rbuf, left(c), 1);
    mb_recv(c, c->rbuf + c->size, right(c), 2);
    return waitall(2, c->reqs);
}

/* Windowed streaming (IMB/OSU): MB_WINDOW messages in flight, then a zero-byte ack.  All
 * receives of a window share one buffer, as IMB and OSU do. */
static int run_uniband(mb_ctx *c)
{
    if (c->rank == 0) {
        for (int w = 0; w < MB_WINDOW; w++)
            mb_isend(c, c->sbuf, 1, 1, &c->reqs[w]);
        waitall(MB_WINDOW, c->reqs);
        return MPI_Recv(NULL, 0, MPI_BYTE, 1, 3, c->comm, MPI_STATUS_IGNORE);
    } else if (c->rank == 1) {
        for (int w = 0; w < MB_WINDOW; w++)
            mb_irecv(c, c->rbuf, 0, 1, &c->reqs[w]);
        waitall(MB_WINDOW, c->reqs);
        return MPI_Send(NULL, 0, MPI_BYTE, 0, 3, c->comm);
    }
    return MPI_SUCCESS;
}

static int run_biband(mb_ctx *c)
{
    if (c->rank > 1)
        return MPI_SUCCESS;
    for (int w = 0; w < MB_WINDOW; w++)
        mb_irecv(c, c->rbuf, peer(c), 1, &c->reqs[w]);
    for (int w = 0; w < MB_WINDOW; w++)
        mb_isend(c, c->sbuf, peer(c), 1, &c->reqs[MB_WINDOW + w]);
    return waitall(2 * MB_WINDOW, c->reqs);
}

/* ---- bytes per iteration for bandwidth (IMB) ---- */
static double bytes_1(const mb_ctx *c) { return (double)c->size; }
static double bytes_2(const mb_ctx *c) { return 2.0 * (double)c->size; }
static double bytes_4(const mb_ctx *c) { return 4.0 * (double)c->size; }
static double bytes_uni(const mb_ctx *c) { return (double)MB_WINDOW * (double)c->size; }
static double bytes_bi(const mb_ctx *c) { return 2.0 * MB_WINDOW * (double)c->size; }

/* ---- validation ---- */
static void fill_own(mb_ctx *c, int it) { mb_fill_pat(c->sbuf, c->sbytes, c->rank, it); }

static int64_t check_pair(mb_ctx *c, int it, double *e, double *g)
{
    if (c->rank > 1)
        return -1;
    return mb_check_pat(c->rbuf, c->size, peer(c), it, e, g);
}

static int64_t check_uniband(mb_ctx *c, int it, double *e, double *g)
{
    if (c->rank != 1)
        return -1;
    return mb_check_pat(c->rbuf, c->size, 0, it, e, g);
}

static int64_t check_sendrecv(mb_ctx *c, int it, double *e, double *g)
{
    return mb_check_pat(c->rbuf, c->size, left(c), it, e, g);
}

static int64_t check_exchange(mb_ctx *c, int it, double *e, double *g)
{
    int64_t bad = mb_check_pat(c->rbuf, c->size, left(c), it, e, g);
    if (bad >= 0)
        return bad;
    bad = mb_check_pat(c->rbuf + c->size, c->size, right(c), it, e, g);
    return bad >= 0 ? c->size + bad : -1;
}

/* Uniband: rank 0 only sends, so only rank 1 has a receive buffer */
static void buf_uniband(const mb_ctx *c, int64_t *s, int64_t *r)
{
    *s = c->rank == 0 ? c->size : 0;
    *r = c->rank == 1 ? c->size : 0;
}

const mb_bench mb_pt2pt_benches[] = {
    {.name = "PingPong", .kind = MB_PT2PT, .min_np = 2, .single_pair = 1, .pair_sync = 1,
     .sized = 1, .iter_div = 2, .bufsize = buf_pair, .run = run_pingpong, .bytes = bytes_1,
     .fill = fill_own, .check = check_pair, .elem_bytes = 1},
    {.name = "PingPing", .kind = MB_PT2PT, .min_np = 2, .single_pair = 1, .pair_sync = 1,
     .sized = 1, .iter_div = 1, .bufsize = buf_pair, .run = run_pingping, .bytes = bytes_1,
     .fill = fill_own, .check = check_pair, .elem_bytes = 1},
    {.name = "Sendrecv", .kind = MB_PT2PT, .min_np = 2, .sized = 1, .iter_div = 1,
     .bufsize = buf_chain, .run = run_sendrecv, .bytes = bytes_2, .fill = fill_own,
     .check = check_sendrecv, .elem_bytes = 1},
    {.name = "Exchange", .kind = MB_PT2PT, .min_np = 2, .sized = 1, .iter_div = 1,
     .bufsize = buf_exchange, .run = run_exchange, .bytes = bytes_4, .fill = fill_own,
     .check = check_exchange, .elem_bytes = 1},
    {.name = "Uniband", .kind = MB_PT2PT, .min_np = 2, .single_pair = 1, .pair_sync = 1,
     .sized = 1, .iter_div = 1, .bufsize = buf_uniband, .run = run_uniband, .bytes = bytes_uni,
     .msgs_per_iter = MB_WINDOW, .fill = fill_own, .check = check_uniband, .elem_bytes = 1},
    {.name = "Biband", .kind = MB_PT2PT, .min_np = 2, .single_pair = 1, .pair_sync = 1,
     .sized = 1, .iter_div = 1, .bufsize = buf_pair, .run = run_biband, .bytes = bytes_bi,
     .msgs_per_iter = 2 * MB_WINDOW, .fill = fill_own, .check = check_pair, .elem_bytes = 1},
    {.name = NULL},
};

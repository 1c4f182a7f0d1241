/* mpibench-core buffers: a benchmark's send and receive buffers, allocated once for its
 * largest size within the memory limit (checked before anything is allocated), every page
 * touched before the watchdog is armed; with --off-cache a pool of copies larger than twice
 * the last-level cache, per size. */
#define _POSIX_C_SOURCE 200809L

#include "driver.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int64_t mb_llc_bytes(void)
{
    int64_t best = 0;
    for (int i = 0; i < 8; i++) {
        char path[128], buf[64];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(buf, sizeof buf, f)) {
            int64_t v = mb_parse_bytes(buf);
            if (v > best)
                best = v;
        }
        fclose(f);
    }
    return best > 0 ? best : (int64_t)32 << 20;
}

static int64_t round_page(int64_t x) { return (x + 4095) / 4096 * 4096; }

/* Send and receive buffers start on a 4 KiB boundary, so they sit at the same offset within
 * a page in every launch.  malloc placed them wherever the heap stood (glibc mmaps a large
 * request, page offset 16, until a free raises its threshold; then the heap), so the receive
 * buffer's page offset relative to the send buffer changed from launch to launch, often to 16
 * bytes: loads of one then alias stores to the other mod 4 KiB (4K aliasing), and Open MPI's
 * Allreduce copy and reduction at 16-256 KiB ran 1.5-3x slower in those launches. */
static void *page_alloc(int64_t bytes)
{
    void *p = NULL;
    return posix_memalign(&p, MB_BUFFER_ALIGN, (size_t)(bytes > 0 ? bytes : 1)) ? NULL : p;
}

static void note_offsets(mb_result *r, const void *s, const void *rb)
{
    r->buf_offset[0] = (int)((uintptr_t)s % 4096);
    r->buf_offset[1] = (int)((uintptr_t)rb % 4096);
}

void mb_pool_use(mb_ctx *c, const mb_pool *p, int64_t it)
{
    int64_t slot = p->copies > 1 ? it % p->copies : 0;
    c->sbuf = p->s + slot * p->sstride;
    c->rbuf = p->r + slot * p->rstride;
}

/* This rank's memory limit for buffers: --mem-limit, else 75% of RAM / ranks (conservative:
 * every rank may share this host). */
static int64_t local_limit(const mb_state *st)
{
    int64_t limit = st->opt.mem_limit;
    if (!limit) {
        long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
        limit = pages > 0 && psz > 0 ? (int64_t)((double)pages * (double)psz * 0.75) : INT64_MAX;
        limit /= st->np;
    }
    return limit;
}

static void over_limit(const mb_state *st, mb_result *r, int64_t need_max, int64_t limit_min)
{
    r->status = "skipped";
    snprintf(r->reason, sizeof r->reason,
             "needs %lld bytes of buffers per rank, over the memory limit of %lld bytes%s",
             (long long)need_max, (long long)limit_min,
             st->opt.mem_limit ? " (--mem-limit)" : " (75% of RAM / ranks; raise with --mem-limit)");
}

static void alloc_failed(mb_result *r, int64_t need_max)
{
    r->status = "skipped";
    snprintf(r->reason, sizeof r->reason, "allocating %lld bytes per rank failed",
             (long long)need_max);
}

/* The sizes run_size allocates for: it returns before allocating when the benchmark needs
 * more ranks, or when the counts need MPI-4 large-count calls this build does not have
 * (decide_large_count in driver.c). */
static int allocates(const mb_state *st, const mb_bench *b, int64_t size)
{
    if (st->np < b->min_np)
        return 0;
    int64_t biggest = b->elem_bytes == 4 ? size / 4 : size;
    if (b->vdispl)
        biggest *= st->np;
    return MB_HAVE_LARGE || (biggest <= INT_MAX && !st->opt.debug_large);
}

void mb_ctx_init(mb_ctx *c, const mb_state *st, int64_t size)
{
    memset(c, 0, sizeof *c);
    c->comm = MPI_COMM_WORLD;
    c->rank = st->rank;
    c->np = st->np;
    c->size = size;
    c->root = 0;
    c->any_root = st->opt.root_shift;
}

/* Once per benchmark (not with --off-cache, whose pool depends on the size): every size's
 * need (the largest over ranks) and the memory limit in two collectives, then one
 * allocation for the largest size within the limit, every page touched.  Sizes then borrow
 * these buffers (mb_pool_alloc), zeroed as a fresh allocation was, without collectives. */
void mb_bench_buffers(mb_state *st, const mb_bench *b)
{
    mb_bench_bufs *u = &st->bufs;
    memset(u, 0, sizeof *u);
    if (st->opt.off_cache)
        return;
    int n = b->sized ? st->opt.nsizes : 1;
    int64_t need[MB_MAX_SIZES] = {0}, ss[MB_MAX_SIZES] = {0}, rs[MB_MAX_SIZES] = {0};
    for (int i = 0; i < n; i++) {
        int64_t size = b->sized ? st->opt.sizes[i] : 0, sb = 0, rb = 0;
        need[i] = ss[i] = rs[i] = 0;
        if (!allocates(st, b, size))
            continue;
        mb_ctx c;
        mb_ctx_init(&c, st, size);
        b->bufsize(&c, &sb, &rb);
        ss[i] = round_page(sb > 0 ? sb : 1);
        rs[i] = round_page(rb > 0 ? rb : 1);
        need[i] = ss[i] + rs[i];
    }
    MPI_Allreduce(need, u->need_max, n, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    int64_t limit = local_limit(st);
    MPI_Allreduce(&limit, &u->limit_min, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
    int64_t smax = 0, rmax = 0, fit_max = 0;
    for (int i = 0; i < n; i++) {
        if (u->need_max[i] > u->limit_min)
            continue;
        smax = ss[i] > smax ? ss[i] : smax;
        rmax = rs[i] > rmax ? rs[i] : rmax;
        fit_max = u->need_max[i] > fit_max ? u->need_max[i] : fit_max;
    }
    u->s = page_alloc(smax);
    u->r = page_alloc(rmax);
    int bad = !u->s || !u->r;
    MPI_Allreduce(&bad, &u->bad_alloc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    u->bad_bytes = fit_max;
    /* touch every page now so page faults never land in a timed interval */
    if (!u->bad_alloc) {
        memset(u->s, 0, (size_t)(smax > 0 ? smax : 1));
        memset(u->r, 0, (size_t)(rmax > 0 ? rmax : 1));
    }
    u->ready = 1;
}

void mb_bench_buffers_free(mb_state *st)
{
    free(st->bufs.s);
    free(st->bufs.r);
    memset(&st->bufs, 0, sizeof st->bufs);
}

/* Size the pool from c->sbytes/c->rbytes, check the limit on every rank, allocate and touch.
 * Returns 0 when the buffers are ready (c points at copy 0), else 1 with r->status "skipped"
 * and the reason; every rank returns the same.  With the benchmark's buffers ready
 * (mb_bench_buffers) the size borrows them: no allocation, no collective. */
int mb_pool_alloc(mb_state *st, mb_ctx *c, mb_pool *p, mb_result *r, int size_index)
{
    const mb_options *o = &st->opt;
    int64_t sb = c->sbytes, rb = c->rbytes;
    memset(p, 0, sizeof *p);
    p->sstride = round_page(sb > 0 ? sb : 1);
    p->rstride = round_page(rb > 0 ? rb : 1);
    p->copies = 1;
    if (st->bufs.ready) {
        const mb_bench_bufs *u = &st->bufs;
        int64_t need_max = u->need_max[size_index];
        r->mem_per_rank = need_max;
        if (need_max > u->limit_min) {
            over_limit(st, r, need_max, u->limit_min);
            return 1;
        }
        if (u->bad_alloc) {
            alloc_failed(r, u->bad_bytes);
            return 1;
        }
        p->s = u->s;
        p->r = u->r;
        p->borrowed = 1;
        /* not zeroed again: the pages were zeroed when allocated and hold zeros or what an
         * earlier size's validation wrote (small-integer patterns, never NaN or denormal);
         * validation zeroes the receive buffer and fills the send buffer before it checks.
         * Re-zeroing cost two passes over the size's bytes (8 MiB at 4 MiB) per size. */
        r->pool = 1;
        note_offsets(r, p->s, p->r);
        mb_pool_use(c, p, 0);
        return 0;
    }
    if (o->off_cache) {
        int64_t fp = p->sstride + p->rstride;
        int64_t want = (2 * mb_llc_bytes() + fp - 1) / fp;
        p->copies = (int)(want < 2 ? 2 : want > 100000 ? 100000 : want);
    }
    int64_t need = (p->sstride + p->rstride) * p->copies, need_max;
    MPI_Allreduce(&need, &need_max, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    int64_t limit = local_limit(st), limit_min;
    MPI_Allreduce(&limit, &limit_min, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
    if (o->off_cache && need_max > limit_min) {
        /* keep the pool as large as memory allows, at least two copies */
        int64_t fp = p->sstride + p->rstride, fpmax;
        MPI_Allreduce(&fp, &fpmax, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
        int64_t fit = limit_min / fpmax;
        if (fit >= 2) {
            p->copies = (int)(fit < p->copies ? fit : p->copies);
            need_max = fpmax * p->copies;
        }
    }
    r->mem_per_rank = need_max; /* after any shrinking of the off-cache pool */
    if (need_max > limit_min) {
        over_limit(st, r, need_max, limit_min);
        return 1;
    }
    p->s = page_alloc(p->sstride * p->copies);
    p->r = page_alloc(p->rstride * p->copies);
    int bad_alloc = !p->s || !p->r, any_bad;
    MPI_Allreduce(&bad_alloc, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any_bad) {
        alloc_failed(r, need_max);
        return 1;
    }
    /* touch every page now so page faults never land in a timed interval */
    memset(p->s, 0, (size_t)(p->sstride * p->copies));
    memset(p->r, 0, (size_t)(p->rstride * p->copies));
    r->pool = p->copies;
    note_offsets(r, p->s, p->r);
    mb_pool_use(c, p, 0);
    return 0;
}

void mb_pool_free(mb_pool *p)
{
    if (!p->borrowed) {
        free(p->s);
        free(p->r);
    }
    p->s = p->r = NULL;
}

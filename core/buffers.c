/* mpibench-core buffers: one size's send and receive buffers, checked against the memory
 * limit before anything is allocated, every page touched before the watchdog is armed, and
 * with --off-cache a pool of copies larger than twice the last-level cache. */
#define _POSIX_C_SOURCE 200809L

#include "driver.h"

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

void mb_pool_use(mb_ctx *c, const mb_pool *p, int64_t it)
{
    int64_t slot = p->copies > 1 ? it % p->copies : 0;
    c->sbuf = p->s + slot * p->sstride;
    c->rbuf = p->r + slot * p->rstride;
}

/* Size the pool from c->sbytes/c->rbytes, check the limit on every rank, allocate and touch.
 * Returns 0 when the buffers are ready (c points at copy 0), else 1 with r->status "skipped"
 * and the reason; every rank returns the same. */
int mb_pool_alloc(mb_state *st, mb_ctx *c, mb_pool *p, mb_result *r)
{
    const mb_options *o = &st->opt;
    int64_t sb = c->sbytes, rb = c->rbytes;
    memset(p, 0, sizeof *p);
    p->sstride = round_page(sb > 0 ? sb : 1);
    p->rstride = round_page(rb > 0 ? rb : 1);
    p->copies = 1;
    if (o->off_cache) {
        int64_t fp = p->sstride + p->rstride;
        int64_t want = (2 * mb_llc_bytes() + fp - 1) / fp;
        p->copies = (int)(want < 2 ? 2 : want > 100000 ? 100000 : want);
    }
    int64_t need = (p->sstride + p->rstride) * p->copies, need_max;
    MPI_Allreduce(&need, &need_max, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    int64_t limit = o->mem_limit, limit_min;
    if (!limit) {
        long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
        limit = pages > 0 && psz > 0 ? (int64_t)((double)pages * (double)psz * 0.75) : INT64_MAX;
        limit /= st->np; /* conservative: assume every rank shares this host */
    }
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
        r->status = "skipped";
        snprintf(r->reason, sizeof r->reason,
                 "needs %lld bytes of buffers per rank, over the memory limit of %lld bytes%s",
                 (long long)need_max, (long long)limit_min,
                 o->mem_limit ? " (--mem-limit)" : " (75% of RAM / ranks; raise with --mem-limit)");
        return 1;
    }
    p->s = malloc((size_t)(p->sstride * p->copies));
    p->r = malloc((size_t)(p->rstride * p->copies));
    int bad_alloc = !p->s || !p->r, any_bad;
    MPI_Allreduce(&bad_alloc, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any_bad) {
        r->status = "skipped";
        snprintf(r->reason, sizeof r->reason, "allocating %lld bytes per rank failed",
                 (long long)need_max);
        return 1;
    }
    /* touch every page now so page faults never land in a timed interval */
    memset(p->s, 0, (size_t)(p->sstride * p->copies));
    memset(p->r, 0, (size_t)(p->rstride * p->copies));
    r->pool = p->copies;
    mb_pool_use(c, p, 0);
    return 0;
}

void mb_pool_free(mb_pool *p)
{
    free(p->s);
    free(p->r);
    p->s = p->r = NULL;
}

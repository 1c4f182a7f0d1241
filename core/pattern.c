/* Validation patterns, filled and checked at memory speed.  mb_pat(who, i, it) depends on i
 * only through 7 i mod 256, so it repeats every 256 bytes: one period is computed, then
 * copied or compared in 4 KiB blocks.  At 4 MiB a byte-by-byte loop cost tens of ms per
 * size, more than the timed samples; the values are exactly mb_pat's. */
#include "mb.h"

#include <string.h>

#define BLOCK 4096

static void period(unsigned char *blk, int who, int it)
{
    for (int j = 0; j < 256; j++)
        blk[j] = mb_pat(who, j, it);
    for (int j = 256; j < BLOCK; j += 256)
        memcpy(blk + j, blk, 256);
}

void mb_fill_pat(unsigned char *b, int64_t n, int who, int it)
{
    unsigned char blk[BLOCK];
    period(blk, who, it);
    for (int64_t i = 0; i < n; i += BLOCK)
        memcpy(b + i, blk, (size_t)(n - i < BLOCK ? n - i : BLOCK));
}

int64_t mb_check_pat(const unsigned char *b, int64_t n, int who, int it, double *e, double *g)
{
    unsigned char blk[BLOCK];
    period(blk, who, it);
    for (int64_t i = 0; i < n; i += BLOCK) {
        int64_t len = n - i < BLOCK ? n - i : BLOCK;
        if (!memcmp(b + i, blk, (size_t)len))
            continue;
        for (int64_t j = 0; j < len; j++)
            if (b[i + j] != blk[j]) {
                *e = blk[j];
                *g = b[i + j];
                return i + j;
            }
    }
    return -1;
}

/* Statistics for the driver: median with a distribution-free confidence interval from order
 * statistics, quantiles, and a self-test against known distributions (--self-test). */
#include "mb.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* 1-based order-statistic ranks [lo, hi] of a confidence interval for the median of n samples:
 * with B ~ Binomial(n, 1/2), P(x(lo) <= median <= x(hi)) >= 1 - 2 P(B <= lo-1) >= level.
 * lo is the largest rank meeting that bound (the narrowest such interval).  Returns 1 when the
 * level is reachable (n >= 6 for 95%); otherwise lo = 1, hi = n (the range) and returns 0. */
int mb_median_ci_ranks(int64_t n, double level, int64_t *lo, int64_t *hi)
{
    *lo = 1;
    *hi = n;
    if (n < 1)
        return 0;
    double half_alpha = (1.0 - level) / 2.0;
    double logp = -(double)n * log(2.0); /* log P(B = 0) */
    double cdf = 0.0;
    int64_t best = -1; /* largest j with P(B <= j) <= alpha/2 */
    for (int64_t j = 0; j < n; j++) {
        cdf += exp(logp);
        if (cdf > half_alpha)
            break;
        best = j;
        logp += log((double)(n - j)) - log((double)(j + 1));
    }
    if (best < 0)
        return 0;
    *lo = best + 1;
    *hi = n - best;
    return 1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int mb_sort_doubles(double *v, int64_t n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return 0;
}

/* Linear interpolation between order statistics (numpy's default, Hyndman-Fan type 7). */
double mb_quantile(const double *s, int64_t n, double q)
{
    if (n <= 0)
        return NAN;
    double h = (double)(n - 1) * q;
    int64_t i = (int64_t)floor(h);
    if (i >= n - 1)
        return s[n - 1];
    return s[i] + (h - (double)i) * (s[i + 1] - s[i]);
}

void mb_summarise(double *sorted, int64_t n, mb_summary *s)
{
    s->n = n;
    if (n <= 0) {
        s->median = s->ci_low = s->ci_high = s->min = s->p5 = s->p95 = s->p99 = s->max =
            s->mean = s->std = NAN;
        s->ci_exact = 0;
        return;
    }
    int64_t lo, hi;
    s->ci_exact = mb_median_ci_ranks(n, 0.95, &lo, &hi);
    s->median = mb_quantile(sorted, n, 0.5);
    s->ci_low = sorted[lo - 1];
    s->ci_high = sorted[hi - 1];
    s->min = sorted[0];
    s->max = sorted[n - 1];
    s->p5 = mb_quantile(sorted, n, 0.05);
    s->p95 = mb_quantile(sorted, n, 0.95);
    s->p99 = mb_quantile(sorted, n, 0.99);
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++)
        sum += sorted[i];
    s->mean = sum / (double)n;
    double ss = 0.0;
    for (int64_t i = 0; i < n; i++)
        ss += (sorted[i] - s->mean) * (sorted[i] - s->mean);
    s->std = n > 1 ? sqrt(ss / (double)(n - 1)) : 0.0;
}

/* ---- self-test: known order-statistic ranks and coverage on known distributions ---- */

static double urand(uint64_t *state) /* splitmix64 -> (0,1) */
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return ((double)(z >> 11) + 0.5) / 9007199254740992.0;
}
static double nrand(uint64_t *st)
{
    return sqrt(-2.0 * log(urand(st))) * cos(6.283185307179586 * urand(st));
}

int mb_selftest_report(const char *name, int ok, const char *detail)
{
    printf("{\"record\":\"selftest\",\"check\":\"%s\",\"ok\":%s,\"detail\":\"%s\"}\n", name,
           ok ? "true" : "false", detail);
    return ok ? 0 : 1;
}

/* coverage of the median CI over many trials of n samples from dist (0 uniform, 1 exponential,
 * 2 normal, 3 lognormal), whose true medians are known */
static double coverage(uint64_t *st, int dist, int64_t n, int trials)
{
    double truth[] = {0.5, log(2.0), 0.0, 1.0};
    double *x = malloc(sizeof(double) * (size_t)n);
    int hit = 0;
    for (int t = 0; t < trials; t++) {
        for (int64_t i = 0; i < n; i++) {
            double u = urand(st);
            x[i] = dist == 0 ? u : dist == 1 ? -log(u) : dist == 2 ? nrand(st) : exp(nrand(st));
        }
        mb_sort_doubles(x, n);
        mb_summary s;
        mb_summarise(x, n, &s);
        hit += s.ci_low <= truth[dist] && truth[dist] <= s.ci_high;
    }
    free(x);
    return (double)hit / trials;
}

int mb_stats_selftest(void)
{
    int fails = 0;
    char d[256];
    uint64_t st = 0x9e3779b97f4a7c15ull; /* fixed seed: the self-test is deterministic */
    /* tabulated ranks (binomial tables for the sign test, 95% two-sided) */
    struct { int64_t n, lo, hi; int exact; } tab[] = {
        {5, 1, 5, 0}, {6, 1, 6, 1}, {10, 2, 9, 1}, {20, 6, 15, 1}, {100, 40, 61, 1},
        {1000, 469, 532, 1},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        int64_t lo, hi;
        int ex = mb_median_ci_ranks(tab[i].n, 0.95, &lo, &hi);
        snprintf(d, sizeof d, "n=%lld: got [%lld,%lld] exact=%d, want [%lld,%lld] exact=%d",
                 (long long)tab[i].n, (long long)lo, (long long)hi, ex, (long long)tab[i].lo,
                 (long long)tab[i].hi, tab[i].exact);
        fails += mb_selftest_report("ci_ranks", lo == tab[i].lo && hi == tab[i].hi && ex == tab[i].exact, d);
    }
    /* large n must not underflow into a useless interval */
    {
        int64_t lo, hi;
        int ex = mb_median_ci_ranks(100000, 0.95, &lo, &hi);
        double half = (double)(hi - lo) / 2.0, want = 1.96 * sqrt(100000.0) / 2.0;
        snprintf(d, sizeof d, "n=100000: [%lld,%lld] half-width %.1f ranks, normal approx %.1f",
                 (long long)lo, (long long)hi, half, want);
        fails += mb_selftest_report("ci_ranks_large", ex && fabs(half - want) < 3.0, d);
    }
    const char *names[] = {"uniform", "exponential", "normal", "lognormal"};
    for (int dist = 0; dist < 4; dist++) {
        int64_t ns[] = {11, 50, 400};
        for (int k = 0; k < 3; k++) {
            double cov = coverage(&st, dist, ns[k], 2000);
            /* the order-statistic interval is conservative: exact coverage >= 95% */
            snprintf(d, sizeof d, "%s n=%lld coverage %.3f over 2000 trials", names[dist],
                     (long long)ns[k], cov);
            fails += mb_selftest_report("ci_coverage", cov >= 0.935 && cov <= 0.995, d);
        }
    }
    /* quantiles match numpy's default on a known sample */
    {
        double v[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
        double med = mb_quantile(v, 10, 0.5), p5 = mb_quantile(v, 10, 0.05);
        double p99 = mb_quantile(v, 10, 0.99);
        snprintf(d, sizeof d, "median %.4g p5 %.4g p99 %.4g (numpy: 5.5 1.45 9.91)", med, p5, p99);
        fails += mb_selftest_report("quantiles", fabs(med - 5.5) < 1e-12 && fabs(p5 - 1.45) < 1e-12 &&
                                         fabs(p99 - 9.91) < 1e-12, d);
    }
    /* stopping rule: a +-1% target on N(100, sd) samples stops near the n the normal theory
     * predicts (half-width ~ 1.96 * 1.2533 * sd / sqrt(n)) */
    {
        double sds[] = {1.0, 5.0};
        for (int k = 0; k < 2; k++) {
            int64_t cap = 100000, n = 0;
            double *x = malloc(sizeof(double) * (size_t)cap), *y = malloc(sizeof(double) * (size_t)cap);
            int64_t stop_n = -1;
            while (n < cap) {
                int64_t round = n < 10 ? 10 : n / 4;
                for (int64_t i = 0; i < round && n < cap; i++)
                    x[n++] = 100.0 + sds[k] * nrand(&st);
                for (int64_t i = 0; i < n; i++)
                    y[i] = x[i];
                mb_sort_doubles(y, n);
                mb_summary s;
                mb_summarise(y, n, &s);
                mb_stop_rule rule = {.target_pct = 1.0, .max_time = 1e9, .min_samples = 1,
                                     .cap = cap};
                mb_progress p = {.n = n, .median = s.median, .ci_low = s.ci_low,
                                 .ci_high = s.ci_high, .ci_exact = s.ci_exact};
                if (mb_adaptive_stop(&rule, &p) == MB_STOP_TARGET) {
                    stop_n = n;
                    break;
                }
            }
            double pred = pow(1.96 * 1.2533 * sds[k] / 1.0, 2.0); /* n for 1% of 100 */
            snprintf(d, sizeof d, "sd=%.0f%%: stopped at n=%lld, theory ~%.0f", sds[k],
                     (long long)stop_n, pred);
            fails += mb_selftest_report("stopping", stop_n > 0 && stop_n <= 3.0 * pred + 20 &&
                                            stop_n >= pred / 3.0, d);
            free(x);
            free(y);
        }
    }
    fails += mb_stop_selftest();
    printf("{\"record\":\"selftest_summary\",\"failures\":%d}\n", fails);
    return fails ? 1 : 0;
}

/* The core's within-launch summary (core/stats.c) on samples read from stdin, one number a
 * line, in the order taken: what mpibench-core would report for them (tests/test_core_stats.py
 * compares it with the Python recomputation in tests/_coreutil.py). */
#include "mb.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    int64_t cap = 1 << 20, n = 0;
    double *x = malloc(sizeof(double) * (size_t)cap), *tmp = malloc(sizeof(double) * (size_t)cap);
    while (n < cap && scanf("%lf", &x[n]) == 1)
        n++;
    mb_summary s;
    mb_summarise_series(x, tmp, n, &s);
    char lag1[32] = "null";
    if (!isnan(s.lag1))
        snprintf(lag1, sizeof lag1, "%.17g", s.lag1);
    printf("{\"n\": %lld, \"n_eff\": %lld, \"tau\": %.17g, \"lag1\": %s, \"ci_low\": %.17g, "
           "\"ci_high\": %.17g, \"ci_exact\": %s, \"stationarity\": \"%s\"}\n", (long long)s.n,
           (long long)s.n_eff, s.tau, lag1, s.ci_low, s.ci_high, s.ci_exact ? "true" : "false",
           mb_stationarity_name(s.stationarity));
    free(x);
    free(tmp);
    return 0;
}

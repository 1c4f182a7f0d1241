/* Stopping rules and batch growth: pure functions of what rank 0 knows after a round of
 * samples.  The driver calls them and broadcasts the answer; --self-test drives them with
 * made-up inputs (mb_stop_selftest), so every reason can be reached without MPI. */
#include "mb.h"

#include <math.h>
#include <stdio.h>

const char *mb_stop_name(enum mb_stop s)
{
    switch (s) {
    case MB_STOP_TARGET: return "target";
    case MB_STOP_MAX_TIME: return "max_time";
    case MB_STOP_MAX_SAMPLES: return "max_samples";
    case MB_STOP_ITERATIONS: return "iterations";
    case MB_STOP_FUTILE: return "futile";
    case MB_STOP_UNSETTLED: return "unsettled";
    case MB_STOP_APPROXIMATE: return "approximate";
    case MB_STOP_PREEMPTED: return "preempted";
    case MB_CONTINUE:
    case MB_REBATCH: break;
    }
    return NULL;
}

/* the CI's larger half-width, relative to the median */
static double half_width(const mb_progress *p)
{
    return fmax(p->median - p->ci_low, p->ci_high - p->median) /
           (p->median > 0 ? p->median : 1e-300);
}

int mb_held(const mb_stop_rule *rule, const mb_progress *p)
{
    return p->n >= rule->min_samples && p->unsettled && p->ci_sized &&
           half_width(p) * 100.0 <= rule->target_pct;
}

enum mb_stop mb_adaptive_stop(const mb_stop_rule *rule, const mb_progress *p)
{
    double hw = half_width(p);
    if (p->n >= rule->min_samples && p->ci_exact && hw * 100.0 <= rule->target_pct)
        return MB_STOP_TARGET;
    /* asked for: the width is what counts, the CI stays marked approximate (a launch-level
     * test reads the launch's median, not this CI); the reason says which stop it was */
    if (rule->accept_approximate && p->n >= rule->min_samples && hw * 100.0 <= rule->target_pct)
        return MB_STOP_APPROXIMATE;
    /* narrow enough but the stationarity check borderline: a round more, so a change in the
     * last round gets the samples that flag it; still unsettled after that, stop and say so */
    if (mb_held(rule, p) && p->held >= MB_HOLD_ROUNDS)
        return MB_STOP_UNSETTLED;
    if (p->n >= rule->cap)
        return MB_STOP_MAX_SAMPLES;
    /* --exclude-preempted: the budget spent with unflagged samples missing, sample on up to
     * preempt_time, then stop and say why (never a median of too few clean samples that
     * looks like an ordinary max_time stop) */
    if (p->spent >= rule->max_time && p->n < mb_clean_needed(rule, p))
        return p->spent >= rule->preempt_time ? MB_STOP_PREEMPTED : MB_CONTINUE;
    if (p->spent >= rule->max_time)
        return MB_STOP_MAX_TIME;
    /* futility asks whether the width can shrink in time: a CI made approximate by the
     * stationarity check still has a width that shrinks (ci_sized) */
    if (rule->futility && p->n >= 2 * rule->min_samples && (p->ci_exact || p->ci_sized) &&
        p->spent >= 0.25 * rule->max_time) {
        /* the half-width shrinks like 1/sqrt(n): project the time the target needs and give
         * up when it is more than twice the budget */
        double ratio = hw * 100.0 / rule->target_pct;
        if (p->spent * ratio * ratio > 2.0 * rule->max_time)
            return MB_STOP_FUTILE;
    }
    return MB_CONTINUE;
}

int64_t mb_next_round(const mb_stop_rule *rule, int64_t n, double per_sample_s, double left_s)
{
    /* a quarter more samples keeps the overshoot past the target under 25% */
    int64_t nr = n / 4 > 8 ? n / 4 : 8;
    if (n < rule->min_samples)
        nr = rule->min_samples - n;
    if (per_sample_s > 0 && left_s > 0 && (double)nr * per_sample_s > left_s)
        nr = (int64_t)(left_s / per_sample_s) + 1;
    if (nr > rule->cap - n)
        nr = rule->cap - n;
    return nr < 1 ? 1 : nr;
}

int64_t mb_first_round(const mb_stop_rule *rule, double est_sample_s, double left_s)
{
    int64_t r = rule->min_samples < rule->cap ? rule->min_samples : rule->cap;
    /* a size whose iterations are long (4 MiB Biband: ~0.2 s) would otherwise spend
     * min_samples x that before the budget is ever looked at */
    if (est_sample_s > 0 && (double)r * est_sample_s > left_s) {
        double fit = left_s > 0 ? floor(left_s / est_sample_s) : 0.0;
        r = fit < (double)r ? (int64_t)fit : r;
        int64_t floor_n = MB_FLOOR_SAMPLES < rule->cap ? MB_FLOOR_SAMPLES : rule->cap;
        if (r < floor_n)
            r = floor_n;
    }
    return r < 1 ? 1 : r;
}

int64_t mb_clean_needed(const mb_stop_rule *rule, const mb_progress *p)
{
    if (!rule->exclude_preempted)
        return 0;
    return p->budget_set && p->budget_n < rule->min_samples ? p->budget_n : rule->min_samples;
}

double mb_time_left(const mb_stop_rule *rule, const mb_progress *p)
{
    int extend = p->spent >= rule->max_time && p->n < mb_clean_needed(rule, p);
    return (extend ? rule->preempt_time : rule->max_time) - p->spent;
}

int64_t mb_round_after(const mb_stop_rule *rule, const mb_progress *p, double per_sample_s)
{
    double left = mb_time_left(rule, p);
    if (p->spent < rule->max_time || p->n >= mb_clean_needed(rule, p))
        return mb_next_round(rule, p->n, per_sample_s, left);
    /* the missing samples, at least 8 as any round: under load each round's reduction and
     * barrier can cost a time slice, and some of the new samples will be flagged too */
    int64_t nr = mb_clean_needed(rule, p) - p->n;
    nr = nr > 8 ? nr : 8;
    if (per_sample_s > 0 && left > 0 && (double)nr * per_sample_s > left)
        nr = (int64_t)(left / per_sample_s) + 1;
    /* never past the cap: the driver's buffers hold cap samples (review R12) */
    if (nr > rule->cap - p->n)
        nr = rule->cap - p->n;
    return nr < 1 ? 1 : nr;
}

int64_t mb_flag_preempted(const double *nivcsw, const double *barrier, int64_t R,
                          unsigned char *flag)
{
    for (int64_t s = 0; s < R; s++)
        if (!(nivcsw[s] < MB_NIVCSW_NONE) || !(barrier[s] < MB_NIVCSW_NONE)) {
            for (int64_t u = 0; u < R; u++)
                flag[u] = 0;
            return -1;
        }
    int64_t count = 0;
    for (int64_t s = 0; s < R; s++) {
        flag[s] = nivcsw[s] > 0 || (s > 0 && nivcsw[s - 1] > 0) || barrier[s] > 0;
        count += flag[s];
    }
    return count;
}

int64_t mb_grow_batch(int64_t k, double batch_us, double floor_us, int64_t kmax)
{
    if (!(batch_us < floor_us) || k >= kmax)
        return k;
    /* aim 50% above the floor so one noisy estimate does not leave k just short of it */
    double f = batch_us > 0 ? 1.5 * floor_us / batch_us : 16.0;
    f = f < 2.0 ? 2.0 : f > 64.0 ? 64.0 : f;
    int64_t nk = (int64_t)ceil((double)k * f);
    return nk > kmax ? kmax : nk;
}

int64_t mb_fixed_batch(int64_t k, int64_t total)
{
    while (total % k)
        k++;
    return k;
}

int mb_settle_done(int64_t done, int64_t last_fault)
{
    int64_t need = last_fault > MB_SETTLE_QUIET ? last_fault : MB_SETTLE_QUIET;
    return done - last_fault >= need;
}

int64_t mb_settle_next(int64_t chunk, double chunk_s, double spent_s, int faulted,
                       double max_time)
{
    double left = (faulted ? MB_SETTLE_LIMIT : MB_SETTLE_SHARE) * max_time - spent_s;
    if (left <= 0)
        return 0;
    int64_t next = chunk * 2 > MB_SETTLE_CHUNK ? MB_SETTLE_CHUNK : chunk * 2;
    double per = chunk > 0 && chunk_s > 0 ? chunk_s / (double)chunk : 0;
    if (per > 0 && (double)next * per > left)
        next = (int64_t)(left / per); /* 0 when not even one iteration fits: stop */
    return next;
}

/* ---- self-test ---- */

static int expect_stop(const char *what, const mb_stop_rule *rule, const mb_progress *p,
                       enum mb_stop want)
{
    enum mb_stop got = mb_adaptive_stop(rule, p);
    char d[256];
    snprintf(d, sizeof d, "%s: n=%lld spent=%g -> %s (want %s)", what, (long long)p->n,
             p->spent, got == MB_CONTINUE ? "continue" : mb_stop_name(got),
             want == MB_CONTINUE ? "continue" : mb_stop_name(want));
    return mb_selftest_report("stop_rule", got == want, d);
}

static int expect_i64(const char *check, const char *what, int64_t got, int64_t want)
{
    char d[256];
    snprintf(d, sizeof d, "%s: got %lld, want %lld", what, (long long)got, (long long)want);
    return mb_selftest_report(check, got == want, d);
}

/* the flag rule on made-up reduce inputs: window s or s-1 with a switch flags sample s; a
 * switch in the barrier that starts sample s flags sample s alone */
static int flag_selftest(void)
{
    int fails = 0;
    double w[7] = {0, 0, 2, 0, 0, 0, 1}, none[7] = {0};
    unsigned char f[7];
    fails += expect_i64("preempt_flag", "windows 2 and 6 flag samples 2, 3, 6",
                        mb_flag_preempted(w, none, 7, f), 3);
    fails += expect_i64("preempt_flag", "pattern 0011001",
                        f[0] + 2 * f[1] + 4 * f[2] + 8 * f[3] + 16 * f[4] + 32 * f[5] + 64 * f[6],
                        4 + 8 + 64);
    double w2[2] = {0, 0};
    fails += expect_i64("preempt_flag", "a new round starts unflagged",
                        mb_flag_preempted(w2, none, 2, f), 0);
    double b2[2] = {1, 0};
    fails += expect_i64("preempt_flag", "the round's barrier flags sample 0 ...",
                        mb_flag_preempted(w2, b2, 2, f), 1);
    fails += expect_i64("preempt_flag", "... and not sample 1", f[0] + 2 * f[1], 1);
    double b7[7] = {0, 0, 0, 0, 3, 0, 0};
    fails += expect_i64("preempt_flag", "a barrier before sample 4 adds 4 alone",
                        mb_flag_preempted(w, b7, 7, f), 4);
    fails += expect_i64("preempt_flag", "sample 4 flagged, 5 not", f[4] + 2 * f[5], 1);
    double w3[3] = {0, MB_NIVCSW_NONE, 4};
    fails += expect_i64("preempt_flag", "a rank without the counter: unavailable",
                        mb_flag_preempted(w3, none, 3, f), -1);
    fails += expect_i64("preempt_flag", "... nothing flagged", f[0] + f[1] + f[2], 0);
    double b3[3] = {MB_NIVCSW_NONE, 0, 0};
    fails += expect_i64("preempt_flag", "nor without it in a barrier",
                        mb_flag_preempted(w2, b3, 2, f), -1);
    return fails;
}

/* --exclude-preempted: every way a size stops, and the rounds it takes past max_time */
static int preempt_selftest(void)
{
    int fails = flag_selftest();
    mb_stop_rule rule = {.target_pct = 1.0, .max_time = 1.0, .min_samples = 10, .cap = 1000,
                         .exclude_preempted = 1, .preempt_time = 5.0};
    /* 5 samples when the budget was spent, 2 of them flagged: 5 clean ones needed */
    mb_progress p = {.n = 3, .median = 100, .ci_low = 90, .ci_high = 110, .spent = 1.0,
                     .budget_set = 1, .budget_n = 5};
    fails += expect_i64("preempt_rule", "needed: what the budget gave", mb_clean_needed(&rule, &p), 5);
    fails += expect_stop("budget spent, clean samples missing", &rule, &p, MB_CONTINUE);
    fails += expect_i64("preempt_rule", "the missing samples, at least 8", mb_round_after(&rule, &p, 0.01), 8);
    fails += expect_i64("preempt_rule", "within preempt_time", mb_round_after(&rule, &p, 10.0), 1);
    rule.cap = 3; /* --max-samples below n + 8: the round stops at the cap */
    p.n = 1;
    fails += expect_i64("preempt_rule", "the 8-floor stops at the cap", mb_round_after(&rule, &p, 0.01), 2);
    rule.cap = 1000;
    p.n = 5;
    fails += expect_stop("budget spent, enough clean samples", &rule, &p, MB_STOP_MAX_TIME);
    p.n = 3;
    p.spent = 5.0;
    fails += expect_stop("preempt_time spent", &rule, &p, MB_STOP_PREEMPTED);
    p.budget_n = 40; /* the budget gave 40: --min-samples clean ones are needed */
    p.n = 9;
    p.spent = 1.5;
    fails += expect_i64("preempt_rule", "needed: min_samples", mb_clean_needed(&rule, &p), 10);
    fails += expect_stop("one short of min_samples", &rule, &p, MB_CONTINUE);
    p.n = 10;
    fails += expect_stop("min_samples clean", &rule, &p, MB_STOP_MAX_TIME);
    p.n = 1000;
    fails += expect_stop("cap first", &rule, &p, MB_STOP_MAX_SAMPLES);
    p.n = 0; /* every sample of the budget's rounds late (--sync window): none needed */
    p.budget_n = 0;
    fails += expect_i64("preempt_rule", "needed: none taken", mb_clean_needed(&rule, &p), 0);
    fails += expect_stop("budget spent, every sample late", &rule, &p, MB_STOP_MAX_TIME);
    p.n = 3;
    p.spent = 0.5; /* within the budget: the rule as without the option */
    p.budget_set = 0;
    fails += expect_stop("within max_time", &rule, &p, MB_CONTINUE);
    fails += expect_i64("preempt_rule", "a round within max_time", mb_round_after(&rule, &p, 0.1), 6);
    rule.exclude_preempted = 0;
    p.spent = 1.0;
    p.budget_set = 1;
    p.budget_n = 5;
    fails += expect_stop("without the option", &rule, &p, MB_STOP_MAX_TIME);
    fails += expect_i64("preempt_rule", "needed without the option", mb_clean_needed(&rule, &p), 0);
    return fails;
}

int mb_stop_selftest(void)
{
    int fails = 0;
    mb_stop_rule rule = {.target_pct = 1.0, .max_time = 1.0, .min_samples = 10, .cap = 1000,
                         .futility = 1};
    /* +-0.5% CI, exact, enough samples: target */
    mb_progress p = {.n = 50, .median = 100, .ci_low = 99.5, .ci_high = 100.4, .ci_exact = 1,
                     .spent = 0.1};
    fails += expect_stop("within target", &rule, &p, MB_STOP_TARGET);
    p.n = 9;
    fails += expect_stop("too few samples", &rule, &p, MB_CONTINUE);
    p.n = 50;
    p.ci_exact = 0;
    fails += expect_stop("CI without full coverage", &rule, &p, MB_CONTINUE);
    p.ci_sized = 1; /* enough samples, but the series moved (stationarity): never target */
    fails += expect_stop("not stationary", &rule, &p, MB_CONTINUE);
    p.unsettled = 1; /* borderline check: a round more, then stop and say so */
    fails += expect_stop("unsettled, first round", &rule, &p, MB_CONTINUE);
    fails += expect_i64("held", "an unsettled round within the target holds", mb_held(&rule, &p), 1);
    p.held = MB_HOLD_ROUNDS;
    fails += expect_stop("unsettled after the held rounds", &rule, &p, MB_STOP_UNSETTLED);
    p.ci_high = 101.5;
    fails += expect_stop("unsettled, CI too wide", &rule, &p, MB_CONTINUE);
    fails += expect_i64("held", "a CI too wide does not hold", mb_held(&rule, &p), 0);
    p.ci_high = 100.4;
    p.held = 0;
    rule.accept_approximate = 1; /* the same unsettled CI within the target: stop, say so */
    fails += expect_stop("approximate accepted", &rule, &p, MB_STOP_APPROXIMATE);
    p.unsettled = 0;
    p.ci_sized = 0; /* too few samples for their autocorrelation */
    fails += expect_stop("approximate, not sized", &rule, &p, MB_STOP_APPROXIMATE);
    p.n = 9;
    fails += expect_stop("approximate, too few samples", &rule, &p, MB_CONTINUE);
    p.n = 50;
    p.ci_high = 101.5;
    fails += expect_stop("approximate, CI too wide", &rule, &p, MB_CONTINUE);
    p.ci_high = 100.4;
    rule.accept_approximate = 0;
    p.unsettled = 0;
    p.held = 0;
    p.ci_sized = 0;
    p.ci_exact = 1;
    p.ci_high = 101.5; /* the larger half-width decides */
    fails += expect_stop("one side too wide", &rule, &p, MB_CONTINUE);
    p.n = 1000;
    fails += expect_stop("cap", &rule, &p, MB_STOP_MAX_SAMPLES);
    p.n = 50;
    p.spent = 1.0;
    fails += expect_stop("budget spent", &rule, &p, MB_STOP_MAX_TIME);
    /* +-1.5% after 0.3 s: 0.3 x 1.5^2 = 0.675 s projected, within twice the budget */
    p.spent = 0.3;
    fails += expect_stop("reachable", &rule, &p, MB_CONTINUE);
    /* +-3% after 0.3 s: 2.7 s projected > 2 s */
    p.ci_high = 103.0;
    fails += expect_stop("futile", &rule, &p, MB_STOP_FUTILE);
    p.ci_exact = 0;
    p.ci_sized = 1;
    fails += expect_stop("futile though not stationary", &rule, &p, MB_STOP_FUTILE);
    p.ci_exact = 1;
    p.ci_sized = 0;
    rule.futility = 0;
    fails += expect_stop("futility off", &rule, &p, MB_CONTINUE);
    p.median = 0; /* zero-time iterations must not divide by zero into a target stop */
    p.ci_low = 0;
    p.ci_high = 1e-3;
    fails += expect_stop("zero median", &rule, &p, MB_CONTINUE);

    /* round sizes */
    fails += expect_i64("next_round", "first rounds fill min_samples", mb_next_round(&rule, 3, 0, 1), 7);
    fails += expect_i64("next_round", "at least 8", mb_next_round(&rule, 12, 0, 1), 8);
    fails += expect_i64("next_round", "a quarter more", mb_next_round(&rule, 400, 0, 1), 100);
    fails += expect_i64("next_round", "time left", mb_next_round(&rule, 400, 0.01, 0.5), 51);
    fails += expect_i64("next_round", "cap", mb_next_round(&rule, 990, 0, 1), 10);
    fails += expect_i64("next_round", "at least 1", mb_next_round(&rule, 1000, 0, 1), 1);

    /* the first round within the budget */
    fails += expect_i64("first_round", "min_samples when it fits", mb_first_round(&rule, 1e-3, 0.5), 10);
    fails += expect_i64("first_round", "what fits the time left", mb_first_round(&rule, 0.07, 0.5), 7);
    fails += expect_i64("first_round", "never below the floor", mb_first_round(&rule, 0.2, 0.5), MB_FLOOR_SAMPLES);
    fails += expect_i64("first_round", "budget already spent", mb_first_round(&rule, 0.2, -0.1), MB_FLOOR_SAMPLES);

    /* batch growth, the one rule for calibration and re-batching */
    fails += expect_i64("grow_batch", "long enough", mb_grow_batch(4, 25, 20, 1 << 30), 4);
    fails += expect_i64("grow_batch", "at least doubles", mb_grow_batch(4, 19, 20, 1 << 30), 8);
    fails += expect_i64("grow_batch", "1.5x the floor", mb_grow_batch(10, 3, 20, 1 << 30), 100);
    fails += expect_i64("grow_batch", "at most 64x", mb_grow_batch(3, 0.01, 20, 1 << 30), 192);
    fails += expect_i64("grow_batch", "zero time", mb_grow_batch(2, 0, 20, 1 << 30), 32);
    fails += expect_i64("grow_batch", "kmax", mb_grow_batch(100, 1, 20, 1000), 1000);
    fails += expect_i64("grow_batch", "at kmax", mb_grow_batch(1000, 1, 20, 1000), 1000);
    /* settling (driver.c): a fault-free stretch of MB_SETTLE_QUIET iterations, and at least
     * as long as the iterations up to the last fault */
    fails += expect_i64("settle", "no fault, short", mb_settle_done(MB_SETTLE_QUIET - 1, 0), 0);
    fails += expect_i64("settle", "no fault, enough", mb_settle_done(MB_SETTLE_QUIET, 0), 1);
    fails += expect_i64("settle", "early fault", mb_settle_done(MB_SETTLE_QUIET + 7, 7), 1);
    fails += expect_i64("settle", "gap inside the transient", mb_settle_done(120, 63), 0);
    fails += expect_i64("settle", "after the transient", mb_settle_done(127, 63), 1);
    fails += expect_i64("settle", "fault in the last chunk", mb_settle_done(255, 255), 0);
    /* settling's time bound: a quarter of --max-time fault-free, half while faulting, each
     * chunk cut to the time left (the rule before ran whole chunks of up to 64 and 20 ms
     * more while faulting: at --max-time 0.002, 10x the size's budget) */
    fails += expect_i64("settle_budget", "doubles while time is left",
                        mb_settle_next(8, 8e-6, 1e-3, 0, 0.05), 16);
    fails += expect_i64("settle_budget", "at most MB_SETTLE_CHUNK",
                        mb_settle_next(64, 64e-6, 1e-3, 1, 0.05), MB_SETTLE_CHUNK);
    fails += expect_i64("settle_budget", "fault-free past a quarter: stop",
                        mb_settle_next(16, 16e-6, 0.0126, 0, 0.05), 0);
    fails += expect_i64("settle_budget", "faulting past a quarter: on",
                        mb_settle_next(16, 16e-6, 0.0126, 1, 0.05), 32);
    fails += expect_i64("settle_budget", "faulting past half: stop",
                        mb_settle_next(16, 16e-6, 0.0251, 1, 0.05), 0);
    /* --max-time 0.002, 10 us per faulting iteration, 0.895 ms spent: 10 in the 0.105 ms left */
    fails += expect_i64("settle_budget", "chunk cut to the time left",
                        mb_settle_next(32, 320e-6, 0.895e-3, 1, 0.002), 10);
    fails += expect_i64("settle_budget", "not one iteration fits: stop",
                        mb_settle_next(4, 4e-3, 0.9e-3, 1, 0.002), 0);
    fails += preempt_selftest();
    fails += expect_i64("fixed_batch", "divisor of 1000", mb_fixed_batch(30, 1000), 40);
    fails += expect_i64("fixed_batch", "already divides", mb_fixed_batch(25, 1000), 25);
    return fails;
}

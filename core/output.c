/* mpibench-core output: the JSON Lines records (header, one result per benchmark x size,
 * footer; docs/core-output.md and core-output.schema.json) and the IMB-style text view. */
#define _POSIX_C_SOURCE 200809L

#include "driver.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double run_elapsed_s(const mb_state *st)
{
    return (double)(mb_now_ns() - st->start_ns) / 1e9;
}

static void write_line(mb_state *st, mb_json *j)
{
    if (!st->json)
        return;
    fwrite(j->buf, 1, j->len, st->json);
    fputc('\n', st->json);
    fflush(st->json);
}

void mb_footer(mb_state *st, const char *status)
{
    mb_json j;
    mj_init(&j);
    mj_obj_begin(&j);
    mj_str(&j, "record", "footer");
    mj_str(&j, "status", status);
    mj_num(&j, "elapsed_s", run_elapsed_s(st));
    /* rank 0's watchdog: one look per deadline, not a clock tick (core/clock.c) */
    mj_int(&j, "watchdog_looks", atomic_load(&st->wd_looks));
    /* the reading at its end: null after a timeout (the watchdog writes this footer) */
    mb_state_emit(&j, "machine_state", &st->state_end);
    mj_obj_end(&j);
    write_line(st, &j);
    mj_free(&j);
}

void mb_emit_result(mb_state *st, const mb_bench *b, int64_t size, const mb_result *r)
{
    mb_ctx c;
    memset(&c, 0, sizeof c);
    c.np = st->np;
    c.size = size;
    double bytes = b->bytes(&c);
    int ok = !strcmp(r->status, "ok");
    double med = r->s.median;
    int has_bw = ok && bytes > 0 && med > 0;
    double bw = has_bw ? bytes / med : NAN; /* bytes/us == MB/s (10^6) */
    double bus = has_bw && b->busbw ? bw * b->busbw(st->np) : NAN;
    double rate = ok && b->msgs_per_iter > 0 && med > 0 ? b->msgs_per_iter / med * 1e6 : NAN;

    mb_json j;
    mj_init(&j);
    mj_obj_begin(&j);
    mj_str(&j, "record", "result");
    mj_str(&j, "benchmark", b->name);
    mj_int(&j, "size", size);
    mj_int(&j, "np", st->np);
    mj_str(&j, "status", r->status);
    if (r->reason[0])
        mj_str(&j, "reason", r->reason);
    else
        mj_null(&j, "reason");
    mj_str(&j, "family", mb_family_name(b));
    mj_int(&j, "active_ranks", b->single_pair && st->np > 2 ? 2 : st->np);
    mj_int(&j, "idle_ranks", b->single_pair && st->np > 2 ? st->np - 2 : 0);
    mj_str(&j, "metric", "time");
    mj_str(&j, "unit", "us");
    mj_str(&j, "statistic", "median");
    if (ok) {
        mj_int(&j, "batch", r->batch);
        mj_bool(&j, "batched", r->batch > 1);
        mj_int(&j, "warmup", r->warmup);
    } else {
        mj_null(&j, "batch");
        mj_bool(&j, "batched", 0);
        mj_int(&j, "warmup", 0);
    }
    mj_int(&j, "rebatched", r->rebatches);
    /* settling (driver.c): untimed iterations until the library stopped page-faulting */
    mj_int(&j, "settle_iterations", ok ? r->settle_iters : 0);
    mj_int(&j, "settle_faults", ok ? r->settle_faults : 0);
    mj_bool(&j, "settled", ok && r->settled);
    mj_int(&j, "sample_faults", ok ? r->sample_faults : 0);
    mj_num(&j, "first_us", r->first_us);
    mj_arr_begin(&j, "samples_us");
    for (int64_t i = 0; ok && i < r->n; i++)
        mj_num_exact(&j, NULL, r->samples[i]);
    mj_arr_end(&j);
    mj_int(&j, "n", ok ? r->n : 0);
    mj_int(&j, "iterations", ok ? r->iters_total : 0);
    const mb_summary *s = &r->s;
#define NUM(key, v) mj_num(&j, key, ok ? (v) : NAN)
    NUM("median_us", s->median);
    NUM("ci_low_us", s->ci_low);
    NUM("ci_high_us", s->ci_high);
    mj_num(&j, "ci_level", 0.95);
    mj_bool(&j, "ci_exact", ok && s->ci_exact);
    mj_str(&j, "ci_method", "order_statistics_n_eff");
    NUM("lag1_autocorr", s->lag1);
    NUM("autocorr_time", s->tau);
    if (ok)
        mj_int(&j, "n_eff", s->n_eff);
    else
        mj_null(&j, "n_eff");
    mj_str(&j, "stationarity", mb_stationarity_name(ok ? s->stationarity : MB_STAT_UNTESTED));
    NUM("min_us", s->min);
    NUM("p5_us", s->p5);
    NUM("p95_us", s->p95);
    NUM("p99_us", s->p99);
    NUM("max_us", s->max);
    NUM("mean_us", s->mean);
    NUM("std_us", s->std);
    NUM("rank_min_us", r->rank_min_us);
    NUM("rank_max_us", r->rank_max_us);
    NUM("rank_avg_us", r->rank_avg_us);
#undef NUM
    const char *stop = mb_stop_name(r->stop);
    if (stop)
        mj_str(&j, "stop_reason", stop);
    else
        mj_null(&j, "stop_reason");
    mj_num(&j, "bytes", bytes);
    mj_num(&j, "bandwidth_mbps", bw);
    mj_num(&j, "busbw_mbps", bus);
    mj_num(&j, "busbw_factor", b->busbw ? b->busbw(st->np) : NAN);
    mj_num(&j, "msg_rate", rate);
    mj_num(&j, "timer_fraction", ok ? r->timer_fraction : NAN);
    mj_num(&j, "batch_floor_us", ok ? r->floor_us : NAN);
    /* how this result's samples started: a barrier before each, before each round only
     * (pair_sync benchmarks under --sync auto), or scheduled */
    mj_str(&j, "sync", st->opt.sync_mode == MB_SYNC_WINDOW                   ? "window"
                       : st->opt.sync_mode == MB_SYNC_AUTO && b->pair_sync ? "round"
                                                                             : "barrier");
    mj_int(&j, "late_samples", r->late);
    /* samples flagged preempted (a rank descheduled in the sample's or the previous one's
     * window); null where the per-thread counter is missing: the flag is unavailable */
    if (r->preempt_na || !mb_nivcsw_available())
        mj_null(&j, "preempted");
    else
        mj_int(&j, "preempted", r->preempted);
    mj_bool(&j, "preempted_excluded", st->opt.exclude_preempted);
    if (st->opt.sync_mode == MB_SYNC_WINDOW)
        mj_num(&j, "clock_offset_max_us", ok ? r->clock_offset_max_us : NAN);
    mj_key_obj(&j, "validation");
    mj_bool(&j, "checked", r->validated);
    if (r->validated) {
        mj_bool(&j, "ok", r->valid_ok);
        if (!r->valid_ok) {
            mj_int(&j, "rank", r->bad_rank);
            mj_int(&j, "index", r->bad_index);
            mj_str(&j, "element", b->elem_bytes == 4 ? "float" : "byte");
            mj_num(&j, "expected", r->bad_expected);
            mj_num(&j, "got", r->bad_got);
            mj_int(&j, "iteration", r->bad_it);
        }
    }
    mj_obj_end(&j);
    mj_bool(&j, "off_cache", st->opt.off_cache);
    mj_int(&j, "buffer_copies", r->pool);
    mj_int(&j, "mem_per_rank", r->mem_per_rank);
    if (r->pool > 0) {
        mj_arr_begin(&j, "buffer_page_offsets");
        mj_int(&j, NULL, r->buf_offset[0]);
        mj_int(&j, NULL, r->buf_offset[1]);
        mj_arr_end(&j);
    } else {
        mj_null(&j, "buffer_page_offsets");
    }
    mj_bool(&j, "root_shift", st->opt.root_shift);
    mj_bool(&j, "per_call", st->opt.per_call);
    mj_bool(&j, "large_count", r->large);
    mj_num(&j, "elapsed_s", r->elapsed_s);
    /* elapsed_s by stage, in the order a size runs them */
    static const int order[] = {MB_STAGE_SETUP, MB_STAGE_FIRST, MB_STAGE_VALIDATE,
                                MB_STAGE_SETTLE, MB_STAGE_CALIBRATE, MB_STAGE_WARMUP,
                                MB_STAGE_MEASURE, MB_STAGE_STATS};
    mj_key_obj(&j, "phases_s");
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        mj_num(&j, mb_stage_name(order[i]), r->phase_s[order[i]]);
    mj_obj_end(&j);
    mj_obj_end(&j);
    mtx_lock(&st->out_mtx);
    write_line(st, &j);
    mtx_unlock(&st->out_mtx);
    mj_free(&j);

    if (!st->text)
        return;
    if (!ok) {
        fprintf(st->text, "%12lld   %-18s %s\n", (long long)size, r->status, r->reason);
    } else {
        double hw = fmax(med - s->ci_low, s->ci_high - med) / med * 100.0;
        char ci[48];
        snprintf(ci, sizeof ci, "%s%.2f%%", s->ci_exact ? "+-" : "~", hw);
        if (b->msgs_per_iter > 0) {
            fprintf(st->text, "%12lld %12lld %12.2f %12.0f %12.2f %9s %8lld %7lld %s\n",
                    (long long)size, (long long)r->iters_total, isfinite(bw) ? bw : 0.0,
                    isfinite(rate) ? rate : 0.0, med, ci,
                    (long long)r->n, (long long)r->batch, stop);
        } else if (b->kind == MB_PT2PT && !b->single_pair) {
            fprintf(st->text, "%12lld %12lld %12.2f %12.2f %12.2f %12.2f %9s %12.2f %8lld %7lld %s\n",
                    (long long)size, (long long)r->iters_total, r->rank_min_us, r->rank_max_us,
                    r->rank_avg_us, med, ci, isfinite(bw) ? bw : 0.0, (long long)r->n,
                    (long long)r->batch, stop);
        } else if (b->kind == MB_PT2PT) {
            fprintf(st->text, "%12lld %12lld %12.2f %12.2f %9s %12.2f %8lld %7lld %s\n",
                    (long long)size, (long long)r->iters_total, s->mean, med, ci,
                    isfinite(bw) ? bw : 0.0,
                    (long long)r->n, (long long)r->batch, stop);
        } else if (!b->sized) {
            fprintf(st->text, "%12lld %12.2f %12.2f %12.2f %12.2f %9s %8lld %7lld %s\n",
                    (long long)r->iters_total, r->rank_min_us, r->rank_max_us, r->rank_avg_us,
                    med, ci, (long long)r->n, (long long)r->batch, stop);
        } else {
            fprintf(st->text, "%12lld %12lld %12.2f %12.2f %12.2f %12.2f %9s %12.2f %8lld %7lld %s\n",
                    (long long)size, (long long)r->iters_total, r->rank_min_us, r->rank_max_us,
                    r->rank_avg_us, med, ci, isfinite(bus) ? bus : 0.0, (long long)r->n, (long long)r->batch,
                    stop);
        }
    }
    fflush(st->text);
}

void mb_text_bench_header(const mb_state *st, const mb_bench *b)
{
    if (!st->text)
        return;
    fprintf(st->text, "\n#----------------------------------------------------------------\n");
    fprintf(st->text, "# Benchmarking %s\n# #processes = %d\n", b->name,
            b->single_pair && st->np > 2 ? 2 : st->np);
    if (b->single_pair && st->np > 2)
        fprintf(st->text, "# ( %d additional process%s waiting in MPI_Barrier)\n", st->np - 2,
                st->np - 2 > 1 ? "es" : "");
    fprintf(st->text, "#----------------------------------------------------------------\n");
    if (b->msgs_per_iter > 0)
        fprintf(st->text, "%12s %12s %12s %12s %12s %9s %8s %7s %s\n", "#bytes", "#repetitions",
                "Mbytes/sec", "Msg/sec", "median[usec]", "ci95", "samples", "batch", "stop");
    else if (b->kind == MB_PT2PT && !b->single_pair)
        fprintf(st->text, "%12s %12s %12s %12s %12s %12s %9s %12s %8s %7s %s\n", "#bytes",
                "#repetitions", "t_min[usec]", "t_max[usec]", "t_avg[usec]", "median[usec]",
                "ci95", "Mbytes/sec", "samples", "batch", "stop");
    else if (b->kind == MB_PT2PT)
        fprintf(st->text, "%12s %12s %12s %12s %9s %12s %8s %7s %s\n", "#bytes", "#repetitions",
                "t[usec]", "median[usec]", "ci95", "Mbytes/sec", "samples", "batch", "stop");
    else if (!b->sized) /* Barrier: IMB prints no #bytes column */
        fprintf(st->text, "%12s %12s %12s %12s %12s %9s %8s %7s %s\n", "#repetitions",
                "t_min[usec]", "t_max[usec]", "t_avg[usec]", "median[usec]", "ci95", "samples",
                "batch", "stop");
    else
        fprintf(st->text, "%12s %12s %12s %12s %12s %12s %9s %12s %8s %7s %s\n", "#bytes",
                "#repetitions", "t_min[usec]", "t_max[usec]", "t_avg[usec]", "median[usec]",
                "ci95", "busbw[MB/s]", "samples", "batch", "stop");
}

static void trimmed_first_line(const char *in, char *out, size_t cap)
{
    while (*in && isspace((unsigned char)*in))
        in++;
    size_t n = 0;
    int sp = 0;
    for (; *in && *in != '\n' && n + 1 < cap; in++) {
        if (isspace((unsigned char)*in)) {
            sp = 1;
            continue;
        }
        if (sp && n)
            out[n++] = ' ';
        sp = 0;
        if (n + 1 < cap)
            out[n++] = *in;
    }
    out[n] = 0;
}

void mb_emit_header(mb_state *st, int argc, char **argv)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING], first[512];
    int len, ver, sub;
    MPI_Get_library_version(lib, &len);
    MPI_Get_version(&ver, &sub);
    trimmed_first_line(lib, first, sizeof first);
    char name[MPI_MAX_PROCESSOR_NAME];
    memset(name, 0, sizeof name);
    MPI_Get_processor_name(name, &len);
    char *names = st->rank == 0 ? malloc((size_t)st->np * MPI_MAX_PROCESSOR_NAME) : NULL;
    MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
               MPI_COMM_WORLD);
    if (st->rank != 0)
        return;
    int *uniq = malloc(sizeof(int) * (size_t)st->np), *cnt = calloc((size_t)st->np, sizeof(int));
    int nu = 0;
    for (int i = 0; i < st->np; i++) {
        int f = -1;
        for (int u = 0; u < nu; u++)
            if (!strcmp(names + (size_t)uniq[u] * MPI_MAX_PROCESSOR_NAME,
                        names + (size_t)i * MPI_MAX_PROCESSOR_NAME))
                f = u;
        if (f < 0) {
            f = nu;
            uniq[nu++] = i;
        }
        cnt[f]++;
    }
    char vbuf[16], utc[32];
    snprintf(vbuf, sizeof vbuf, "%d.%d", ver, sub);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(utc, sizeof utc, "%Y-%m-%dT%H:%M:%SZ", &tm);

    mb_json j;
    mj_init(&j);
    mj_obj_begin(&j);
    mj_str(&j, "record", "header");
    mj_int(&j, "schema_version", MB_SCHEMA_VERSION);
    mj_str(&j, "core_version", MB_VERSION);
    mj_str(&j, "mpi_library_version", first);
    mj_str(&j, "mpi_library_version_full", lib);
    mj_str(&j, "mpi_version", vbuf);
    mj_bool(&j, "large_count", MB_HAVE_LARGE);
    mj_str(&j, "thread_level_provided", mb_thread_level_name(st->thread_provided));
    mj_int(&j, "np", st->np);
    mj_num(&j, "mpi_init_us", st->init_us);
    /* rank 0's CLOCK_MONOTONIC at main (before MPI_Init), the origin of the footer's
     * elapsed_s: a harness on the same host places the launch's start-up and teardown */
    mj_num_exact(&j, "start_monotonic_s", (double)st->start_ns / 1e9);
    /* the machine-state reading at the launch's start (state.c; null: none taken) */
    mb_state_emit(&j, "machine_state", &st->state_start);
    mj_arr_begin(&j, "hosts");
    for (int u = 0; u < nu; u++)
        mj_str(&j, NULL, names + (size_t)uniq[u] * MPI_MAX_PROCESSOR_NAME);
    mj_arr_end(&j);
    mj_key_obj(&j, "ranks_per_host");
    for (int u = 0; u < nu; u++)
        mj_int(&j, names + (size_t)uniq[u] * MPI_MAX_PROCESSOR_NAME, cnt[u]);
    mj_obj_end(&j);
    mj_key_obj(&j, "timer");
    mj_str(&j, "source", "MPI_Wtime");
    mj_num(&j, "resolution_us", st->timer.resolution_us);
    mj_num(&j, "overhead_us", st->timer.overhead_us);
    mj_num(&j, "wtick_us", st->timer.wtick_us);
    mj_num(&j, "min_interval_us", st->timer.min_interval_us);
    mj_num(&j, "calibration_us", st->timer.calibration_us);
    mj_bool(&j, "subtracted", 0);
    mj_obj_end(&j);
    mj_key_obj(&j, "options");
    mj_arr_begin(&j, "benchmarks");
    for (int i = 0; i < st->opt.nbench; i++)
        mj_str(&j, NULL, st->opt.bench[i]->name);
    mj_arr_end(&j);
    mj_str(&j, "sizes_spec", st->opt.sizes_spec);
    mj_arr_begin(&j, "sizes");
    for (int i = 0; i < st->opt.nsizes; i++)
        mj_int(&j, NULL, st->opt.sizes[i]);
    mj_arr_end(&j);
    mj_str(&j, "mode", st->opt.iterations ? "iterations" : "adaptive");
    mj_num(&j, "target_pct", st->opt.target_pct);
    mj_num(&j, "max_time_s", st->opt.max_time);
    mj_int(&j, "min_samples", st->opt.min_samples);
    mj_int(&j, "max_samples", st->opt.max_samples);
    mj_int(&j, "warmup", st->opt.warmup);
    if (st->opt.iterations)
        mj_int(&j, "iterations", st->opt.iterations);
    else
        mj_null(&j, "iterations");
    if (st->opt.iterations_volume)
        mj_int(&j, "iterations_volume", st->opt.iterations_volume);
    else
        mj_null(&j, "iterations_volume");
    mj_num(&j, "timeout_s", st->opt.timeout);
    mj_num(&j, "batch_us", st->opt.batch_us);
    mj_str(&j, "sync", st->opt.sync_mode == MB_SYNC_WINDOW    ? "window"
                       : st->opt.sync_mode == MB_SYNC_BARRIER ? "barrier"
                                                              : "auto");
    mj_str(&j, "thread_level", mb_thread_level_name(st->opt.thread_level));
    mj_bool(&j, "futility", st->opt.futility);
    mj_bool(&j, "accept_approximate", st->opt.accept_approximate);
    mj_bool(&j, "exclude_preempted", st->opt.exclude_preempted);
    mj_num(&j, "preempted_max_time_s", st->opt.preempt_time);
    mj_bool(&j, "preempt_flag", mb_nivcsw_available());
    mj_bool(&j, "per_call", st->opt.per_call);
    mj_bool(&j, "validate", st->opt.validate);
    mj_bool(&j, "settle", st->opt.settle);
    mj_num(&j, "state_ms", st->opt.state_ms);
    mj_bool(&j, "off_cache", st->opt.off_cache);
    mj_bool(&j, "root_shift", st->opt.root_shift);
    if (st->opt.mem_limit)
        mj_int(&j, "mem_limit", st->opt.mem_limit);
    else
        mj_null(&j, "mem_limit");
    mj_int(&j, "window", MB_WINDOW);
    mj_int(&j, "buffer_align", MB_BUFFER_ALIGN);
    mj_int(&j, "llc_bytes", mb_llc_bytes());
    if (st->opt.debug_corrupt >= 0)
        mj_int(&j, "debug_corrupt", st->opt.debug_corrupt);
    if (st->opt.debug_stall >= 0)
        mj_int(&j, "debug_stall", st->opt.debug_stall);
    if (st->opt.debug_large)
        mj_bool(&j, "debug_large_count", 1);
    mj_obj_end(&j);
    mj_arr_begin(&j, "argv");
    for (int i = 0; i < argc; i++)
        mj_str(&j, NULL, argv[i]);
    mj_arr_end(&j);
    mj_str(&j, "start_utc", utc);
    mj_obj_end(&j);
    write_line(st, &j);
    mj_free(&j);

    if (st->text) {
        char batches[160];
        if (st->opt.per_call)
            snprintf(batches, sizeof batches, "# Batches             : none (--per-call): every "
                     "sample is one call timed alone\n");
        else
            snprintf(batches, sizeof batches, "# Batches             : pt2pt >= %.1f us "
                     "(--batch-us); collectives batch only below the timer floor\n",
                     fmax(st->opt.batch_us, st->timer.min_interval_us));
        fprintf(st->text,
                "#------------------------------------------------------------\n"
                "#    mpibench-core %s (IMB-style view; JSON Lines has every sample)\n"
                "#------------------------------------------------------------\n"
                "# Date                : %s\n# MPI library         : %s (MPI-%s)\n"
                "# Processes           : %d on %d host%s; MPI_Init %.0f us\n"
                "# Timer               : MPI_Wtime, overhead %.4f us/call, resolution %.4f us; "
                "batches >= %.2f us (timer cost < 1%%), not subtracted\n"
                "%s"
                "# Statistic           : median of samples; sample = max over ranks of "
                "(batch time / batch)\n"
                "# ci95                : half-width of the 95%% CI of the median, allowing for "
                "autocorrelation (~ = too few samples to tell)\n",
                MB_VERSION, utc, first, vbuf, st->np, nu, nu > 1 ? "s" : "", st->init_us,
                st->timer.overhead_us,
                st->timer.resolution_us, st->timer.min_interval_us, batches);
        if (st->opt.iterations)
            fprintf(st->text, "# Stopping            : fixed %lld iterations per size%s\n",
                    (long long)st->opt.iterations,
                    st->opt.iterations_volume ? " (fewer for large sizes: volume cap)" : "");
        else
            fprintf(st->text, "# Stopping            : adaptive, CI within +-%g%% or %g s per size "
                    "or %lld samples (min %lld)\n", st->opt.target_pct, st->opt.max_time,
                    (long long)st->opt.max_samples, (long long)st->opt.min_samples);
        fprintf(st->text,
                "# Warm-up             : %lld samples per size, discarded\n"
                "# MB/s = Mbytes/sec   : 10^6 bytes per second, from the median time\n"
                "# PingPong t          : half the round-trip time (IMB)\n"
                "# Validation          : %s\n",
                (long long)st->opt.warmup, st->opt.validate ? "on (separate untimed pass)" : "off");
        fprintf(st->text, "# Thread level        : %s (requested %s)\n",
                mb_thread_level_name(st->thread_provided), mb_thread_level_name(st->opt.thread_level));
        if (st->opt.root_shift || st->opt.off_cache)
            fprintf(st->text, "# Buffers and roots   :%s%s\n",
                    st->opt.root_shift ? " root rotates every iteration (--root-shift);" : "",
                    st->opt.off_cache ? " buffer pool >= 2x LLC, one copy per iteration (--off-cache)"
                                : "");
        fflush(st->text);
    }
    free(uniq);
    free(cnt);
    free(names);
}


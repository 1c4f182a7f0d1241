/* Minimal JSON writer for the JSON Lines output: one record is built in memory and written
 * with a single fwrite, so a killed job leaves whole lines (the parser reports a torn last line). */
#include "mb.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put(mb_json *j, const char *s, size_t n)
{
    if (j->len + n + 1 > j->cap) {
        size_t cap = j->cap ? j->cap : 256;
        while (cap < j->len + n + 1)
            cap *= 2;
        char *nb = realloc(j->buf, cap);
        if (!nb) {
            fprintf(stderr, "mpibench-core: out of memory writing JSON\n");
            abort();
        }
        j->buf = nb;
        j->cap = cap;
    }
    memcpy(j->buf + j->len, s, n);
    j->len += n;
    j->buf[j->len] = '\0';
}

static void puts_(mb_json *j, const char *s) { put(j, s, strlen(s)); }

static void putf(mb_json *j, const char *fmt, ...)
{
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0)
        put(j, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

static void qstr(mb_json *j, const char *s)
{
    puts_(j, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': puts_(j, "\\\""); break;
        case '\\': puts_(j, "\\\\"); break;
        case '\n': puts_(j, "\\n"); break;
        case '\t': puts_(j, "\\t"); break;
        case '\r': puts_(j, "\\r"); break;
        default:
            if (*p < 0x20)
                putf(j, "\\u%04x", *p);
            else
                put(j, (const char *)p, 1);
        }
    }
    puts_(j, "\"");
}

static void key(mb_json *j, const char *k)
{
    if (j->need_comma)
        puts_(j, ",");
    if (k) {
        qstr(j, k);
        puts_(j, ":");
    }
    j->need_comma = 1;
}

void mj_init(mb_json *j) { memset(j, 0, sizeof *j); }
void mj_free(mb_json *j) { free(j->buf); memset(j, 0, sizeof *j); }

void mj_obj_begin(mb_json *j) { key(j, NULL); puts_(j, "{"); j->need_comma = 0; }
void mj_obj_end(mb_json *j) { puts_(j, "}"); j->need_comma = 1; }
void mj_key_obj(mb_json *j, const char *k) { key(j, k); puts_(j, "{"); j->need_comma = 0; }
void mj_arr_begin(mb_json *j, const char *k) { key(j, k); puts_(j, "["); j->need_comma = 0; }
void mj_arr_end(mb_json *j) { puts_(j, "]"); j->need_comma = 1; }

void mj_str(mb_json *j, const char *k, const char *v)
{
    key(j, k);
    if (v)
        qstr(j, v);
    else
        puts_(j, "null");
}

static void num(mb_json *j, const char *k, double v, const char *fmt)
{
    key(j, k);
    if (isfinite(v))
        putf(j, fmt, v);
    else
        puts_(j, "null");
}

void mj_num(mb_json *j, const char *k, double v) { num(j, k, v, "%.10g"); }

/* 17 significant digits read back as the same double: samples are written this way so that
 * every statistic (the autocorrelation above all, which ties can change) can be recomputed
 * from the file exactly as the core computed it */
void mj_num_exact(mb_json *j, const char *k, double v) { num(j, k, v, "%.17g"); }

void mj_int(mb_json *j, const char *k, int64_t v) { key(j, k); putf(j, "%lld", (long long)v); }
void mj_bool(mb_json *j, const char *k, int v) { key(j, k); puts_(j, v ? "true" : "false"); }
void mj_null(mb_json *j, const char *k) { key(j, k); puts_(j, "null"); }
void mj_raw(mb_json *j, const char *k, const char *raw) { key(j, k); puts_(j, raw); }

/* util.c -- allocation, strings, files, buffers, RNG, clock. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

void *ar_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) ar_error(ARACHNE_E_NO_MEMORY, "out of memory allocating %zu bytes", n);
    return p;
}

void *ar_calloc(size_t count, size_t size)
{
    void *p;
    if (size && count > SIZE_MAX / size) {
        ar_error(ARACHNE_E_NO_MEMORY, "allocation of %zu x %zu bytes overflows", count, size);
        return NULL;
    }
    p = calloc(count ? count : 1, size ? size : 1);
    if (!p) ar_error(ARACHNE_E_NO_MEMORY, "out of memory allocating %zu x %zu bytes", count, size);
    return p;
}

void *ar_realloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) ar_error(ARACHNE_E_NO_MEMORY, "out of memory growing to %zu bytes", n);
    return q;
}

char *ar_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = ar_malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static int lower(int c) { return (c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c; }

int ar_strcasecmp(const char *a, const char *b)
{
    for (;; a++, b++) {
        int d = lower((unsigned char)*a) - lower((unsigned char)*b);
        if (d || !*a) return d;
    }
}

int ar_read_file(const char *path, char **out, size_t *out_len)
{
    FILE *f;
    char *data = NULL;
    size_t len = 0, cap = 0;
    *out = NULL;
    if (out_len) *out_len = 0;
    f = fopen(path, "rb");
    if (!f) return ar_error(ARACHNE_E_IO, "%s: cannot open: %s", path, strerror(errno));
    for (;;) {
        size_t n;
        if (cap - len < 4097) {
            size_t ncap = cap ? cap * 2 : 65536;
            char *nd;
            /* A device such as /dev/zero, or a huge file given by mistake,
             * must not be read until memory runs out: the buffer stops
             * growing at the limit (+ room for the NUL and one more read). */
            if (ncap > AR_FILE_MAX_BYTES + 4098) ncap = AR_FILE_MAX_BYTES + 4098;
            if (len > AR_FILE_MAX_BYTES || ncap <= cap) {
                free(data);
                fclose(f);
                return ar_error(ARACHNE_E_IO, "%s: larger than %zu bytes; refusing to read it", path,
                                (size_t)AR_FILE_MAX_BYTES);
            }
            nd = ar_realloc(data, ncap);
            if (!nd) { free(data); fclose(f); return ARACHNE_E_NO_MEMORY; }
            data = nd;
            cap = ncap;
        }
        n = fread(data + len, 1, cap - len - 1, f);
        len += n;
        if (n == 0) break;
    }
    if (ferror(f)) {
        int e = errno;
        free(data);
        fclose(f);
        return ar_error(ARACHNE_E_IO, "%s: read error: %s", path, strerror(e));
    }
    fclose(f);
    data[len] = '\0';
    *out = data;
    if (out_len) *out_len = len;
    return ARACHNE_OK;
}

/* Temporary names are "<path>.tmp.<pid>.<n>" with n from a process-wide
 * counter, created with O_EXCL: two threads saving the same path never share
 * a temporary (a shared one let one thread rename the other's half-written
 * file into place), and a stale file of that name is never reused. */
static atomic_uint tmp_counter;

int ar_write_file_atomic(const char *path, const void *data, size_t len)
{
    size_t plen = strlen(path);
    char *tmp = ar_malloc(plen + 48);
    FILE *f = NULL;
    int ok, fd = -1, tries;
    if (!tmp) return ARACHNE_E_NO_MEMORY;
    for (tries = 0; tries < 100 && fd < 0; tries++) {
        unsigned n = atomic_fetch_add(&tmp_counter, 1u);
        snprintf(tmp, plen + 48, "%s.tmp.%ld.%u", path, (long)getpid(), n);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd >= 0 && !(f = fdopen(fd, "wb"))) {
        close(fd);
        remove(tmp);
    }
    if (!f) {
        int e = errno;
        free(tmp);
        return ar_error(ARACHNE_E_IO, "%s: cannot create temporary file: %s", path, strerror(e));
    }
    ok = fwrite(data, 1, len, f) == len;
    ok = (fflush(f) == 0) && ok;
    ok = (fclose(f) == 0) && ok;
    if (!ok) {
        remove(tmp);
        free(tmp);
        return ar_error(ARACHNE_E_IO, "%s: write failed (disk full?)", path);
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        free(tmp);
        return ar_error(ARACHNE_E_IO, "%s: cannot rename into place: %s", path, strerror(e));
    }
    free(tmp);
    return ARACHNE_OK;
}

void ar_buf_init(ar_buf *b) { memset(b, 0, sizeof *b); }

void ar_buf_free(ar_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

void ar_buf_put(ar_buf *b, const char *s, size_t n)
{
    if (b->failed) return;
    if (b->cap - b->len < n + 1) {
        size_t ncap = b->cap ? b->cap : 256;
        char *nd;
        while (ncap - b->len < n + 1) ncap *= 2;
        nd = ar_realloc(b->data, ncap);
        if (!nd) { b->failed = 1; return; }
        b->data = nd;
        b->cap = ncap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void ar_buf_puts(ar_buf *b, const char *s) { ar_buf_put(b, s, strlen(s)); }

void ar_buf_printf(ar_buf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) { b->failed = 1; return; }
    if ((size_t)n < sizeof small) {
        ar_buf_put(b, small, (size_t)n);
    } else {
        char *big = ar_malloc((size_t)n + 1);
        if (!big) { b->failed = 1; return; }
        va_start(ap, fmt);
        vsnprintf(big, (size_t)n + 1, fmt, ap);
        va_end(ap);
        ar_buf_put(b, big, (size_t)n);
        free(big);
    }
}

int ar_buf_status(const ar_buf *b)
{
    return b->failed ? ar_error(ARACHNE_E_NO_MEMORY, "out of memory building output") : ARACHNE_OK;
}

int ar_copy_out(char *buf, size_t cap, size_t *needed, const char *s, size_t len)
{
    if (needed) *needed = len + 1;
    if (!buf || cap < len + 1)
        return ar_error(ARACHNE_E_BUFFER_TOO_SMALL, "buffer of %zu bytes too small: %zu needed", cap, len + 1);
    memcpy(buf, s, len);
    buf[len] = '\0';
    return ARACHNE_OK;
}

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void ar_rng_seed(ar_rng *r, uint64_t seed)
{
    int i;
    for (i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t ar_rng_next(ar_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double ar_rng_uniform(ar_rng *r) { return (double)(ar_rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }

int ar_rng_int(ar_rng *r, int n) { return (int)(ar_rng_uniform(r) * n); }

double ar_rng_normal(ar_rng *r)
{
    double u1 = ar_rng_uniform(r), u2 = ar_rng_uniform(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

double ar_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

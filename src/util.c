/* util.c -- allocation, strings, files, buffers, RNG, clock. */
#define _POSIX_C_SOURCE 200809L
#define _XOPEN_SOURCE 700
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
#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>

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

/* Opens path for reading without waiting: a FIFO that no process writes
 * would block open() for ever.  Reads then block as usual (a pipe someone
 * writes, as `cmd | arachne price /dev/stdin`, is read to its end; a FIFO
 * without a writer reads as empty).  -1 with errno on failure. */
static int open_read_nowait(const char *path)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC), fl;
    if (fd < 0) return -1;
    if ((fl = fcntl(fd, F_GETFL)) == -1 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == -1) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int ar_path_readable(const char *path)
{
    struct stat sb;
    int fd = open_read_nowait(path), ok;
    if (fd < 0) return 0;
    ok = fstat(fd, &sb) == 0 && !S_ISDIR(sb.st_mode);
    close(fd);
    return ok;
}

int ar_read_file(const char *path, char **out, size_t *out_len)
{
    FILE *f;
    char *data = NULL;
    size_t len = 0, cap = 0;
    int fd;
    *out = NULL;
    if (out_len) *out_len = 0;
    fd = open_read_nowait(path);
    f = fd < 0 ? NULL : fdopen(fd, "rb");
    if (!f) {
        int e = errno;
        if (fd >= 0) close(fd);
        return ar_error(ARACHNE_E_IO, "%s: cannot open: %s", path, strerror(e));
    }
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

/* ---- atomic file writer (docs/reliability.md, "Files") -----------------
 *
 * Every file the library writes, and the `arachne` command's --out files,
 * go through ar_write_file_atomic:
 *   - the data goes to a new temporary "<path>.tmp.<pid>.<hex>" in the same
 *     directory, opened O_CREAT|O_EXCL|O_NOFOLLOW: a file or symlink planted
 *     under that name is never opened (a symlink would redirect the write),
 *     and <hex> is unpredictable, so planted names cannot block a save;
 *   - when <path> exists, the temporary gets its permission bits first, so a
 *     0600 file stays 0600;
 *   - a file-size limit (ulimit -f) below the size is refused before
 *     anything is written: the write would otherwise raise SIGXFSZ, which
 *     kills the process by default;
 *   - then rename() over <path>; on any failure the temporary is removed
 *     and the old file is untouched;
 *   - temporaries of the same <path> left by processes that died during a
 *     save (kill -9, power loss of the process) are removed: a
 *     "<path>.tmp.<pid>.<hex>" whose pid no longer exists, owned by us. */
static atomic_uint tmp_counter;

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Unpredictable 64 bits for a temporary name: clock, counter, pid, and the
 * address of a stack variable (ASLR).  Not for cryptography; enough that a
 * name cannot be planted in advance. */
static uint64_t tmp_nonce(void)
{
    struct timespec ts;
    int here = 0;
    uint64_t x;
    clock_gettime(CLOCK_REALTIME, &ts);
    x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30);
    x ^= mix64((uint64_t)atomic_fetch_add(&tmp_counter, 1u) + 0x9e3779b97f4a7c15ULL);
    x ^= mix64((uint64_t)getpid() ^ (uint64_t)(uintptr_t)&here);
    return mix64(x);
}

/* Parses "<pid>.<hex>" (the part after "<base>.tmp."): 1 and *pid when the
 * whole string has that form. */
static int parse_tmp_suffix(const char *s, long *pid)
{
    char *end;
    long v;
    if (*s < '0' || *s > '9') return 0;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || v <= 0 || *end != '.' || !end[1]) return 0;
    for (s = end + 1; *s; s++)
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f'))) return 0;
    *pid = v;
    return 1;
}

/* Removes "<base>.tmp.<pid>.<hex>" files in dir whose process is gone and
 * which belong to this user.  Best effort: errors are ignored (the save
 * goes on).  Our own pid's temporaries may belong to other threads' saves
 * in progress and are never touched. */
static void remove_stale_temporaries(const char *dir, const char *base)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    size_t blen = strlen(base);
    long self = (long)getpid();
    if (!d) return;
    while ((e = readdir(d)) != NULL) {
        const char *n = e->d_name;
        long pid;
        struct stat st;
        if (strncmp(n, base, blen) != 0 || strncmp(n + blen, ".tmp.", 5) != 0) continue;
        if (!parse_tmp_suffix(n + blen + 5, &pid) || pid == self) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* alive, or not ours to judge */
        if (fstatat(dirfd(d), n, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (st.st_uid != geteuid() || !(S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))) continue;
        (void)unlinkat(dirfd(d), n, 0);
    }
    closedir(d);
}

/* Splits path into its directory ("." when none) and base name (both
 * allocated in one block *dir_out; *base_out points into it). */
static int split_path(const char *path, char **dir_out, const char **base_out)
{
    size_t n = strlen(path);
    const char *slash = strrchr(path, '/');
    char *d = ar_malloc(n + 3);
    if (!d) return ARACHNE_E_NO_MEMORY;
    if (!slash) {
        strcpy(d, ".");
        memcpy(d + 2, path, n + 1);
        *base_out = d + 2;
    } else {
        size_t dl = (size_t)(slash - path);
        memcpy(d, path, dl ? dl : 1); /* "/x": the directory is "/" */
        d[dl ? dl : 1] = '\0';
        memcpy(d + (dl ? dl : 1) + 1, slash + 1, n - dl);
        *base_out = d + (dl ? dl : 1) + 1;
    }
    *dir_out = d;
    return ARACHNE_OK;
}

int ar_write_file_atomic(const char *path, const void *data, size_t len)
{
    size_t plen, done = 0;
    char *tmp = NULL, *dir = NULL;
    const char *base = NULL;
    const char *p = data;
    struct stat old;
    struct rlimit lim;
    int fd = -1, tries, e, have_old;
    if (!path || (!data && len)) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "write file: NULL argument");
    plen = strlen(path);
    if (plen == 0) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "write file: empty path");
    if (path[plen - 1] == '/') return ar_error(ARACHNE_E_IO, "%s: is a directory name, not a file", path);
    /* ulimit -f: refuse up front instead of dying of SIGXFSZ mid-write */
    if (getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY && (uint64_t)len > (uint64_t)lim.rlim_cur)
        return ar_error(ARACHNE_E_IO, "%s: write failed: %zu bytes exceed the file size limit of %llu bytes (ulimit -f)",
                        path, len, (unsigned long long)lim.rlim_cur);
    /* the rename below would replace a device node or a FIFO with a file
     * (as root: /dev/null or /dev/full turned into plain files) */
    if (lstat(path, &old) == 0 && (S_ISCHR(old.st_mode) || S_ISBLK(old.st_mode) || S_ISFIFO(old.st_mode) ||
                                   S_ISSOCK(old.st_mode)))
        return ar_error(ARACHNE_E_IO, "%s: is a device, FIFO or socket, not a file; refusing to replace it", path);
    if (split_path(path, &dir, &base)) return ARACHNE_E_NO_MEMORY;
    remove_stale_temporaries(dir, base);
    have_old = stat(path, &old) == 0 && S_ISREG(old.st_mode);
    tmp = ar_malloc(plen + 48);
    if (!tmp) { free(dir); return ARACHNE_E_NO_MEMORY; }
    for (tries = 0; tries < 64 && fd < 0; tries++) {
        snprintf(tmp, plen + 48, "%s.tmp.%ld.%016llx", path, (long)getpid(), (unsigned long long)tmp_nonce());
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    free(dir);
    if (fd < 0) {
        e = errno;
        free(tmp);
        return ar_error(ARACHNE_E_IO, "%s: cannot create temporary file: %s", path, strerror(e));
    }
    /* keep the old file's permission bits (0600 stays 0600); the owner
     * becomes the saving user, as with any new file */
    if (have_old && fchmod(fd, old.st_mode & 07777) != 0) {
        e = errno;
        goto fail;
    }
    while (done < len) {
        ssize_t w = write(fd, p + done, len - done > ((size_t)1 << 30) ? (size_t)1 << 30 : len - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            e = w < 0 ? errno : EIO;
            goto fail;
        }
        done += (size_t)w;
    }
    if (close(fd) != 0) {
        e = errno;
        fd = -1;
        goto fail;
    }
    fd = -1;
    if (rename(tmp, path) != 0) {
        e = errno;
        unlink(tmp);
        free(tmp);
        return ar_error(ARACHNE_E_IO, "%s: cannot rename into place: %s", path, strerror(e));
    }
    free(tmp);
    return ARACHNE_OK;
fail:
    if (fd >= 0) close(fd);
    unlink(tmp);
    free(tmp);
    return ar_error(ARACHNE_E_IO, "%s: write failed: %s", path, strerror(e));
}

int ar_check_saved_size(const char *what, const char *path, size_t len)
{
    if (len <= AR_FILE_MAX_BYTES) return ARACHNE_OK;
    return ar_error(ARACHNE_E_INVALID_ARGUMENT, "%s: the %s would be %zu bytes, more than the %zu a file may have to "
                    "be read back; nothing written", path, what, len, (size_t)AR_FILE_MAX_BYTES);
}

int arachne_file_write(const char *path, const void *data, size_t len)
{
    return ar_write_file_atomic(path, data, len);
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
    if (n) memcpy(b->data + b->len, s, n); /* s may be NULL when n is 0 */
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
    /* buf NULL with cap 0 asks the size; with a capacity it is a mistake,
     * not a buffer too small */
    if (!buf && cap) return ar_error(ARACHNE_E_INVALID_ARGUMENT, "NULL buffer with a capacity of %zu bytes", cap);
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

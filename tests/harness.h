/* harness.h -- the in-tree test harness.
 *
 * A test file tests/test_<module>.c defines tests with TEST(name) and ends with
 *     SUITE(module, T(name1), T(name2), ...);
 * The Makefile finds every SUITE and generates the runner's table.
 * Assertions report file:line and both values, then return from the test. */
#ifndef ARACHNE_TEST_HARNESS_H
#define ARACHNE_TEST_HARNESS_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arachne.h"

typedef struct th_test { const char *name; void (*fn)(void); } th_test;
typedef struct th_suite { const char *name; const th_test *tests; int count; } th_suite;

/* Per-test state, owned by the runner. */
extern int th_failed_flag;
extern int th_skipped_flag;
void th_fail(const char *file, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
void th_skip(const char *why);

/* Directory of Sailor's measured profiles: $ARACHNE_SHARED_DATA when it
 * holds a profiles.json, else the vendored tests/data/sailor-profiles; NULL
 * only when neither is there (then the test SKIPs). */
const char *th_sailor_dir(void);
/* Path of the arachne binary under test ($ARACHNE_BIN or bin/arachne). */
const char *th_arachne_bin(void);
/* Creates a fresh empty temporary directory; returns its path (static). */
const char *th_tmpdir(void);
/* 1 when ARACHNE_TEST_QUICK is set to anything but "" or "0" (check-tsan and
 * check-valgrind set it): heavy tests then run scaled-down workloads that
 * still assert the same properties.  Plain `make check` leaves it unset. */
static inline int th_quick(void)
{
    const char *v = getenv("ARACHNE_TEST_QUICK");
    return v && v[0] && strcmp(v, "0") != 0;
}
/* Runs a shell command, captures stdout (+stderr if merge) into a static
 * buffer; returns the exit status (-1 if it could not run). */
int th_run(const char *cmd, const char **out);

#define TEST(name) static void name(void)
#define T(name) { #name, name }
#define SUITE(mod, ...)                                                       \
    static const th_test th_tests_##mod[] = { __VA_ARGS__ };                  \
    const th_suite th_suite_##mod = { #mod, th_tests_##mod,                   \
        (int)(sizeof th_tests_##mod / sizeof th_tests_##mod[0]) }

#define SKIP(why) do { th_skip(why); return; } while (0)

#define ASSERT(c) do { if (!(c)) { th_fail(__FILE__, __LINE__, "assertion failed: %s", #c); return; } } while (0)
#define ASSERT_MSG(c, ...) do { if (!(c)) { th_fail(__FILE__, __LINE__, __VA_ARGS__); return; } } while (0)
#define ASSERT_EQ(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); \
    if (a_ != b_) { th_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, a_, b_); return; } } while (0)
#define ASSERT_NE(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); \
    if (a_ == b_) { th_fail(__FILE__, __LINE__, "%s != %s: both %lld", #a, #b, a_); return; } } while (0)
#define ASSERT_GT(a, b) do { double a_ = (double)(a), b_ = (double)(b); \
    if (!(a_ > b_)) { th_fail(__FILE__, __LINE__, "%s > %s: %.17g <= %.17g", #a, #b, a_, b_); return; } } while (0)
#define ASSERT_LE(a, b) do { double a_ = (double)(a), b_ = (double)(b); \
    if (!(a_ <= b_)) { th_fail(__FILE__, __LINE__, "%s <= %s: %.17g > %.17g", #a, #b, a_, b_); return; } } while (0)
#define ASSERT_NEAR(a, b, rel) do { double a_ = (double)(a), b_ = (double)(b); \
    double s_ = fabs(a_) > fabs(b_) ? fabs(a_) : fabs(b_); \
    if (!(fabs(a_ - b_) <= (rel) * (s_ > 1e-300 ? s_ : 1e-300))) { \
        th_fail(__FILE__, __LINE__, "%s ~= %s (rel %g): %.17g vs %.17g", #a, #b, (double)(rel), a_, b_); return; } } while (0)
#define ASSERT_STR(a, b) do { const char *a_ = (a), *b_ = (b); \
    if (!a_ || !b_ || strcmp(a_, b_) != 0) { th_fail(__FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", #a, #b, \
        a_ ? a_ : "(null)", b_ ? b_ : "(null)"); return; } } while (0)
#define ASSERT_CONTAINS(hay, needle) do { const char *h_ = (hay), *n_ = (needle); \
    if (!h_ || !strstr(h_, n_)) { th_fail(__FILE__, __LINE__, "%s contains \"%s\": got \"%s\"", #hay, n_, h_ ? h_ : "(null)"); return; } } while (0)
/* Asserts a call returns ARACHNE_OK, printing the library's last error if not. */
#define ASSERT_OK(expr) do { int st_ = (expr); if (st_ != ARACHNE_OK) { \
    th_fail(__FILE__, __LINE__, "%s returned %d (%s): %s", #expr, st_, arachne_status_string(st_), arachne_last_error()); return; } } while (0)
/* Asserts a call fails with the given status and leaves a non-empty message. */
#define ASSERT_STATUS(expr, want) do { int st_; arachne_clear_error(); st_ = (expr); if (st_ != (want)) { \
    th_fail(__FILE__, __LINE__, "%s returned %d (%s), wanted %d; last error: %s", #expr, st_, \
        arachne_status_string(st_), (int)(want), arachne_last_error()); return; } \
    if (st_ != ARACHNE_OK && arachne_last_error()[0] == '\0') { \
        th_fail(__FILE__, __LINE__, "%s failed without a message", #expr); return; } } while (0)

#endif

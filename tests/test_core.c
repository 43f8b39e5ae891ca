/* test_core.c -- version, status strings, last error, util helpers. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "util.h"

TEST(version_matches_header)
{
    char want[32];
    ASSERT_EQ(arachne_version(), ARACHNE_VERSION_NUMBER);
    ASSERT_STR(arachne_version_string(), ARACHNE_VERSION_STRING);
    snprintf(want, sizeof want, "%d.%d.%d", ARACHNE_VERSION_MAJOR, ARACHNE_VERSION_MINOR, ARACHNE_VERSION_PATCH);
    ASSERT_STR(arachne_version_string(), want);
}

TEST(status_strings_are_distinct)
{
    int a, b;
    for (a = -12; a <= 0; a++) {
        ASSERT(arachne_status_string(a) != NULL);
        ASSERT(strcmp(arachne_status_string(a), "unknown status") != 0);
        for (b = a + 1; b <= 0; b++) ASSERT(strcmp(arachne_status_string(a), arachne_status_string(b)) != 0);
    }
    ASSERT_STR(arachne_status_string(-9999), "unknown status");
    ASSERT_STR(arachne_status_string(17), "unknown status");
}

TEST(last_error_is_never_null_and_set_by_failures)
{
    arachne_clear_error();
    ASSERT(arachne_last_error() != NULL);
    ASSERT_STR(arachne_last_error(), "");
    ASSERT_EQ(ar_error(ARACHNE_E_PARSE, "spec: offset %d: bad", 4), ARACHNE_E_PARSE);
    ASSERT_STR(arachne_last_error(), "spec: offset 4: bad");
    ar_error_prefix("file.json");
    ASSERT_STR(arachne_last_error(), "file.json: spec: offset 4: bad");
}

TEST(buf_grows_and_copy_out_reports_size)
{
    ar_buf b;
    char small[4], big[64];
    size_t need = 0;
    int i;
    ar_buf_init(&b);
    for (i = 0; i < 1000; i++) ar_buf_printf(&b, "%d,", i);
    ASSERT_OK(ar_buf_status(&b));
    ASSERT(b.len > 2000);
    ASSERT(strncmp(b.data, "0,1,2,", 6) == 0);
    ar_buf_free(&b);
    ASSERT_STATUS(ar_copy_out(small, sizeof small, &need, "hello", 5), ARACHNE_E_BUFFER_TOO_SMALL);
    ASSERT_EQ(need, 6);
    ASSERT_OK(ar_copy_out(big, sizeof big, &need, "hello", 5));
    ASSERT_STR(big, "hello");
}

TEST(rng_is_deterministic)
{
    ar_rng a, b;
    int i;
    ar_rng_seed(&a, 42);
    ar_rng_seed(&b, 42);
    for (i = 0; i < 100; i++) ASSERT_EQ(ar_rng_next(&a), ar_rng_next(&b));
    ar_rng_seed(&b, 43);
    ASSERT(ar_rng_next(&a) != ar_rng_next(&b));
    for (i = 0; i < 1000; i++) {
        int k = ar_rng_int(&a, 7);
        ASSERT(k >= 0 && k < 7);
    }
}

TEST(atomic_write_and_read_back)
{
    const char *dir = th_tmpdir();
    char path[512], *data = NULL;
    size_t len = 0;
    ASSERT(dir != NULL);
    snprintf(path, sizeof path, "%s/f.txt", dir);
    ASSERT_OK(ar_write_file_atomic(path, "abc", 3));
    ASSERT_OK(ar_read_file(path, &data, &len));
    ASSERT_EQ(len, 3);
    ASSERT_STR(data, "abc");
    free(data);
    ASSERT_STATUS(ar_read_file("/nonexistent/dir/x", &data, &len), ARACHNE_E_IO);
    ASSERT_CONTAINS(arachne_last_error(), "/nonexistent/dir/x");
    ASSERT_STATUS(ar_write_file_atomic("/nonexistent/dir/x", "a", 1), ARACHNE_E_IO);
}

TEST(strcasecmp_ignores_ascii_case)
{
    ASSERT_EQ(ar_strcasecmp("A100-40", "a100-40"), 0);
    ASSERT(ar_strcasecmp("a100", "a1000") != 0);
}

SUITE(core,
      T(version_matches_header),
      T(status_strings_are_distinct),
      T(last_error_is_never_null_and_set_by_failures),
      T(buf_grows_and_copy_out_reports_size),
      T(rng_is_deterministic),
      T(atomic_write_and_read_back),
      T(strcasecmp_ignores_ascii_case));

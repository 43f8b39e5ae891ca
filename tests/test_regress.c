/* test_regress.c -- inputs that once crashed, leaked, hung or misbehaved
 * (found by the fuzz targets in tests/fuzz or by review; see
 * docs/reliability.md).  Each test names the finding and the fix.  Inputs
 * are C string literals here, or small files under tests/data/regress/. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"
#include "json.h"
#include "util.h"

/* ar_read_file read /dev/zero (or any endless or huge input) until memory
 * ran out.  Fix: reads stop at AR_FILE_MAX_BYTES with ARACHNE_E_IO. */
TEST(endless_file_is_refused_not_read_forever)
{
    arachne_model *m = (arachne_model *)1;
    arachne_cluster *c = (arachne_cluster *)1;
    struct stat st;
    if (stat("/dev/zero", &st) != 0) SKIP("no /dev/zero");
    ASSERT_STATUS(arachne_model_load(&m, "/dev/zero"), ARACHNE_E_IO);
    ASSERT(m == NULL);
    ASSERT_CONTAINS(arachne_last_error(), "/dev/zero");
    ASSERT_STATUS(arachne_cluster_load(&c, "/dev/zero"), ARACHNE_E_IO);
    ASSERT(c == NULL);
}

/* A directory given as a file: ARACHNE_E_IO with the reason. */
TEST(directory_as_input_file)
{
    arachne_model *m = (arachne_model *)1;
    const char *dir = th_tmpdir();
    ASSERT(dir != NULL);
    ASSERT_STATUS(arachne_model_load(&m, dir), ARACHNE_E_IO);
    ASSERT(m == NULL);
    ASSERT_CONTAINS(arachne_last_error(), "Is a directory");
}

SUITE(regress, T(endless_file_is_refused_not_read_forever), T(directory_as_input_file));

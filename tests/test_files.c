/* test_files.c -- every file the library writes goes through
 * ar_write_file_atomic: a failed save returns ARACHNE_E_IO naming the path,
 * leaves the old file byte-for-byte untouched, and leaves no temporary.
 *
 * Failure is provoked several ways, because the tests may run as root (where
 * a directory's mode 0500 does not stop writes):
 *   - a read-only directory (skipped, with a message, when writes still work);
 *   - the target path is an existing directory (rename fails);
 *   - RLIMIT_FSIZE smaller than the file (the write itself fails, EFBIG);
 *   - a parent that is a regular file, a missing parent, a path under /proc.
 * Each way is applied to every public writer (writers[] below: model,
 * cluster, plan, profile, policy, SVG, arachne_file_write; checkpoints go
 * through the same writer and are covered in test_train.c; add new save
 * functions here). */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "nn.h"
#include "policy_file.h"
#include "util.h"

#define OLD_TEXT "old contents: must survive a failed save\n"

typedef struct writer {
    const char *name;
    int (*save)(const void *obj, const char *path);
    void *obj;
    void (*destroy)(void *obj);
} writer;

static int save_model(const void *o, const char *p) { return arachne_model_save(o, p); }
static int save_cluster(const void *o, const char *p) { return arachne_cluster_save(o, p); }
static int save_policy(const void *o, const char *p) { return ar_policy_save(p, o, 1, "{\"test\":\"files\"}"); }
static void destroy_model(void *o) { arachne_model_destroy(o); }

/* A plan with what it borrows (the llama3-8b plan of the plan fuzz seeds). */
typedef struct plan_bundle {
    arachne_model *m;
    arachne_cluster *c;
    arachne_profile *p;
    arachne_cost_model *cm;
    arachne_plan *plan;
} plan_bundle;

static void destroy_plan_bundle(void *o)
{
    plan_bundle *b = o;
    if (!b) return;
    arachne_plan_destroy(b->plan);
    arachne_cost_model_destroy(b->cm);
    arachne_profile_destroy(b->p);
    arachne_cluster_destroy(b->c);
    arachne_model_destroy(b->m);
    free(b);
}

static int save_plan(const void *o, const char *p) { return arachne_plan_save(((const plan_bundle *)o)->plan, p); }
static int save_profile(const void *o, const char *p) { return arachne_profile_save(((const plan_bundle *)o)->p, p); }
static int save_svg(const void *o, const char *p) { return arachne_plan_save_svg(((const plan_bundle *)o)->plan, p); }
/* the public writer the arachne command uses for export --out */
static int save_bytes(const void *o, const char *p)
{
    (void)o;
    return arachne_file_write(p, "{\"bytes\": \"written by arachne_file_write, longer than sixteen\"}\n", 64);
}
static void destroy_nothing(void *o) { (void)o; }

/* NULL (and a test failure) when setup fails. */
static plan_bundle *make_plan_bundle(void)
{
    plan_bundle *b = calloc(1, sizeof *b);
    char *text = NULL;
    size_t len = 0;
    if (!b) return NULL;
    if (ar_read_file("tests/fuzz/corpus/plan/dense-valid", &text, &len) != ARACHNE_OK || len < 2 ||
        arachne_model_preset(&b->m, "llama3-8b") != ARACHNE_OK ||
        arachne_cluster_parse(&b->c, "a100-40:2x4,h100:1x8") != ARACHNE_OK ||
        arachne_profile_generate(&b->p, b->m, b->c, 4096) != ARACHNE_OK ||
        arachne_cost_model_create(&b->cm, b->m, b->c, b->p) != ARACHNE_OK ||
        arachne_cost_model_set(b->cm, ARACHNE_OPT_GLOBAL_BATCH, 64) != ARACHNE_OK ||
        arachne_cost_model_set(b->cm, ARACHNE_OPT_DIST_OPTIMIZER, 1) != ARACHNE_OK ||
        arachne_plan_from_json(&b->plan, b->cm, text + 1, len - 1) != ARACHNE_OK) {
        free(text);
        destroy_plan_bundle(b);
        return NULL;
    }
    free(text);
    return b;
}
static void destroy_policy(void *o) { ar_nn_destroy(o); }
static void destroy_cluster(void *o) { arachne_cluster_destroy(o); }

#define MAX_WRITERS 16
static writer writers[MAX_WRITERS];
static int nwriters;

static void free_writers(void)
{
    int i;
    for (i = 0; i < nwriters; i++) writers[i].destroy(writers[i].obj);
    nwriters = 0;
}

/* Builds one object per public writer; 0 with a test failure if setup fails. */
static int make_writers(void)
{
    arachne_model *m = NULL;
    arachne_cluster *c = NULL;
    free_writers();
    if (arachne_model_preset(&m, "deepseek-v3") != ARACHNE_OK) goto fail;
    writers[nwriters++] = (writer){ "model", save_model, m, destroy_model };
    if (arachne_cluster_parse(&c, "a100-40:32x4,a6000:8x4+16x1,h100:16x8") != ARACHNE_OK) goto fail;
    writers[nwriters++] = (writer){ "cluster", save_cluster, c, destroy_cluster };
    {
        plan_bundle *pb = make_plan_bundle(), *pb2;
        if (!pb) goto fail;
        writers[nwriters++] = (writer){ "plan", save_plan, pb, destroy_plan_bundle };
        if (!(pb2 = make_plan_bundle())) goto fail;
        writers[nwriters++] = (writer){ "profile", save_profile, pb2, destroy_plan_bundle };
        if (!(pb2 = make_plan_bundle())) goto fail;
        writers[nwriters++] = (writer){ "svg", save_svg, pb2, destroy_plan_bundle };
    }
    {
        ar_nn_config cfg;
        ar_nn *n = NULL;
        ar_nn_config_default(&cfg);
        if (ar_nn_create(&n, &cfg, 1) != ARACHNE_OK) goto fail;
        writers[nwriters++] = (writer){ "policy", save_policy, n, destroy_policy };
    }
    writers[nwriters++] = (writer){ "bytes", save_bytes, NULL, destroy_nothing };
    return 1;
fail:
    th_fail(__FILE__, __LINE__, "setup: %s", arachne_last_error());
    free_writers();
    return 0;
}

static int write_raw(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    fputs(text, f);
    return fclose(f) == 0;
}

/* 1 when path holds exactly `text`. */
static int has_text(const char *path, const char *text)
{
    char *data = NULL;
    size_t len = 0;
    int same;
    if (ar_read_file(path, &data, &len) != ARACHNE_OK) return 0;
    same = len == strlen(text) && memcmp(data, text, len) == 0;
    free(data);
    return same;
}

/* Names in dir other than "." and "..", sorted, joined by ' '. */
static const char *listing(const char *dir)
{
    static char out[1024];
    char names[32][64];
    int n = 0, i, j;
    DIR *d = opendir(dir);
    struct dirent *e;
    out[0] = '\0';
    if (!d) return "(unreadable)";
    while ((e = readdir(d)) != NULL && n < 32) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        size_t l = strlen(e->d_name);
        if (l >= sizeof names[0]) l = sizeof names[0] - 1;
        memcpy(names[n], e->d_name, l);
        names[n++][l] = '\0';
    }
    closedir(d);
    for (i = 1; i < n; i++)
        for (j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char t[64];
            memcpy(t, names[j], sizeof t);
            memcpy(names[j], names[j - 1], sizeof t);
            memcpy(names[j - 1], t, sizeof t);
        }
    for (i = 0; i < n; i++) {
        if (i) strncat(out, " ", sizeof out - strlen(out) - 1);
        strncat(out, names[i], sizeof out - strlen(out) - 1);
    }
    return out;
}

/* Saves with w into path, which must fail with ARACHNE_E_IO naming path. */
static int expect_io(const writer *w, const char *path, const char *how)
{
    int st;
    arachne_clear_error();
    st = w->save(w->obj, path);
    if (st != ARACHNE_E_IO) {
        th_fail(__FILE__, __LINE__, "%s save (%s): returned %d (%s), want ARACHNE_E_IO: %s", w->name, how, st,
                arachne_status_string(st), arachne_last_error());
        return 0;
    }
    if (!strstr(arachne_last_error(), path)) {
        th_fail(__FILE__, __LINE__, "%s save (%s): message does not name the path: %s", w->name, how,
                arachne_last_error());
        return 0;
    }
    return 1;
}

TEST(save_succeeds_and_replaces_old_file)
{
    int i;
    if (!make_writers()) return;
    for (i = 0; i < nwriters; i++) {
        const char *dir = th_tmpdir();
        char path[512];
        char *data = NULL;
        size_t len = 0;
        ASSERT(dir != NULL);
        snprintf(path, sizeof path, "%s/out.json", dir);
        ASSERT(write_raw(path, OLD_TEXT));
        ASSERT_OK(writers[i].save(writers[i].obj, path));
        ASSERT_OK(ar_read_file(path, &data, &len));
        ASSERT(len > 10 && (data[0] == '{' || data[0] == '<' || memcmp(data, "ARPOL", 5) == 0));
        free(data);
        ASSERT_STR(listing(dir), "out.json");
    }
    free_writers();
}

TEST(readonly_directory_keeps_old_file)
{
    int i, writable = 0;
    if (!make_writers()) return;
    for (i = 0; i < nwriters && !writable; i++) {
        const char *dir = th_tmpdir();
        char path[512], probe[512];
        int fd;
        ASSERT(dir != NULL);
        snprintf(path, sizeof path, "%s/out.json", dir);
        snprintf(probe, sizeof probe, "%s/probe", dir);
        ASSERT(write_raw(path, OLD_TEXT));
        ASSERT(chmod(dir, 0500) == 0);
        fd = open(probe, O_WRONLY | O_CREAT | O_EXCL, 0600);
        if (fd >= 0) {           /* root (or CAP_DAC_OVERRIDE): mode bits do not stop writes */
            close(fd);
            unlink(probe);
            writable = 1;
        } else {
            if (!expect_io(&writers[i], path, "read-only directory")) { chmod(dir, 0700); free_writers(); return; }
        }
        chmod(dir, 0700);
        ASSERT_MSG(has_text(path, OLD_TEXT), "%s: old file changed", writers[i].name);
        ASSERT_STR(listing(dir), "out.json");
    }
    free_writers();
    if (writable) SKIP("running with CAP_DAC_OVERRIDE (root): a 0500 directory is writable; "
                       "the other file tests cover the failure paths");
}

TEST(target_is_a_directory_rename_fails)
{
    int i;
    if (!make_writers()) return;
    for (i = 0; i < nwriters; i++) {
        const char *dir = th_tmpdir();
        char path[512], inner[600];
        ASSERT(dir != NULL);
        snprintf(path, sizeof path, "%s/out.json", dir);
        snprintf(inner, sizeof inner, "%s/keep", path);
        ASSERT(mkdir(path, 0700) == 0);
        ASSERT(write_raw(inner, OLD_TEXT));
        if (!expect_io(&writers[i], path, "target is a directory")) break;
        ASSERT_MSG(has_text(inner, OLD_TEXT), "%s: directory contents changed", writers[i].name);
        ASSERT_STR(listing(dir), "out.json");
        ASSERT_STR(listing(path), "keep");
    }
    free_writers();
}

TEST(write_error_keeps_old_file_and_removes_temporary)
{
    struct rlimit old, small;
    void (*old_handler)(int);
    int i, ok = 1;
    if (!make_writers()) return;
    if (getrlimit(RLIMIT_FSIZE, &old) != 0) { free_writers(); SKIP("getrlimit(RLIMIT_FSIZE) failed"); }
    for (i = 0; i < nwriters && ok; i++) {
        const char *dir = th_tmpdir();
        char path[512];
        int st;
        ASSERT(dir != NULL);
        snprintf(path, sizeof path, "%s/out.json", dir);
        ASSERT(write_raw(path, OLD_TEXT));
        /* Files may not grow past 16 bytes: the temporary's write fails
         * (EFBIG; SIGXFSZ ignored).  Nothing is printed meanwhile. */
        small = old;
        small.rlim_cur = 16;
        old_handler = signal(SIGXFSZ, SIG_IGN);
        if (setrlimit(RLIMIT_FSIZE, &small) != 0) {
            signal(SIGXFSZ, old_handler);
            free_writers();
            SKIP("setrlimit(RLIMIT_FSIZE) not permitted");
        }
        arachne_clear_error();
        st = writers[i].save(writers[i].obj, path);
        setrlimit(RLIMIT_FSIZE, &old);
        signal(SIGXFSZ, old_handler);
        ok = st == ARACHNE_E_IO && strstr(arachne_last_error(), path) != NULL;
        ASSERT_MSG(ok, "%s save over RLIMIT_FSIZE: %d (%s)", writers[i].name, st, arachne_last_error());
        ASSERT_MSG(has_text(path, OLD_TEXT), "%s: old file changed", writers[i].name);
        ASSERT_STR(listing(dir), "out.json");
    }
    free_writers();
}

TEST(unwritable_paths_fail_cleanly)
{
    const char *dir = th_tmpdir();
    char file[512], under_file[600], missing[600];
    struct stat st;
    int i;
    ASSERT(dir != NULL);
    if (!make_writers()) return;
    snprintf(file, sizeof file, "%s/plain", dir);
    snprintf(under_file, sizeof under_file, "%s/out.json", file);
    snprintf(missing, sizeof missing, "%s/no/such/dir/out.json", dir);
    ASSERT(write_raw(file, OLD_TEXT));
    for (i = 0; i < nwriters; i++) {
        if (!expect_io(&writers[i], under_file, "parent is a regular file")) break;
        if (!expect_io(&writers[i], missing, "missing parent")) break;
        if (stat("/proc/self", &st) == 0 &&
            !expect_io(&writers[i], "/proc/self/arachne-test-out.json", "under /proc")) break;
        ASSERT(has_text(file, OLD_TEXT));
        ASSERT_STR(listing(dir), "plain");
    }
    free_writers();
}

/* A FIFO that no process writes made every loader wait in open() for
 * ever, and a save replaced a device node or FIFO with a plain file (as
 * root, /dev/full and /dev/null too).  Reads now open without waiting (a
 * FIFO without a writer reads as empty: a parse error), and the writer
 * refuses such a target.  alarm() turns a regression into a failed run
 * rather than a hang. */
TEST(fifos_do_not_block_readers_and_are_not_replaced)
{
    const char *dir = th_tmpdir();
    char path[512];
    struct stat sb;
    arachne_cluster *c = NULL;
    arachne_model *m = NULL;
    arachne_policy *p = NULL;
    ASSERT(dir != NULL);
    snprintf(path, sizeof path, "%s/pipe", dir);
    if (mkfifo(path, 0600) != 0) SKIP("mkfifo failed");
    alarm(60);
    ASSERT_STATUS(arachne_cluster_load(&c, path), ARACHNE_E_PARSE);
    ASSERT_CONTAINS(arachne_last_error(), "pipe");
    ASSERT(arachne_cluster_open(&c, path) != ARACHNE_OK && c == NULL);
    ASSERT(arachne_model_open(&m, path) != ARACHNE_OK && m == NULL);
    ASSERT(arachne_policy_load(&p, path) != ARACHNE_OK && p == NULL);
    ASSERT_STATUS(arachne_file_write(path, "{}", 2), ARACHNE_E_IO);
    ASSERT_CONTAINS(arachne_last_error(), "FIFO");
    alarm(0);
    ASSERT(lstat(path, &sb) == 0 && S_ISFIFO(sb.st_mode));
    ASSERT_STR(listing(dir), "pipe");
}

/* A writer never saves what its loader refuses: a policy of hidden 4096
 * and 3 layers (286 MB, inside `policy init`'s documented ranges) was
 * written and then refused by every reader (the 256 MiB limit).  The
 * policy and checkpoint savers ask this check first; the size at the
 * limit still reads back. */
TEST(savers_refuse_what_the_reader_would)
{
    ASSERT_OK(ar_check_saved_size("policy", "p.arpol", AR_FILE_MAX_BYTES));
    ASSERT_STATUS(ar_check_saved_size("policy", "p.arpol", AR_FILE_MAX_BYTES + 1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_CONTAINS(arachne_last_error(), "p.arpol");
    ASSERT_CONTAINS(arachne_last_error(), "nothing written");
}

SUITE(files, T(save_succeeds_and_replaces_old_file), T(readonly_directory_keeps_old_file),
      T(target_is_a_directory_rename_fails), T(write_error_keeps_old_file_and_removes_temporary),
      T(unwritable_paths_fail_cleanly), T(fifos_do_not_block_readers_and_are_not_replaced),
      T(savers_refuse_what_the_reader_would));

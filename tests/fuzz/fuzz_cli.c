/* fuzz_cli.c -- the `arachne` command's argument parsing and dispatch.
 * The input is split on NUL bytes into argv[1..] (argv[0] = "arachne") and
 * handed to cli_main() (examples/cli/main.c built with
 * -DARACHNE_CLI_NO_MAIN).  Properties: never crashes or leaks, never calls
 * exit(), and the exit status is 0, 1 or 2.
 *
 * Safety: the target runs in a scratch directory (build/fuzz/cli-scratch,
 * or $ARACHNE_FUZZ_SCRATCH) holding small fixture files (fixtures[] below);
 * arguments that are absolute paths or contain ".." are skipped, so nothing
 * outside the scratch directory is read or written.  After each input, files
 * the command created are removed and replaced fixtures are restored.
 * stdout goes to /dev/null; run with -close_fd_mask=2 to silence stderr. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_common.h"

int cli_main(int argc, char **argv);

#define MAX_ARGS 48

typedef struct fixture { const char *name; const char *text; ino_t ino; } fixture;

/* plan.json: a valid llama3-8b plan for "a100-40:2x4,h100:1x8", read at
 * start from the plan target's seed (tests/fuzz/corpus/plan/dense-valid,
 * first byte skipped); empty when that file is missing. */
static char *plan_text;

static fixture fixtures[] = {
    { "model.json",
      "{\"format\":\"arachne-model\",\"version\":1,\"name\":\"fz\",\"blocks\":4,\"hidden\":256,"
      "\"heads\":4,\"kv_heads\":2,\"head_dim\":64,\"ffn\":512,\"vocab\":1000}\n", 0 },
    { "moe.json",
      "{\"format\":\"arachne-model\",\"version\":1,\"name\":\"fzmoe\",\"blocks\":4,\"hidden\":256,"
      "\"heads\":4,\"kv_heads\":2,\"head_dim\":64,\"ffn\":512,\"vocab\":1000,\"experts\":8,"
      "\"top_k\":2,\"expert_ffn\":128,\"dense_prefix\":1}\n", 0 },
    { "cluster.json",
      "{\"format\":\"arachne-cluster\",\"version\":1,\"nodes\":[{\"type\":\"a100-40\",\"count\":2,"
      "\"gpus\":4},{\"type\":\"h100\",\"count\":1,\"gpus\":8}]}\n", 0 },
    { "plan.json", "", 0 },
    { "bad.json", "{\"format\":\"arachne-model\",\"version\":1,", 0 },
    { "empty.json", "", 0 },
};

static void write_fixture(fixture *f)
{
    struct stat st;
    FILE *fp = fopen(f->name, "wb");
    if (!fp) { perror(f->name); abort(); }
    fputs(f->text, fp);
    fclose(fp);
    f->ino = stat(f->name, &st) == 0 ? st.st_ino : 0;
}

static int is_fixture(const char *name)
{
    size_t i;
    for (i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++)
        if (!strcmp(name, fixtures[i].name)) return 1;
    return 0;
}

/* Removes what the last command created; restores replaced fixtures. */
static void tidy_scratch(void)
{
    DIR *d = opendir(".");
    struct dirent *e;
    size_t i;
    if (d) {
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || is_fixture(e->d_name)) continue;
            if (unlink(e->d_name) != 0) rmdir(e->d_name);
        }
        closedir(d);
    }
    for (i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++) {
        struct stat st;
        if (stat(fixtures[i].name, &st) != 0 || st.st_ino != fixtures[i].ino ||
            (size_t)st.st_size != strlen(fixtures[i].text))
            write_fixture(&fixtures[i]);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *dir = getenv("ARACHNE_FUZZ_SCRATCH");
    size_t i;
    (void)argc;
    (void)argv;
    FILE *pf = fopen("tests/fuzz/corpus/plan/dense-valid", "rb");
    if (!dir) dir = "build/fuzz/cli-scratch";
    if (pf) {
        static char buf[65536];
        size_t n = fread(buf, 1, sizeof buf - 1, pf);
        fclose(pf);
        buf[n] = '\0';
        plan_text = n > 1 ? buf + 1 : NULL;
    }
    for (i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++)
        if (!strcmp(fixtures[i].name, "plan.json") && plan_text) fixtures[i].text = plan_text;
    mkdir(dir, 0700);
    if (chdir(dir) != 0) { perror(dir); abort(); }
    for (i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++) write_fixture(&fixtures[i]);
    if (!freopen("/dev/null", "w", stdout)) abort();
    /* 'export -' reads the plan from stdin: give it an empty one (never a
     * terminal to wait on) and keep its temporary copy in the scratch dir. */
    if (!freopen("/dev/null", "r", stdin)) abort();
    if (setenv("TMPDIR", ".", 1) != 0) abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf, *argv[MAX_ARGS + 2];
    int argc = 1, rc;
    size_t i, start = 0;
    if (size > 4096) return 0;
    buf = fuzz_cstr(data, size);
    if (!buf) return 0;
    argv[0] = (char *)"arachne";
    for (i = 0; i <= size; i++) {
        if (i < size && buf[i] != '\0') continue;
        if (argc > MAX_ARGS) { free(buf); return 0; }
        argv[argc++] = buf + start;
        start = i + 1;
    }
    if (size == 0) argc = 1;
    argv[argc] = NULL;
    for (i = 1; i < (size_t)argc; i++) {
        const char *a = argv[i], *eq = strchr(a, '=');
        if (a[0] == '/' || strstr(a, "..") || (eq && eq[1] == '/')) { free(buf); return 0; }
    }
    rc = cli_main(argc, argv);
    fflush(stdout);
    FUZZ_CHECK(rc == 0 || rc == 1 || rc == 2);
    free(buf);
    tidy_scratch();
    return 0;
}

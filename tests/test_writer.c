/* test_writer.c -- the one atomic writer (ar_write_file_atomic, public as
 * arachne_file_write) against a hostile or careless environment
 * (docs/reliability.md, "Files"): planted symlinks and files under the
 * temporary names, a kept file mode, ulimit -f with SIGXFSZ at its default
 * action, and the clean-up of temporaries left by killed saves. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "util.h"

#define VICTIM_TEXT "victim: must never be written through a planted link\n"
#define NEW_TEXT "new contents\n"

static int put_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    fputs(text, f);
    return fclose(f) == 0;
}

static int same_text(const char *path, const char *text)
{
    char *data = NULL;
    size_t len = 0;
    int same;
    if (ar_read_file(path, &data, &len) != ARACHNE_OK) return 0;
    same = len == strlen(text) && memcmp(data, text, len) == 0;
    free(data);
    return same;
}

/* Number of names in dir starting with prefix. */
static int count_prefix(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    if (!d) return -1;
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) n++;
    closedir(d);
    return n;
}

/* A pid that belonged to a process which has exited (and been reaped). */
static long dead_pid(void)
{
    pid_t p = fork();
    if (p < 0) return -1;
    if (p == 0) _exit(0);
    if (waitpid(p, NULL, 0) != p) return -1;
    return (long)p;
}

/* Issue 27 item 1/8: the writer once named its temporaries
 * "<path>.tmp.<pid>.<counter>" and gave up after 100 names in use, so links
 * planted under the names it would pick blocked every save.  The names are
 * now unpredictable, opened O_EXCL|O_NOFOLLOW: the save succeeds and the
 * link targets are untouched. */
TEST(planted_symlinks_neither_redirect_nor_block_a_save)
{
    const char *dir = th_tmpdir();
    char path[512], victim[512], link[600];
    int i;
    ASSERT(dir != NULL);
    snprintf(path, sizeof path, "%s/out.json", dir);
    snprintf(victim, sizeof victim, "%s/victim", dir);
    ASSERT(put_text(victim, VICTIM_TEXT));
    for (i = 0; i < 300; i++) {
        snprintf(link, sizeof link, "%s.tmp.%ld.%d", path, (long)getpid(), i);
        ASSERT(symlink(victim, link) == 0);
    }
    snprintf(link, sizeof link, "%s.tmp.%ld", path, (long)getpid()); /* the old CLI's name */
    ASSERT(symlink(victim, link) == 0);
    ASSERT_OK(arachne_file_write(path, NEW_TEXT, strlen(NEW_TEXT)));
    ASSERT(same_text(path, NEW_TEXT));
    ASSERT(same_text(victim, VICTIM_TEXT));
    {
        struct stat st;
        ASSERT(lstat(path, &st) == 0 && S_ISREG(st.st_mode));
    }
    /* our own pid's names may be other threads' saves: kept */
    ASSERT_EQ(count_prefix(dir, "out.json.tmp."), 301);
}

/* Issue 27 item 8: a saved-over file kept its contents' name but lost its
 * mode (0600 became 0644 through the temporary's default mode). */
TEST(saving_over_a_file_keeps_its_mode)
{
    const char *dir = th_tmpdir();
    char path[512];
    struct stat st;
    mode_t modes[3] = { 0600, 0640, 0755 };
    int i;
    ASSERT(dir != NULL);
    snprintf(path, sizeof path, "%s/secret.json", dir);
    for (i = 0; i < 3; i++) {
        ASSERT(put_text(path, "old\n"));
        ASSERT(chmod(path, modes[i]) == 0);
        ASSERT_OK(arachne_file_write(path, NEW_TEXT, strlen(NEW_TEXT)));
        ASSERT(stat(path, &st) == 0);
        ASSERT_MSG((st.st_mode & 07777) == modes[i], "mode %o after saving over a %o file", (unsigned)(st.st_mode & 07777),
                   (unsigned)modes[i]);
        ASSERT(same_text(path, NEW_TEXT));
    }
}

/* Issue 27 item 8: with `ulimit -f` below the file size and SIGXFSZ at its
 * default action (kill), a save killed the process and left a partial
 * temporary.  Now: ARACHNE_E_IO naming the limit, nothing written.  Run in
 * a child so that a regression kills the child, not the runner. */
TEST(file_size_limit_is_an_io_error_not_a_signal)
{
    const char *dir = th_tmpdir();
    char path[512];
    pid_t p;
    int status = 0;
    ASSERT(dir != NULL);
    snprintf(path, sizeof path, "%s/big.json", dir);
    ASSERT(put_text(path, "old\n"));
    fflush(NULL);
    p = fork();
    ASSERT(p >= 0);
    if (p == 0) {
        struct rlimit lim;
        static char big[8192];
        int st;
        memset(big, 'x', sizeof big);
        signal(SIGXFSZ, SIG_DFL);
        if (getrlimit(RLIMIT_FSIZE, &lim) != 0) _exit(3);
        lim.rlim_cur = 1024;
        if (setrlimit(RLIMIT_FSIZE, &lim) != 0) _exit(4);
        st = arachne_file_write(path, big, sizeof big);
        if (st != ARACHNE_E_IO) _exit(5);
        if (!strstr(arachne_last_error(), "ulimit") || !strstr(arachne_last_error(), path)) _exit(6);
        _exit(0);
    }
    ASSERT(waitpid(p, &status, 0) == p);
    ASSERT_MSG(WIFEXITED(status), "the save was killed by signal %d", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    ASSERT_EQ(WEXITSTATUS(status), 0);
    ASSERT(same_text(path, "old\n"));
    ASSERT_EQ(count_prefix(dir, "big.json.tmp."), 0);
}

/* Issue 27 item 8: saves killed between creating the temporary and the
 * rename leave "<path>.tmp.<pid>.<n>"; nothing removed them (325 MB of
 * policy temporaries after 135 kills).  The next save of the same path
 * removes those of dead processes; others' are kept. */
TEST(next_save_removes_temporaries_of_dead_processes)
{
    const char *dir = th_tmpdir();
    char path[512], name[700];
    long dead = dead_pid();
    ASSERT(dir != NULL);
    ASSERT(dead > 0);
    snprintf(path, sizeof path, "%s/policy.arpol", dir);
    snprintf(name, sizeof name, "%s.tmp.%ld.3", path, dead);                   /* old style */
    ASSERT(put_text(name, "half"));
    snprintf(name, sizeof name, "%s.tmp.%ld.00c0ffee00c0ffee", path, dead);    /* new style */
    ASSERT(put_text(name, "half"));
    snprintf(name, sizeof name, "%s.tmp.%ld.7", path, (long)getppid());        /* a live process */
    ASSERT(put_text(name, "in progress"));
    snprintf(name, sizeof name, "%s/other.arpol.tmp.%ld.1", dir, dead);        /* another file's */
    ASSERT(put_text(name, "half"));
    snprintf(name, sizeof name, "%s.tmp.%ld.notes", path, dead);               /* not our pattern */
    ASSERT(put_text(name, "keep"));
    ASSERT_OK(arachne_file_write(path, NEW_TEXT, strlen(NEW_TEXT)));
    ASSERT(same_text(path, NEW_TEXT));
    ASSERT_EQ(count_prefix(dir, "policy.arpol.tmp."), 2); /* the live one and ".notes" */
    snprintf(name, sizeof name, "%s.tmp.%ld.7", path, (long)getppid());
    ASSERT(same_text(name, "in progress"));
    ASSERT_EQ(count_prefix(dir, "other.arpol.tmp."), 1);
}

/* A path naming a directory, NULL arguments, and a failed write leave no
 * temporary and give a status with the path in the message. */
TEST(bad_paths_and_arguments_fail_cleanly)
{
    const char *dir = th_tmpdir();
    char path[512];
    ASSERT(dir != NULL);
    ASSERT_STATUS(arachne_file_write(NULL, "x", 1), ARACHNE_E_INVALID_ARGUMENT);
    snprintf(path, sizeof path, "%s/x", dir);
    ASSERT_STATUS(arachne_file_write(path, NULL, 1), ARACHNE_E_INVALID_ARGUMENT);
    ASSERT_OK(arachne_file_write(path, NULL, 0)); /* empty file */
    ASSERT(same_text(path, ""));
    snprintf(path, sizeof path, "%s/", dir);
    ASSERT_STATUS(arachne_file_write(path, "x", 1), ARACHNE_E_IO);
    ASSERT_CONTAINS(arachne_last_error(), dir);
    ASSERT_STATUS(arachne_file_write(dir, "x", 1), ARACHNE_E_IO);
    ASSERT_CONTAINS(arachne_last_error(), dir);
    ASSERT_EQ(count_prefix(dir, "."), 2); /* "." and ".." only: no hidden leftovers */
}

SUITE(writer, T(planted_symlinks_neither_redirect_nor_block_a_save), T(saving_over_a_file_keeps_its_mode),
      T(file_size_limit_is_an_io_error_not_a_signal), T(next_save_removes_temporaries_of_dead_processes),
      T(bad_paths_and_arguments_fail_cleanly));

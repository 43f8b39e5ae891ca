/* main.c -- the `arachne` command: subcommand dispatch and help.
 * Each subcommand lives in its own cmd_<name>.c and is listed in
 * cli_commands.inc. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "cli.h"

#define CLI_COMMAND(name, summary, usage, tail) int cmd_##name(int argc, char **argv);
#include "cli_commands.inc"
#undef CLI_COMMAND
#define CLI_COMMAND(name, summary, usage, tail) { #name, summary, usage, tail, cmd_##name },
static const cli_cmd commands[] = {
#include "cli_commands.inc"
};
#undef CLI_COMMAND
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void print_help(FILE *f)
{
    size_t i;
    fprintf(f, "usage: arachne <command> [options]\n\n"
               "Plans distributed LLM training on heterogeneous GPU clusters.\n\n"
               "commands:\n");
    for (i = 0; i < NCOMMANDS; i++) fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nRun 'arachne <command> --help' for the options of one command.\n"
               "Exit status: 0 success, 1 failure, 2 usage error.\n");
}

static void print_usage(const cli_cmd *c)
{
    fputs(c->usage, stdout);
    fputs(c->usage_tail, stdout);
}

/* The dispatcher, callable without a process (the CLI fuzz target,
 * tests/fuzz/fuzz_cli.c, builds this file with -DARACHNE_CLI_NO_MAIN). */
int cli_main(int argc, char **argv);
int cli_main(int argc, char **argv)
{
    size_t i;
    int k;
    if (argc < 2) {
        print_help(stderr);
        return CLI_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        /* 'arachne help plan' is 'arachne plan --help'. */
        if (argc > 2 && !strcmp(argv[1], "help")) {
            for (i = 0; i < NCOMMANDS; i++) {
                if (!strcmp(argv[2], commands[i].name)) {
                    print_usage(&commands[i]);
                    return CLI_OK;
                }
            }
            return cli_fail("help: unknown command '%s' (see 'arachne --help')", argv[2]) + 1;
        }
        print_help(stdout);
        return CLI_OK;
    }
    if (!strcmp(argv[1], "--version")) argv[1] = (char *)"version";
    for (i = 0; i < NCOMMANDS; i++) {
        if (strcmp(argv[1], commands[i].name) != 0) continue;
        for (k = 2; k < argc; k++) {
            if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
                print_usage(&commands[i]);
                return CLI_OK;
            }
        }
        return commands[i].run(argc - 1, argv + 1);
    }
    return cli_fail("unknown command '%s' (see 'arachne --help')", argv[1]) + 1;
}

#ifndef ARACHNE_CLI_NO_MAIN
/* A file-size limit (ulimit -f) must give an I/O error, not kill the
 * command with SIGXFSZ half-way through a write: ignored, writes past the
 * limit fail with EFBIG (the library also refuses them before writing). */
int main(int argc, char **argv)
{
    int rc;
    signal(SIGXFSZ, SIG_IGN);
    rc = cli_main(argc, argv);
    /* what went to standard output must have arrived: a full disk, a
     * file-size limit or a closed pipe (`> /dev/full`, `ulimit -f`) would
     * otherwise leave cut-off JSON behind an exit status of 0 */
    if (fflush(stdout) != 0 || ferror(stdout)) {
        int e = errno;
        fprintf(stderr, "arachne: writing standard output: %s\n", e ? strerror(e) : "write error");
        return rc == CLI_OK ? 1 : rc;
    }
    return rc;
}
#endif

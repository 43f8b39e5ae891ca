/* cli.h -- shared pieces of the `arachne` command: the subcommand table,
 * error reporting with the documented exit codes, and a small long-option
 * parser.  Exit codes: 0 success, 1 failure, 2 usage error. */
#ifndef ARACHNE_CLI_H
#define ARACHNE_CLI_H

#include <stdio.h>
#include "arachne.h"

#define CLI_OK 0
#define CLI_FAIL 1
#define CLI_USAGE 2

typedef struct cli_cmd {
    const char *name;
    const char *summary;            /* one line for `arachne --help` */
    const char *usage;              /* full text for `arachne CMD --help` */
    int (*run)(int argc, char **argv); /* argv[0] is the subcommand name */
} cli_cmd;

/* Prints "arachne: <msg>" on stderr; returns CLI_FAIL. */
int cli_fail(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* Prints "arachne: <cmd>: <msg>" (and a hint to use --help); returns CLI_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Prints "arachne: <what>: <arachne_last_error()>" ; returns CLI_FAIL. */
int cli_lib_fail(int status, const char *what);

/* Long-option parser.  Options are "--name VALUE", "--name=VALUE" or flags.
 * Non-option arguments are collected into positional[] (at most npos_max).
 * Returns 0, or CLI_USAGE after printing the problem. */
typedef struct cli_opt {
    const char *name;   /* without the leading "--" */
    int takes_value;    /* 1: string value; 0: flag */
    const char **value; /* where the value goes (takes_value) */
    int *flag;          /* set to 1 when present (flags) */
} cli_opt;
int cli_parse(const char *cmd, int argc, char **argv, const cli_opt *opts, int nopts,
              const char **positional, int npos_max, int *npos);

/* Number parsing with range checks; return 0 or CLI_USAGE after printing. */
int cli_int(const char *cmd, const char *opt, const char *s, long lo, long hi, long *out);
int cli_double(const char *cmd, const char *opt, const char *s, double lo, double hi, double *out);

/* Writes a JSON string literal (quoted, escaped) to f. */
void cli_json_string(FILE *f, const char *s);

/* Prints the plan table (templates, stages: GPU type x TP, layers,
 * replicas, stage time, sync time, memory per GPU in GB; then iteration
 * time, throughput, MFU) to f, after `title` when not NULL.  Used by plan,
 * search and price (cli_plantable.c).  Returns CLI_OK, or CLI_FAIL for NULL. */
int cli_print_plan(FILE *f, const arachne_plan *p, const char *title);

#endif

/* cli_util.c -- error reporting and option parsing for the arachne command. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

int cli_fail(const char *fmt, ...)
{
    va_list ap;
    fputs("arachne: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return CLI_FAIL;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "arachne: %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see 'arachne %s --help')\n", cmd);
    return CLI_USAGE;
}

int cli_lib_fail(int status, const char *what)
{
    const char *msg = arachne_last_error();
    size_t n = strlen(what);
    /* a file's messages start with its path already ("PATH:LINE:COL: ") */
    if (n > 0 && strncmp(msg, what, n) == 0 && msg[n] == ':') return cli_fail("%s", msg);
    return cli_fail("%s: %s", what, msg[0] ? msg : arachne_status_string(status));
}

int cli_parse(const char *cmd, int argc, char **argv, const cli_opt *opts, int nopts,
              const char **positional, int npos_max, int *npos)
{
    int i, k;
    *npos = 0;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] == '-' && a[1] == '-' && a[2] != '\0') {
            const char *name = a + 2, *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            for (k = 0; k < nopts; k++)
                if (strlen(opts[k].name) == len && strncmp(opts[k].name, name, len) == 0) break;
            if (k == nopts) return cli_usage_error(cmd, "unknown option '%s'", a);
            if (opts[k].takes_value) {
                if (eq) *opts[k].value = eq + 1;
                else if (i + 1 < argc) *opts[k].value = argv[++i];
                else return cli_usage_error(cmd, "option '--%s' needs a value", opts[k].name);
            } else {
                if (eq) return cli_usage_error(cmd, "option '--%s' takes no value", opts[k].name);
                *opts[k].flag = 1;
            }
        } else if (a[0] == '-' && a[1] != '\0' && !(a[1] >= '0' && a[1] <= '9')) {
            return cli_usage_error(cmd, "unknown option '%s'", a);
        } else {
            if (*npos >= npos_max) return cli_usage_error(cmd, "unexpected argument '%s'", a);
            positional[(*npos)++] = a;
        }
    }
    return 0;
}

int cli_int(const char *cmd, const char *opt, const char *s, long lo, long hi, long *out)
{
    char *end;
    long v;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < lo || v > hi)
        return cli_usage_error(cmd, "--%s: '%s' is not an integer in [%ld, %ld]", opt, s, lo, hi);
    *out = v;
    return 0;
}

int cli_double(const char *cmd, const char *opt, const char *s, double lo, double hi, double *out)
{
    char *end;
    double v;
    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || *end != '\0' || !(v >= lo && v <= hi))
        return cli_usage_error(cmd, "--%s: '%s' is not a number in [%g, %g]", opt, s, lo, hi);
    *out = v;
    return 0;
}

void cli_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c == '\n') fputs("\\n", f);
        else if (c == '\t') fputs("\\t", f);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

void cli_note_spec_aliases(const char *spec)
{
    const char *item = spec, *colon;
    size_t n;
    if (!spec || !strchr(spec, ':')) return; /* a file name, not a spec */
    n = strlen(spec);
    if (n >= 5 && strcmp(spec + n - 5, ".json") == 0) return;
    while (item && *item) {
        while (*item == ' ' || *item == ',') item++;
        colon = strchr(item, ':');
        if (!colon) return;
        if (colon - item == 4 && (item[0] == 'a' || item[0] == 'A') && strncmp(item + 1, "100", 3) == 0) {
            fprintf(stderr, "arachne: note: 'a100' is the 40 GB A100 (A100-40); write a100-80 for the 80 GB part\n");
            return;
        }
        item = strchr(colon, ',');
    }
}

int cli_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (strcmp(a, b) == 0) return 1;
    /* two names of one existing file ("x.csv" and "./x.csv", a link) */
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* cmd_export.c -- `arachne export --format ranks|megatron|torchtitan|
 * flashflex|sailor PLAN.json [--model M] [--cluster SPEC] [setup options]
 * [--out FILE]`: loads (validates, reprices) the plan like `price` and
 * writes it in a launcher's format (docs/exports.md). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* 'export -' reads the plan from standard input (arachne plan --json |
 * arachne export --format X -).  The plan is read twice (header defaults,
 * then the strict load), so stdin is first copied to DIR/stdin in a fresh
 * temporary directory; messages then name that file.  CLI_OK or CLI_FAIL. */
static int stdin_to_file(char *dir, size_t dcap, char *path, size_t pcap)
{
    const char *t = getenv("TMPDIR");
    char *text = NULL;
    size_t len = 0, cap = 0, got;
    int st;
    snprintf(dir, dcap, "%s/arachne-export-XXXXXX", t && t[0] ? t : "/tmp");
    if (!mkdtemp(dir)) return cli_fail("export: cannot make a temporary directory for stdin: %s", strerror(errno));
    snprintf(path, pcap, "%s/stdin", dir);
    for (;;) {
        if (len == cap) {
            char *grown = cap > ((size_t)256 << 20) ? NULL : realloc(text, cap ? 2 * cap : 65536);
            if (!grown) {
                free(text);
                rmdir(dir);
                return cli_fail("export: the plan on standard input is larger than 256 MiB or memory ran out");
            }
            text = grown;
            cap = cap ? 2 * cap : 65536;
        }
        got = fread(text + len, 1, cap - len, stdin);
        len += got;
        if (got == 0) break;
    }
    if (ferror(stdin)) {
        free(text);
        rmdir(dir);
        return cli_fail("export: cannot read the plan from standard input");
    }
    st = arachne_file_write(path, text, len);
    free(text);
    if (st != ARACHNE_OK) {
        rmdir(dir);
        return cli_lib_fail(st, "export");
    }
    return CLI_OK;
}

/* index = arachne_export_format */
static const char *const formats[] = { "ranks", "megatron", "torchtitan", "flashflex", "sailor", "torchtitan-cli" };

int cmd_export(int argc, char **argv)
{
    cli_costenv_opts o;
    cli_costenv env;
    cli_opt opts[CLI_COSTENV_NOPTS + 2];
    const char *pos[1], *format = NULL, *out = NULL;
    arachne_plan *plan = NULL;
    char *buf = NULL, stdin_dir[4096], stdin_path[4200] = "";
    size_t need = 0;
    int npos = 0, n, rc, st, fmt = -1, i;
    n = cli_costenv_options(&o, opts);
    opts[n].name = "format";
    opts[n].takes_value = 1;
    opts[n].value = &format;
    opts[n].flag = NULL;
    n++;
    opts[n].name = "out";
    opts[n].takes_value = 1;
    opts[n].value = &out;
    opts[n].flag = NULL;
    n++;
    if ((rc = cli_parse("export", argc, argv, opts, n, pos, 1, &npos))) return rc;
    if (!format) return cli_usage_error("export", "--format is required (ranks, megatron, torchtitan, torchtitan-cli, flashflex, sailor)");
    for (i = 0; i < (int)(sizeof formats / sizeof formats[0]); i++)
        if (strcmp(format, formats[i]) == 0) fmt = i;
    if (fmt < 0)
        return cli_usage_error("export", "--format: '%s' is not ranks, megatron, torchtitan, torchtitan-cli, flashflex or sailor",
                               format);
    if (npos != 1) return cli_usage_error("export", "expected one plan file");
    if (strcmp(pos[0], "-") == 0) {
        if ((rc = stdin_to_file(stdin_dir, sizeof stdin_dir, stdin_path, sizeof stdin_path)) != CLI_OK) return rc;
        pos[0] = stdin_path;
    }
    rc = cli_plan_open("export", pos[0], &o, &env, &plan, NULL);
    if (stdin_path[0]) {
        remove(stdin_path);
        rmdir(stdin_dir);
    }
    if (rc != CLI_OK) return rc;
    if ((rc = cli_batch_exact("export", plan, env.cm, o.allow_batch_rounding, 1)) != CLI_OK) {
        arachne_plan_destroy(plan);
        cli_costenv_free(&env);
        return rc;
    }
    st = arachne_plan_export(plan, fmt, NULL, 0, &need);
    if (st == ARACHNE_E_BUFFER_TOO_SMALL && (buf = malloc(need)) != NULL)
        st = arachne_plan_export(plan, fmt, buf, need, NULL);
    else if (st == ARACHNE_E_BUFFER_TOO_SMALL)
        st = ARACHNE_E_NO_MEMORY;
    if (st != ARACHNE_OK) {
        rc = cli_lib_fail(st, "export");
    } else if (out) {
        /* the library's writer: temporary created O_EXCL|O_NOFOLLOW (a
         * planted symlink is never followed), then renamed into place */
        st = arachne_file_write(out, buf, need - 1);
        rc = st ? cli_lib_fail(st, "export") : CLI_OK;
    } else {
        fputs(buf, stdout);
    }
    free(buf);
    arachne_plan_destroy(plan);
    cli_costenv_free(&env);
    return rc;
}

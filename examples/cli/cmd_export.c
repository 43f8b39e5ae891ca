/* cmd_export.c -- `arachne export --format ranks|megatron|torchtitan|
 * flashflex|sailor PLAN.json [--model M] [--cluster SPEC] [setup options]
 * [--out FILE]`: loads (validates, reprices) the plan like `price` and
 * writes it in a launcher's format (docs/exports.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *const formats[] = { "ranks", "megatron", "torchtitan", "flashflex", "sailor" };

int cmd_export(int argc, char **argv)
{
    cli_costenv_opts o;
    cli_costenv env;
    cli_opt opts[CLI_COSTENV_NOPTS + 2];
    const char *pos[1], *format = NULL, *out = NULL;
    arachne_plan *plan = NULL;
    char *buf = NULL;
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
    if (!format) return cli_usage_error("export", "--format is required (ranks, megatron, torchtitan, flashflex, sailor)");
    for (i = 0; i < (int)(sizeof formats / sizeof formats[0]); i++)
        if (strcmp(format, formats[i]) == 0) fmt = i;
    if (fmt < 0)
        return cli_usage_error("export", "--format: '%s' is not ranks, megatron, torchtitan, flashflex or sailor",
                               format);
    if (npos != 1) return cli_usage_error("export", "expected one plan file");
    if ((rc = cli_plan_open("export", pos[0], &o, &env, &plan)) != CLI_OK) return rc;
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

/* cmd_import.c -- `arachne import --format sailor PLAN.json --model M
 * --cluster SPEC|FILE [--profile FILE] [setup options] [--out FILE]
 * [--json]`: turns another planner's plan into ours (placement included),
 * prices it with our cost model and prints the plan table, or writes the
 * plan file that price, export and replan take. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cmd_import(int argc, char **argv)
{
    cli_costenv_opts o;
    cli_costenv env;
    cli_opt opts[CLI_COSTENV_NOPTS + 3];
    const char *pos[1], *format = NULL, *out = NULL;
    arachne_plan *plan = NULL;
    char *text = NULL;
    size_t len = 0;
    FILE *f;
    int npos = 0, n, rc, st, json = 0;
    n = cli_costenv_options(&o, opts);
    opts[n++] = (cli_opt){ "format", 1, &format, NULL };
    opts[n++] = (cli_opt){ "out", 1, &out, NULL };
    opts[n++] = (cli_opt){ "json", 0, NULL, &json };
    if ((rc = cli_parse("import", argc, argv, opts, n, pos, 1, &npos))) return rc;
    if (!format) return cli_usage_error("import", "--format is required (sailor)");
    if (strcmp(format, "sailor") != 0) return cli_usage_error("import", "--format: '%s' is not sailor", format);
    if (npos != 1) return cli_usage_error("import", "expected one plan file");
    if ((rc = cli_check_regular("import", "plan", pos[0]))) return rc;
    f = fopen(pos[0], "rb");
    if (!f) return cli_fail("import: %s: cannot open", pos[0]);
    for (;;) {
        char *grown;
        size_t got;
        if (len > (size_t)64 << 20) {
            fclose(f);
            free(text);
            return cli_fail("import: %s: larger than 64 MiB", pos[0]);
        }
        if (!(grown = realloc(text, len + 65537))) {
            fclose(f);
            free(text);
            return cli_fail("import: out of memory");
        }
        text = grown;
        got = fread(text + len, 1, 65536, f);
        len += got;
        if (got < 65536) break;
    }
    fclose(f);
    if ((rc = cli_costenv_build("import", &o, &env)) != CLI_OK) {
        free(text);
        return rc;
    }
    st = arachne_plan_from_sailor(&plan, env.cm, text, len);
    free(text);
    if (st != ARACHNE_OK) {
        rc = cli_lib_fail(st, pos[0]);
    } else if ((rc = cli_batch_exact("import", plan, env.cm, o.allow_batch_rounding, 1)) != CLI_OK) {
        /* message printed */
    } else if (out && (st = arachne_plan_save(plan, out)) != ARACHNE_OK) {
        rc = cli_lib_fail(st, "import: --out");
    } else if (json) {
        const char *js = NULL;
        if ((st = arachne_plan_to_json(plan, &js)) != ARACHNE_OK) rc = cli_lib_fail(st, "import");
        else fputs(js, stdout);
    } else {
        char title[600];
        snprintf(title, sizeof title, "%s: Sailor's plan, priced by arachne's cost model", pos[0]);
        rc = cli_print_plan(stdout, plan, title);
        if (out) printf("wrote %s\n", out);
    }
    arachne_plan_destroy(plan);
    cli_costenv_free(&env);
    return rc;
}

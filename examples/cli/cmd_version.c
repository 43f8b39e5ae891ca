/* cmd_version.c -- `arachne version [--json]`. */
#include "cli.h"

int cmd_version(int argc, char **argv)
{
    int json = 0, npos;
    const char *pos[1];
    cli_opt opts[] = { { "json", 0, NULL, &json } };
    int rc = cli_parse("version", argc, argv, opts, 1, pos, 0, &npos);
    if (rc) return rc;
    if (json)
        printf("{\"version\":\"%s\",\"version_number\":%u,\"header_version\":\"%s\"}\n",
               arachne_version_string(), arachne_version(), ARACHNE_VERSION_STRING);
    else
        printf("arachne %s\n", arachne_version_string());
    return CLI_OK;
}

/* cmd_pending.c -- fallbacks for subcommands whose implementation has not
 * landed.  Each is a weak symbol: a real cmd_<name>() in cmd_<name>.c
 * replaces it at link time, so landing a command never touches this file. */
#include "cli.h"

#define PENDING(name) \
    __attribute__((weak)) int cmd_##name(int argc, char **argv); \
    __attribute__((weak)) int cmd_##name(int argc, char **argv) { (void)argc; (void)argv; \
        return cli_fail("'%s' is not available in this build yet", #name); }

PENDING(plan)
PENDING(price)
PENDING(search)
PENDING(train)
PENDING(eval)
PENDING(replan)
PENDING(export)
PENDING(models)
PENDING(gpus)
PENDING(cluster)
PENDING(profile)
PENDING(policy)

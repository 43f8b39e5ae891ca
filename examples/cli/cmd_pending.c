/* cmd_pending.c -- subcommands whose implementation has not landed yet.
 * Each reports plainly that it is not available; remove an entry when its
 * cmd_<name>.c lands. */
#include "cli.h"

#define PENDING(name) \
    int cmd_##name(int argc, char **argv) { (void)argc; (void)argv; \
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

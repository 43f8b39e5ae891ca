#!/bin/sh
# The CLI helper examples/cli/cli_costenv.c (shared training-setup options of
# price/search/plan): builds a small driver against it and the library, and
# checks defaults, every option, usage errors (exit 2), library failures
# (exit 1) and the profile/sequence-length rule.
set -u
cc=${CC:-cc}
libdir=${ARACHNE_LIBDIR:-lib}
[ -f "$libdir/libarachne.a" ] || { echo "no $libdir/libarachne.a"; exit 77; }
extra=""
case "$libdir" in *asan*) extra="-fsanitize=address,undefined" ;; esac
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
cat > "$t/drv.c" <<'C'
#include <stdio.h>
#include <string.h>
#include "cli.h"
int main(int argc, char **argv)
{
    cli_costenv_opts o;
    cli_opt opts[CLI_COSTENV_NOPTS + 1];
    const char *save = NULL, *pos[1];
    int n = cli_costenv_options(&o, opts), npos, rc, k;
    cli_costenv env;
    opts[n].name = "save-profile"; opts[n].takes_value = 1; opts[n].value = &save; opts[n].flag = NULL;
    if ((rc = cli_parse("drv", argc, argv, opts, n + 1, pos, 0, &npos))) return rc;
    if ((rc = cli_costenv_build("drv", &o, &env))) return rc;
    for (k = 0; k <= 12; k++) {
        double v = -1;
        arachne_cost_model_get(env.cm, k, &v);
        printf("%d=%g\n", k, v);
    }
    if (save && arachne_profile_save(env.profile, save) != ARACHNE_OK) rc = cli_lib_fail(1, save);
    cli_costenv_free(&env);
    cli_costenv_free(&env); /* harmless twice */
    return rc;
}
C
$cc -std=c11 -Iinclude -Iexamples/cli $extra -o "$t/drv" "$t/drv.c" examples/cli/cli_costenv.c examples/cli/cli_util.c \
    "$libdir/libarachne.a" -lm $extra || { echo "driver does not build"; exit 1; }
fail=0
check() { # check WANT_RC WANT_TEXT ARGS...: runs the driver, compares the exit code, greps output
    want=$1; text=$2; shift 2
    "$t/drv" "$@" > "$t/out" 2> "$t/err"; rc=$?
    if [ $rc -ne "$want" ]; then echo "drv $*: exit $rc, want $want"; cat "$t/err"; fail=1; return; fi
    if [ -n "$text" ] && ! grep -q -- "$text" "$t/out" "$t/err"; then
        echo "drv $*: no '$text' in:"; cat "$t/out" "$t/err"; fail=1; fi
    if [ "$want" -ne 0 ] && [ "$(wc -l < "$t/err")" -ne 1 ]; then echo "drv $*: want one stderr line:"; cat "$t/err"; fail=1; fi
    if [ "$want" -ne 0 ] && ! grep -q '^arachne: ' "$t/err"; then echo "drv $*: stderr lacks 'arachne: '"; fail=1; fi
}
base="--model llama3-8b --cluster h100:1x4"
check 0 "0=512" $base --save-profile "$t/p.json"
for kv in "1=4096" "2=2" "3=4" "4=12" "5=1" "6=1" "7=0.08" "8=1" "9=16" "10=1" "11=1" "12=0"; do check 0 "^$kv\$" $base; done
setup2="--no-dist-optimizer --no-overlap-grad-reduce --no-overlap-param-gather --tp-comm-overlap --weight-bytes 4 --grad-bytes 2 --optim-bytes 8"
for kv in "2=4" "3=2" "4=8" "5=0" "10=0" "11=0" "12=1"; do check 0 "^$kv\$" $base $setup2; done
check 2 "contradict" $base --dist-optimizer --no-dist-optimizer
check 2 "weight-bytes" $base --weight-bytes 0
check 2 "optim-bytes" $base --optim-bytes 65
check 0 "^0=64\$" $base --global-batch 64 --seq-len 2048 --recompute full --dist-optimizer --headroom 0.1 \
    --max-depth 8 --no-expert-tiling
for kv in "1=2048" "5=1" "6=2" "7=0.1" "8=0" "9=8"; do
    check 0 "^$kv\$" $base --global-batch 64 --seq-len 2048 --recompute full --dist-optimizer --headroom 0.1 \
        --max-depth 8 --no-expert-tiling
done
check 0 "^6=0\$" $base --recompute none
check 2 "--cluster is required" --model llama3-8b
check 2 "--model is required" --cluster h100:1x4
check 2 "is not none, selective, full or auto" $base --recompute partial
# auto is the planners' choice (plan, replan); a pricing command refuses it
check 2 "only plan and replan choose the mode; drv takes none, selective or full" $base --recompute auto
check 2 "headroom" $base --headroom 1
check 2 "max-depth" $base --max-depth 40
check 2 "global-batch" $base --global-batch 0
check 1 "nosuchmodel" --model nosuchmodel --cluster h100:1x4
check 1 "" --model llama3-8b --cluster "h100:1x"
# a loaded profile fixes the sequence length
check 0 "^1=4096\$" $base --profile "$t/p.json"
check 1 "2048" $base --profile "$t/p.json" --seq-len 2048
check 1 "4096" $base --profile "$t/p.json" --seq-len 2048
check 1 "" $base --profile "$t/missing.json"
check 1 "qwen3-8b" --model qwen3-8b --cluster h100:1x4 --profile "$t/p.json"
exit $fail

# omp_cli.sh -- sourced by the OpenMP checks (check_determinism.sh,
# check_plan_threads.sh): links an OpenMP build of the CLI from the current
# build's CLI objects and static library, with the given sources compiled
# with -fopenmp, into "$tmp/arachne".  Sets tmp (removed on exit).  Exits 77
# (skip) for sanitizer builds and compilers without OpenMP, 1 when the
# current build is missing.  Usage: . tests/omp_cli.sh; omp_cli src/a.c ...
CC=${CC:-cc}
LIBDIR=${ARACHNE_LIBDIR:-lib}
if [ "$LIBDIR" != "lib" ]; then echo "sanitizer build: the OpenMP checks run in the plain build"; exit 77; fi
O=build/rel
LIB=$LIBDIR/libarachne.a
[ -f "$LIB" ] || { echo "no $LIB: run make first"; exit 1; }
ls $O/examples/cli/*.o >/dev/null 2>&1 || { echo "no CLI objects in $O"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo 'int main(void){return 0;}' > "$tmp/probe.c"
if ! $CC -fopenmp "$tmp/probe.c" -o "$tmp/probe" >/dev/null 2>&1; then
    echo "$CC has no OpenMP support"; exit 77
fi
omp_cli() {
    objs=""
    for src in "$@"; do
        obj="$tmp/$(basename "$src" .c).o"
        $CC -Iinclude -Isrc -std=c11 -Wall -Wextra -Wpedantic -Werror -O2 -fopenmp -c "$src" -o "$obj" || exit 1
        objs="$objs $obj"
    done
    # shellcheck disable=SC2086
    $CC -fopenmp -o "$tmp/arachne" $O/examples/cli/*.o $objs "$LIB" -lm || exit 1
}

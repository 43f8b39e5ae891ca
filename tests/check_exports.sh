#!/bin/sh
# ABI guard: the shared library exports exactly the committed list
# src/exports.txt, and only arachne_* functions.
[ -n "$ARACHNE_SKIP_SHARED_CHECKS" ] && { echo "shared-library checks run in the release build"; exit 77; }
so=${ARACHNE_LIBDIR:-lib}/libarachne.so
[ -f "$so" ] || { echo "missing $so"; exit 1; }
got=$(mktemp)
nm -D --defined-only "$so" | awk '{print $2" "$3}' | sort > "$got"
bad=$(awk '$1 != "T" || $2 !~ /^arachne_/' "$got")
if [ -n "$bad" ]; then echo "non-arachne_ or non-function exports:"; echo "$bad"; rm -f "$got"; exit 1; fi
if ! awk '{print $2}' "$got" | diff -u src/exports.txt -; then
    echo "exports differ from src/exports.txt (update it when you add API on purpose)"; rm -f "$got"; exit 1
fi
# the static archive hides nothing: every global symbol it defines must be
# the library's (arachne_ public, ar_ internal) so that a program linking it
# cannot collide with it
a=${ARACHNE_LIBDIR:-lib}/libarachne.a
if [ -f "$a" ]; then
    stray=$(nm -g --defined-only "$a" | awk 'NF == 3 && $3 !~ /^(arachne_|ar_)/ {print $3}' | sort -u)
    if [ -n "$stray" ]; then echo "global symbols of $a without the arachne_ or ar_ prefix:"; echo "$stray"; exit 1; fi
fi
soname=$(objdump -p "$so" | awk '/SONAME/ {print $2}')
major=$(sed -n 's/^#define ARACHNE_VERSION_MAJOR \([0-9]*\).*/\1/p' include/arachne.h)
rm -f "$got"
[ "$soname" = "libarachne.so.$major" ] || { echo "SONAME is '$soname', want libarachne.so.$major"; exit 1; }

#!/bin/sh
# check_docs_api.sh -- every function declared in include/arachne.h
# (ARACHNE_API lines) must be documented in docs/c-api.md, written there as
# `name(` inside a code span or block.  Exit 0 pass, 1 fail.
hdr=include/arachne.h
doc=docs/c-api.md
[ -f "$hdr" ] && [ -f "$doc" ] || { echo "check_docs_api: run from the repository root"; exit 1; }
names=$(sed -n 's/^ARACHNE_API[^(]*[ *]\(arachne_[A-Za-z0-9_]*\)(.*/\1/p' "$hdr")
[ -n "$names" ] || { echo "check_docs_api: no ARACHNE_API functions found in $hdr"; exit 1; }
missing=0
n=0
for f in $names; do
    n=$((n + 1))
    if ! grep -q "$f(" "$doc"; then
        echo "missing from $doc: $f"
        missing=$((missing + 1))
    fi
done
if [ $missing -gt 0 ]; then
    echo "check_docs_api: $missing of $n public functions are not documented in $doc"
    exit 1
fi
echo "check_docs_api: all $n public functions are documented"

#!/bin/sh
# check_docs_examples.sh -- every example that README.md and docs/*.md show
# runs against the build being tested, and its shown output must agree
# (tools/docs_examples.py: integers exactly, decimals within 0.5 %, "~N"
# marks a measured time).  `make docs-update` rewrites the shown outputs.
# Then a self-test: a copy of a page with one shown number edited must fail,
# `--update` must restore the copy byte for byte (a measured "~N" only as a
# mark: its value may move on a loaded machine), and an unmarked example in
# a covered page must fail.  Exit 0 pass, 77 skip, 1 fail.
bin=${ARACHNE_BIN:-bin/arachne}
libdir=${ARACHNE_LIBDIR:-lib}
py=${PYTHON:-python3}
tool=tools/docs_examples.py
[ -x "$bin" ] || { echo "check_docs_examples: $bin not built"; exit 77; }
command -v "$py" >/dev/null 2>&1 || { echo "check_docs_examples: no $py"; exit 77; }
[ -f "$tool" ] || { echo "check_docs_examples: run from the repository root"; exit 1; }
# The pages not yet covered (examples not all marked) are listed in the tool
# (NOT_COVERED); it prints them.
shared=""
[ -n "$ARACHNE_SKIP_SHARED_CHECKS" ] && shared=--skip-shared
run() { "$py" "$tool" --bin "$(dirname "$bin")" --lib "$libdir" $shared "$@"; }

run README.md docs/*.md || { echo "check_docs_examples: docs disagree with the build; run 'make docs-update' and read the diff"; exit 1; }

t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
page=docs/getting-started.md
where=$("$py" "$tool" --mutate "$page" "$t/edited.md") || { echo "self-test: nothing to edit in $page"; exit 1; }
if run "$t/edited.md" > "$t/out" 2>&1; then
    echo "self-test: the checker passed $page with a number edited ($where)"; exit 1
fi
line=${where%% *}
grep -q "edited.md:.*out of date" "$t/out" || { echo "self-test: no 'out of date' message:"; cat "$t/out"; exit 1; }
grep -q "shown: .*$(echo "$where" | cut -d' ' -f3)" "$t/out" || { echo "self-test: edited number not named:"; cat "$t/out"; exit 1; }
run --update "$t/edited.md" > "$t/out" 2>&1 || { echo "self-test: --update failed:"; cat "$t/out"; exit 1; }
# measured values ("~N") move by more than the 10x --update tolerates only on
# a loaded machine; they are compared as marks, every other byte exactly
measured() { sed 's/~[0-9][0-9.eE+-]*/~N/g' "$1"; }
measured "$page" > "$t/want.md"
measured "$t/edited.md" > "$t/got.md"
cmp -s "$t/got.md" "$t/want.md" || { echo "self-test: --update did not restore $page:"; diff "$page" "$t/edited.md"; exit 1; }

printf '# x\n\n```\n$ bin/arachne version\narachne 0.1.0\n```\n' > "$t/unmarked.md"
if run --cover-all "$t/unmarked.md" > "$t/out" 2>&1; then echo "self-test: an unmarked example passed"; exit 1; fi
grep -q "without a doc-run/doc-skip marker" "$t/out" || { cat "$t/out"; exit 1; }
echo "check_docs_examples: docs agree; an edited number at $page:$line fails and --update restores it"

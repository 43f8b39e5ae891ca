#!/bin/sh
# check_export_atomic.sh -- `arachne export --out FILE` replaces FILE
# atomically: when the write fails (here: the file-size limit, which works
# even as root) the old FILE is untouched, the exit status is 1 and no
# temporary file is left; when it succeeds FILE holds the export.
bin=${ARACHNE_BIN:-bin/arachne}
seed=tests/fuzz/corpus/plan/dense-valid
[ -f "$seed" ] || { echo "skip: $seed missing"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tail -c +2 "$seed" > "$tmp/plan.json"
printf 'old launcher config\n' > "$tmp/out.txt"
# 1 block of 512 bytes: the export (several KB) cannot be written
(trap '' XFSZ; ulimit -f 1 && exec "$bin" export --format ranks "$tmp/plan.json" --out "$tmp/out.txt") \
    > "$tmp/stdout" 2> "$tmp/stderr"
rc=$?
[ "$rc" -eq 1 ] || { echo "failed write: exit $rc, want 1"; cat "$tmp/stderr"; exit 1; }
[ "$(cat "$tmp/out.txt")" = "old launcher config" ] || { echo "old file changed by a failed export"; exit 1; }
left=$(ls "$tmp" | grep -v -e '^plan.json$' -e '^out.txt$' -e '^stdout$' -e '^stderr$')
[ -z "$left" ] || { echo "left behind: $left"; exit 1; }
"$bin" export --format ranks "$tmp/plan.json" --out "$tmp/out.txt" || { echo "export failed"; exit 1; }
grep -q '"rank": *0' "$tmp/out.txt" || { echo "export output unexpected:"; head -3 "$tmp/out.txt"; exit 1; }
echo "ok: export --out is atomic"

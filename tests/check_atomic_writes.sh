#!/bin/sh
# check_atomic_writes.sh -- every file the library writes must go through
# ar_write_file_atomic (src/util.c): no other library source may open a file
# for writing, rename, or remove files.  (docs/reliability.md)
cd "$(dirname "$0")/.." || exit 1
bad=$(grep -nE 'fopen *\([^;]*"[^"]*[wa+][^"]*"|fdopen *\(|[^_a-z]open *\([^;]*O_(WRONLY|RDWR|CREAT|TRUNC)|[^_a-z]creat *\(|[^_a-z]rename *\(|[^_a-z]remove *\(|[^_a-z]unlink *\(' \
      src/*.c | grep -v '^src/util\.c:')
if [ -n "$bad" ]; then
    echo "library code writing files outside ar_write_file_atomic:"
    echo "$bad"
    exit 1
fi
# The arachne command writes its own output files (export --out) with the
# library's writer too (arachne_file_write): no fopen for writing, no
# open(O_CREAT), no rename of its own.
bad=$(grep -nE 'fopen *\([^;]*"[^"]*[wa+][^"]*"|fdopen *\(|[^_a-z]open *\([^;]*O_(WRONLY|RDWR|CREAT|TRUNC)|[^_a-z]creat *\(|[^_a-z]rename *\(' \
      examples/cli/*.c)
if [ -n "$bad" ]; then
    echo "CLI code writing files without arachne_file_write:"
    echo "$bad"
    exit 1
fi
n=$(grep -c 'ar_write_file_atomic' src/*.c | awk -F: '{s += $2} END {print s}')
echo "ok: no direct file writes in src/ ($n uses of ar_write_file_atomic)"

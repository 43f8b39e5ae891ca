#!/bin/sh
# Installs into a temporary DESTDIR, builds an out-of-tree program with
# pkg-config, runs it against the installed shared library; the install
# writes its arachne.pc straight into the prefix (none is left in the tree).
[ -n "$ARACHNE_SKIP_SHARED_CHECKS" ] && { echo "install round trip runs in the release build"; exit 77; }
command -v pkg-config >/dev/null 2>&1 || { echo "pkg-config not installed"; exit 77; }
set -e
t=$(mktemp -d)
prefix=/opt/arachne-test
make -s install PREFIX=$prefix DESTDIR="$t/root" >/dev/null
root="$t/root$prefix"
cat > "$t/v.c" <<'C'
#include <stdio.h>
#include <arachne.h>
int main(void) { printf("%s\n", arachne_version_string()); return 0; }
C
flags=$(PKG_CONFIG_SYSROOT_DIR="$t/root" PKG_CONFIG_PATH="$root/lib/pkgconfig" pkg-config --cflags --libs arachne)
${CC:-cc} "$t/v.c" -o "$t/v" $flags
want=$(sed -n 's/^#define ARACHNE_VERSION_MAJOR \([0-9]*\).*/\1/p;s/^#define ARACHNE_VERSION_MINOR \([0-9]*\).*/\1/p;s/^#define ARACHNE_VERSION_PATCH \([0-9]*\).*/\1/p' include/arachne.h | paste -sd. -)
got=$(LD_LIBRARY_PATH="$root/lib" "$t/v")
ldd_out=$(LD_LIBRARY_PATH="$root/lib" ldd "$t/v" | grep libarachne)
make -s uninstall PREFIX=$prefix DESTDIR="$t/root" >/dev/null
left=$(find "$t/root" -type f | wc -l)
rm -rf "$t"
[ "$got" = "$want" ] || { echo "installed program printed '$got', want '$want'"; exit 1; }
echo "$ldd_out" | grep -q "$root/lib/libarachne.so.$(echo $want | cut -d. -f1)" || { echo "not linked to installed lib: $ldd_out"; exit 1; }
[ "$left" -eq 0 ] || { echo "uninstall left $left files"; exit 1; }
[ ! -e arachne.pc ] || { echo "the install left arachne.pc in the tree"; exit 1; }

#!/bin/sh
# The public header compiles as C89-pedantic, C11 and C++11 without warnings,
# and includes nothing but <stddef.h> and <stdint.h>.
set -e
t=$(mktemp -d)
printf '#include "arachne.h"\nint main(void) { return arachne_version() == ARACHNE_VERSION_NUMBER ? 0 : 1; }\n' > "$t/h.c"
cp "$t/h.c" "$t/h.cpp"
${CC:-cc} -std=c89 -pedantic -Wall -Wextra -Werror -Wno-long-long -Iinclude -c "$t/h.c" -o "$t/a.o"
${CC:-cc} -std=c11 -Wall -Wextra -Wpedantic -Werror -Iinclude -c "$t/h.c" -o "$t/b.o"
if command -v g++ >/dev/null 2>&1; then
    g++ -std=c++11 -Wall -Wextra -Wpedantic -Werror -Iinclude -c "$t/h.cpp" -o "$t/c.o"
fi
rm -rf "$t"
inc=$(grep '^#include' include/arachne.h | grep -v -e '<stddef.h>' -e '<stdint.h>' || true)
[ -z "$inc" ] || { echo "arachne.h includes more than stddef/stdint: $inc"; exit 1; }

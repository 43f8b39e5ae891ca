#!/bin/sh
# The Python package as a user installs it: `pip install ./python` offline
# (--no-index --no-build-isolation) into a fresh virtual environment with
# system site packages, then the README's Python example (its "A short
# Python example" block) runs from a directory outside the repository,
# prints the README's "prints" block and writes only plan.json there.
# Three installs: the default one (the built library packed next to the
# package), one with ARACHNE_BUNDLE_LIB=none that finds the library under
# ARACHNE_PREFIX (a temporary `make install`), and a wrong ARACHNE_LIB,
# which must be an error naming it.
[ -n "$ARACHNE_SKIP_SHARED_CHECKS" ] && { echo "the Python package needs the release shared library"; exit 77; }
PY=${PYTHON:-python3}
command -v "$PY" >/dev/null 2>&1 || { echo "no $PY"; exit 77; }
"$PY" -c "import venv, pip" 2>/dev/null || { echo "$PY lacks venv or pip"; exit 77; }
set -e
repo=$(pwd)
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fail() { echo "$*"; exit 1; }
tree_before=$(ls -A; git status --porcelain 2>/dev/null || true)

awk '/^## A short Python example/{f=1} f&&/^```python/{g=1;next} g&&/^```/{exit} g' README.md > "$t/example.py"
awk '/^## A short Python example/{f=1} f&&/^```text/{g=1;next} g&&/^```/{exit} g' README.md > "$t/want.txt"
[ -s "$t/example.py" ] && [ -s "$t/want.txt" ] || fail "README has no Python example and output block"

# pip of the outer Python serves the venv (system site packages): no network, no ensurepip.
install_pkg() { # venv-dir [env assignments...]
    v=$1; shift
    "$PY" -m venv --system-site-packages --without-pip "$v"
    env "$@" "$v/bin/python" -m pip install --no-index --no-build-isolation --disable-pip-version-check -q \
        "$repo/python" > "$t/pip.log" 2>&1 || { cat "$t/pip.log"; fail "pip install ./python failed"; }
}
run_example() { # venv-dir workdir
    mkdir "$2"
    (cd "$2" && env -u ARACHNE_LIB -u ARACHNE_POLICY -u PYTHONPATH -u LD_LIBRARY_PATH \
        "$1/bin/python" "$t/example.py") > "$t/got.txt" 2> "$t/err.txt" || { cat "$t/err.txt"; fail "example failed in $2"; }
    diff "$t/want.txt" "$t/got.txt" > "$t/diff.txt" || { cat "$t/diff.txt"; fail "the example's output differs from the README"; }
    [ "$(ls -A "$2")" = "plan.json" ] || fail "the example wrote: $(ls -A "$2")"
}
where() { # venv-dir what
    (cd "$t" && env -u ARACHNE_LIB -u ARACHNE_POLICY -u PYTHONPATH -u LD_LIBRARY_PATH "$1/bin/python" -c "$2")
}

# 1. default: the library and the policy are packed next to the package
install_pkg "$t/v1"
run_example "$t/v1" "$t/w1"
lib=$(where "$t/v1" "import arachne; print(arachne.library_path())")
case "$lib" in "$t/v1/"*/site-packages/arachne/libarachne.so) ;; *) fail "v1 loads $lib";; esac
pol=$(where "$t/v1" "import arachne; print(arachne.Policy.bundled_path())")
case "$pol" in "$repo/examples/policies/default.arpol"|"$t/v1/"*/arachne/default.arpol) ;; *) fail "v1 policy $pol";; esac
where "$t/v1" "import arachne, os; assert os.path.isfile(arachne.cdef_path()), arachne.cdef_path()"

# 2. no packed library: the install prefix named at pip time
make -s install PREFIX="$t/prefix" >/dev/null
install_pkg "$t/v2" ARACHNE_BUNDLE_LIB=none ARACHNE_PREFIX="$t/prefix"
run_example "$t/v2" "$t/w2"
lib=$(where "$t/v2" "import arachne; print(arachne.library_path())")
[ "$lib" = "$t/prefix/lib/libarachne.so.0" ] || fail "v2 loads $lib, want $t/prefix/lib/libarachne.so.0"
pol=$(where "$t/v2" "import arachne; print(arachne.Policy.bundled_path())")
[ "$pol" = "$t/prefix/share/arachne/default.arpol" ] || fail "v2 policy $pol"
make -s uninstall PREFIX="$t/prefix" >/dev/null

# 3. a wrong ARACHNE_LIB is an error naming it, even with a library packed
if (cd "$t" && ARACHNE_LIB="$t/nowhere/libarachne.so" "$t/v1/bin/python" -c "import arachne; arachne.version()") \
        > "$t/out3.txt" 2>&1; then
    fail "a wrong ARACHNE_LIB was ignored"
fi
grep -q "ARACHNE_LIB: $t/nowhere/libarachne.so does not exist" "$t/out3.txt" || { cat "$t/out3.txt"; fail "error does not name ARACHNE_LIB"; }

[ "$(ls -A; git status --porcelain 2>/dev/null || true)" = "$tree_before" ] || fail "pip install left files in the tree"
echo "python package: installed offline twice, README example prints $(head -n 1 "$t/want.txt") outside the repository"

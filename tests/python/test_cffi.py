"""The cffi path: `make` writes build/arachne_cdef.h (include/arachne.h
preprocessed for ffi.cdef), arachne.cdef_path() finds it, the C compiler
accepts it, and -- when cffi is importable -- cffi drives the library with it."""
import os
import shutil
import subprocess
import tempfile
import unittest

from support import LLAMA3_8B_PARAMS, arachne, read

try:
    import cffi
except ImportError:  # the compiler check below still runs
    cffi = None


class CdefTest(unittest.TestCase):
    def setUp(self):
        try:
            self.path = arachne.cdef_path()
        except OSError as e:
            self.fail("no cdef header (make builds build/arachne_cdef.h): %s" % e)
        self.text = read(self.path)

    def test_plain_declarations(self):
        # What ffi.cdef cannot take is gone: comments, #include/#if, attributes.
        self.assertNotIn("#include", self.text)
        self.assertNotIn("#if", self.text)
        self.assertNotIn("__attribute__", self.text)
        self.assertNotIn("/**", self.text)
        self.assertIn("int arachne_cluster_parse(arachne_cluster **out, const char *spec);", self.text)
        major, minor, patch = arachne.version().split(".")
        self.assertIn("#define ARACHNE_VERSION_MAJOR %s\n" % major, self.text)
        self.assertIn("#define ARACHNE_VERSION_MINOR %s\n" % minor, self.text)
        for name in arachne._SIGNATURES:  # every function the binding binds is declared
            self.assertRegex(self.text, r"\b%s\(" % name)

    def test_compiles_as_c(self):
        cc = os.environ.get("CC") or "cc"
        if shutil.which(cc.split()[0]) is None:
            self.skipTest("no C compiler (%s)" % cc)
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "t.c")
            with open(src, "w") as f:
                f.write("#include <stddef.h>\n#include <stdint.h>\n%s\n"
                        "int main(void) { return arachne_version() == 0; }\n" % self.text)
            r = subprocess.run(cc.split() + ["-std=c11", "-Wall", "-Werror", "-fsyntax-only", src],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        self.assertEqual(r.returncode, 0, r.stderr)

    @unittest.skipIf(cffi is None, "cffi is not installed (the C compiler check covers the header)")
    def test_cffi_calls_the_library(self):
        ffi = cffi.FFI()
        ffi.cdef(self.text)
        lib = ffi.dlopen(arachne.library_path())
        self.assertEqual(ffi.string(lib.arachne_version_string()).decode(), arachne.version())
        self.assertEqual(lib.ARACHNE_E_PARSE, arachne.E_PARSE)
        m = ffi.new("arachne_model **")
        self.assertEqual(lib.arachne_model_preset(m, b"llama3-8b"), lib.ARACHNE_OK)
        v = ffi.new("double *")
        self.assertEqual(lib.arachne_model_get(m[0], lib.ARACHNE_MODEL_TOTAL_PARAMS, v), 0)
        self.assertEqual(int(v[0]), LLAMA3_8B_PARAMS)
        lib.arachne_model_destroy(m[0])
        c = ffi.new("arachne_cluster **")
        self.assertEqual(lib.arachne_cluster_parse(c, b"a100-40:2y4"), lib.ARACHNE_E_PARSE)
        self.assertIn("offset", ffi.string(lib.arachne_last_error()).decode())


if __name__ == "__main__":
    unittest.main()

# libarachne -- GNU make build.  See README.md.
#   make                 library, bin/arachne and examples
#   make check           every test; ends with "tests: N passed, M failed"
#   make check-asan      the same tests under AddressSanitizer + UBSan
#   make run             the main job: plan the default heterogeneous cluster
#   make bench           benchmarks (tables + JSON lines)
#   make docs-update     rerun the examples in README.md and docs/, rewrite their shown output
#   make install PREFIX=/usr/local DESTDIR=   /  make uninstall  (layout: see install:)
#   make OPENMP=1        enable OpenMP in the library

HDR := include/arachne.h
MAJOR := $(shell sed -n 's/^\#define ARACHNE_VERSION_MAJOR \([0-9]*\).*/\1/p' $(HDR))
MINOR := $(shell sed -n 's/^\#define ARACHNE_VERSION_MINOR \([0-9]*\).*/\1/p' $(HDR))
PATCH := $(shell sed -n 's/^\#define ARACHNE_VERSION_PATCH \([0-9]*\).*/\1/p' $(HDR))
VERSION := $(MAJOR).$(MINOR).$(PATCH)

CC ?= cc
PYTHON ?= python3
PREFIX ?= /usr/local
DESTDIR ?=
OPENMP ?= 0
SAN ?=

WARN := -std=c11 -Wall -Wextra -Wpedantic -Werror
OPT ?= -O2 -g
CPPFLAGS_ALL := -Iinclude -Isrc
CFLAGS_ALL := $(WARN) $(OPT) -fPIC -fvisibility=hidden $(CFLAGS)
LDLIBS_ALL := -lm $(LDLIBS)
ifeq ($(OPENMP),1)
  CFLAGS_ALL += -fopenmp
  LDLIBS_ALL += -fopenmp
endif

# Build directories: sanitizer builds live apart so they never mix objects.
ifeq ($(SAN),asan)
  O := build/asan
  CFLAGS_ALL += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
  LDLIBS_ALL += -fsanitize=address,undefined
else ifeq ($(SAN),tsan)
  O := build/tsan
  CFLAGS_ALL += -fsanitize=thread
  LDLIBS_ALL += -fsanitize=thread
else
  O := build/rel
endif
LIBDIR := $(if $(SAN),$(O)/lib,lib)
BINDIR := $(if $(SAN),$(O)/bin,bin)

SRC := $(sort $(wildcard src/*.c))
OBJ := $(SRC:%.c=$(O)/%.o)
CLI_SRC := $(sort $(wildcard examples/cli/*.c))
CLI_OBJ := $(CLI_SRC:%.c=$(O)/%.o)
EX_SRC := $(sort $(wildcard examples/*.c))
EX_BIN := $(EX_SRC:examples/%.c=$(BINDIR)/%)
TEST_SRC := $(sort $(wildcard tests/test_*.c))
TEST_OBJ := $(TEST_SRC:%.c=$(O)/%.o) $(O)/tests/runner.o
BENCH_SRC := $(sort $(wildcard bench/bench_*.c))
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BINDIR)/%)

STATIC := $(LIBDIR)/libarachne.a
SHARED_REAL := $(LIBDIR)/libarachne.so.$(VERSION)
SHARED_SONAME := libarachne.so.$(MAJOR)
SHARED := $(LIBDIR)/libarachne.so
CLI := $(BINDIR)/arachne
RUNNER := $(O)/tests/runner
CDEF := build/arachne_cdef.h

.PHONY: fidelity all lib check check-c check-asan check-tsan check-valgrind run bench install uninstall clean policy elastic docs-update

all: lib $(CLI) $(EX_BIN)

lib: $(STATIC) $(SHARED) $(CDEF)

$(O)/%.o: %.c $(wildcard examples/cli/*.h examples/cli/*.inc) $(HDR) $(wildcard src/*.h) | $(O)/src $(O)/examples/cli $(O)/tests
	$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) -c $< -o $@

$(O)/src $(O)/examples/cli $(O)/tests:
	@mkdir -p $@

$(STATIC): $(OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $(OBJ)

$(SHARED_REAL): $(OBJ) src/arachne.map
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,$(SHARED_SONAME) -Wl,--version-script=src/arachne.map -o $@ $(OBJ) $(LDLIBS_ALL)

$(SHARED): $(SHARED_REAL)
	ln -sf libarachne.so.$(VERSION) $(LIBDIR)/$(SHARED_SONAME)
	ln -sf $(SHARED_SONAME) $@

$(CLI): $(CLI_OBJ) $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -o $@ $(CLI_OBJ) $(STATIC) $(LDLIBS_ALL)

$(BINDIR)/%: examples/%.c $(STATIC) $(HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) -o $@ $< $(STATIC) $(LDLIBS_ALL)

$(BINDIR)/bench_%: bench/bench_%.c $(STATIC) $(HDR) $(wildcard bench/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) -Ibench -o $@ $< $(STATIC) $(LDLIBS_ALL)

# The runner's suite table comes from the SUITE(...) lines of the test files.
$(O)/tests/suites_decl.inc: $(TEST_SRC) | $(O)/tests
	@sed -n 's/^SUITE(\([A-Za-z0-9_]*\),.*/SUITE_DECL(\1)/p' $(TEST_SRC) > $@.tmp && mv $@.tmp $@

$(O)/tests/runner.o: tests/runner.c tests/harness.h $(O)/tests/suites_decl.inc
	$(CC) $(CPPFLAGS_ALL) -Itests -I$(O)/tests $(CFLAGS_ALL) -c $< -o $@

$(O)/tests/%.o: tests/%.c $(wildcard tests/*.h) $(HDR) $(wildcard src/*.h) | $(O)/tests
	$(CC) $(CPPFLAGS_ALL) -Itests $(CFLAGS_ALL) -c $< -o $@

$(RUNNER): $(TEST_OBJ) $(STATIC)
	$(CC) $(CFLAGS_ALL) -o $@ $(TEST_OBJ) $(STATIC) $(LDLIBS_ALL)

# check: C suites + shell checks + Python tests, one summary line.
REPLAY_O := $(O)/replay
REPLAY_BIN := $(patsubst tests/fuzz/fuzz_%.c,$(REPLAY_O)/fuzz_%,$(sort $(wildcard tests/fuzz/fuzz_*.c)))

check: all $(RUNNER) $(BINDIR)/bench_fidelity $(BINDIR)/bench_profile_calibration $(BINDIR)/bench_profile_measured \
       $(REPLAY_BIN)
	@ARACHNE_BIN=$(CLI) ARACHNE_LIBDIR=$(LIBDIR) CC="$(CC)" PYTHON=$(PYTHON) ARACHNE_FUZZ_REPLAY=$(REPLAY_O) \
	  sh tests/run.sh $(RUNNER)

# The fuzz targets without libFuzzer ($(REPLAY_BIN), above): each
# tests/fuzz/fuzz_*.c linked with tests/fuzz/replay_main.c, which runs it on
# the files it is given.  tests/check_fuzz_seeds.sh feeds every target its
# committed seeds, so a target whose property went stale (or a seed the
# library now refuses wrongly) fails `make check`, not only a fuzz run.
$(REPLAY_O)/cli_main.o: examples/cli/main.c $(wildcard examples/cli/*.h examples/cli/*.inc) $(HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) -DARACHNE_CLI_NO_MAIN -c $< -o $@

$(REPLAY_O)/fuzz_cli: tests/fuzz/fuzz_cli.c tests/fuzz/replay_main.c tests/fuzz/fuzz_common.h $(REPLAY_O)/cli_main.o \
                      $(filter-out %/main.o,$(CLI_OBJ)) $(STATIC)
	$(CC) $(CPPFLAGS_ALL) -Iexamples/cli -Itests/fuzz $(CFLAGS_ALL) -o $@ $< tests/fuzz/replay_main.c \
	  $(REPLAY_O)/cli_main.o $(filter-out %/main.o,$(CLI_OBJ)) $(STATIC) $(LDLIBS_ALL)

$(REPLAY_O)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/replay_main.c $(wildcard tests/fuzz/*.h) $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) -Itests/fuzz $(CFLAGS_ALL) -o $@ $< tests/fuzz/replay_main.c $(STATIC) $(LDLIBS_ALL)

check-asan:
	@$(MAKE) --no-print-directory SAN=asan OPT="-O1 -g" all $(O:build/rel=build/asan)/tests/runner build/asan/bin/bench_fidelity
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ARACHNE_POLICY=$${ARACHNE_POLICY:-$(CURDIR)/examples/policies/default.arpol} \
	  ARACHNE_BIN=build/asan/bin/arachne ARACHNE_LIBDIR=build/asan/lib CC="$(CC)" PYTHON=$(PYTHON) \
	  ARACHNE_SKIP_SHARED_CHECKS=1 sh tests/run.sh build/asan/tests/runner

run: all
	$(CLI) plan --model llama3-8b --cluster a100-40:32x4,a6000:32x4,h100:64x4

# The cost model against the measured runs of tests/data/published-runs.json
# (docs/cost-model.md, "Fidelity"); exits 1 when a calibration target is missed.
fidelity: all $(BINDIR)/bench_fidelity
	$(BINDIR)/bench_fidelity --check

# docs-update: rerun every example marked <!-- doc-run --> in README.md and
# docs/*.md against this build and rewrite the output shown under it (the
# "..." trims and "~" marks stay); tests/check_docs_examples.sh checks them.
# docs/profiles.md shows the output of bench_profile_calibration and
# bench_profile_measured, so check and docs-update build those two
# benchmarks; the fidelity summary of
# docs/cost-model.md has its own generator (tests/fidelity_doc_update.py).
docs-update: all $(BINDIR)/bench_profile_calibration $(BINDIR)/bench_profile_measured $(BINDIR)/bench_fidelity
	$(PYTHON) tools/docs_examples.py --update README.md docs/*.md
	$(PYTHON) tests/fidelity_doc_update.py $(BINDIR)/bench_fidelity

bench: all $(BENCH_BIN)
	@for b in $(BENCH_BIN); do echo "== $$b"; $$b || exit 1; done

# A header for cffi's ffi.cdef(): include/arachne.h run through the
# preprocessor (no comments, no directives, macros expanded) with empty
# stand-ins for <stddef.h>/<stdint.h>, whose types cffi knows by itself, plus
# the version numbers as integer #defines (cffi accepts those).
$(CDEF): $(HDR)
	@mkdir -p build/cdef-inc
	@: > build/cdef-inc/stddef.h && : > build/cdef-inc/stdint.h
	{ echo "/* arachne_cdef.h -- include/arachne.h $(VERSION) preprocessed for cffi's ffi.cdef() (generated) */"; \
	  grep -E '^#define ARACHNE_VERSION_(MAJOR|MINOR|PATCH) [0-9]+' $(HDR); \
	  $(CC) -E -P -nostdinc -Ibuild/cdef-inc $(HDR) | sed -e 's/__attribute__((visibility("default"))) *//g' -e '/^ *$$/d'; \
	} > $@.tmp && mv $@.tmp $@

# Install layout under $(DESTDIR)$(PREFIX):
#   include/arachne.h  lib/libarachne.{a,so*}  bin/arachne
#   lib/pkgconfig/arachne.pc          written here for this PREFIX (nothing is
#                                     left in the tree, so a second install
#                                     with another PREFIX gets its own file)
#   lib/cmake/arachne/arachneConfig.cmake, arachneConfigVersion.cmake
#   share/man/man1/arachne.1   share/doc/arachne/LICENSE
#   share/arachne/default.arpol (the bundled policy), share/arachne/arachne_cdef.h
# The .pc file adds an rpath (-Wl,-rpath,PREFIX/lib), so a program linked
# through pkg-config runs without LD_LIBRARY_PATH; CMake adds the rpath itself.
IPREFIX = $(DESTDIR)$(PREFIX)
SUBST = sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' -e 's|@MAJOR@|$(MAJOR)|g' \
  -e 's|@MINOR@|$(MINOR)|g' -e "s|@SIZEOF_VOID_P@|$$(echo __SIZEOF_POINTER__ | $(CC) -E -P - | tail -n 1)|g"
INSTALLED = include/arachne.h lib/libarachne.a lib/libarachne.so.$(VERSION) lib/$(SHARED_SONAME) \
  lib/libarachne.so lib/pkgconfig/arachne.pc lib/cmake/arachne/arachneConfig.cmake \
  lib/cmake/arachne/arachneConfigVersion.cmake bin/arachne share/man/man1/arachne.1 \
  share/doc/arachne/LICENSE share/arachne/default.arpol share/arachne/arachne_cdef.h

install: all $(CDEF)
	install -d $(IPREFIX)/include $(IPREFIX)/lib/pkgconfig $(IPREFIX)/lib/cmake/arachne $(IPREFIX)/bin \
	  $(IPREFIX)/share/man/man1 $(IPREFIX)/share/doc/arachne $(IPREFIX)/share/arachne
	install -m 644 $(HDR) $(IPREFIX)/include/arachne.h
	install -m 644 $(STATIC) $(IPREFIX)/lib/libarachne.a
	install -m 755 $(SHARED_REAL) $(IPREFIX)/lib/libarachne.so.$(VERSION)
	ln -sf libarachne.so.$(VERSION) $(IPREFIX)/lib/$(SHARED_SONAME)
	ln -sf $(SHARED_SONAME) $(IPREFIX)/lib/libarachne.so
	$(SUBST) pkgconfig/arachne.pc.in > $(IPREFIX)/lib/pkgconfig/arachne.pc.tmp
	mv $(IPREFIX)/lib/pkgconfig/arachne.pc.tmp $(IPREFIX)/lib/pkgconfig/arachne.pc
	$(SUBST) cmake/arachneConfig.cmake.in > $(IPREFIX)/lib/cmake/arachne/arachneConfig.cmake.tmp
	mv $(IPREFIX)/lib/cmake/arachne/arachneConfig.cmake.tmp $(IPREFIX)/lib/cmake/arachne/arachneConfig.cmake
	$(SUBST) cmake/arachneConfigVersion.cmake.in > $(IPREFIX)/lib/cmake/arachne/arachneConfigVersion.cmake.tmp
	mv $(IPREFIX)/lib/cmake/arachne/arachneConfigVersion.cmake.tmp $(IPREFIX)/lib/cmake/arachne/arachneConfigVersion.cmake
	chmod 644 $(IPREFIX)/lib/pkgconfig/arachne.pc $(IPREFIX)/lib/cmake/arachne/*.cmake
	install -m 755 $(CLI) $(IPREFIX)/bin/arachne
	install -m 644 man/arachne.1 $(IPREFIX)/share/man/man1/arachne.1
	install -m 644 LICENSE $(IPREFIX)/share/doc/arachne/LICENSE
	install -m 644 $(CDEF) $(IPREFIX)/share/arachne/arachne_cdef.h
	if [ -f examples/policies/default.arpol ]; then \
	  install -m 644 examples/policies/default.arpol $(IPREFIX)/share/arachne/default.arpol; fi

uninstall:
	rm -f $(INSTALLED:%=$(IPREFIX)/%)
	rmdir $(IPREFIX)/lib/cmake/arachne $(IPREFIX)/share/doc/arachne $(IPREFIX)/share/arachne 2>/dev/null || true

clean:
	rm -rf build lib bin arachne.pc

# elastic: the growing-cluster demo (examples/elastic.c, docs/replan.md):
# a job on 3 RTX PRO 6000 GPUs gains a 4-GPU node every 5 minutes; the run
# fails if the throughput ever drops at a join.
elastic: all
	$(BINDIR)/elastic

# `make policy`: trains the bundled policy examples/policies/default.arpol
# from the committed config examples/train/default.json (docs/training.md).
# Only src/train.c and src/train_ppo.c use OpenMP, so an OpenMP copy of the
# CLI is linked in build/omp from those two files compiled with -fopenmp plus
# the regular objects; without OpenMP support it trains on one thread with
# bin/arachne (same result, bit for bit).
OMP_DIR := build/omp
POLICY_CONFIG ?= examples/train/default.json
$(OMP_DIR)/arachne: src/train.c src/train_ppo.c $(wildcard src/*.h) $(HDR) $(CLI_OBJ) $(STATIC)
	@mkdir -p $(OMP_DIR)
	$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) -fopenmp -c src/train.c -o $(OMP_DIR)/train.o
	$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) -fopenmp -c src/train_ppo.c -o $(OMP_DIR)/train_ppo.o
	$(CC) $(CFLAGS_ALL) -fopenmp -o $@ $(CLI_OBJ) $(OMP_DIR)/train.o $(OMP_DIR)/train_ppo.o $(STATIC) $(LDLIBS_ALL)

# bench_distill labels its compositions in parallel when built with OpenMP
# (the library's own passes stay single-threaded, as in the plain build).
$(OMP_DIR)/bench_distill: bench/bench_distill.c $(wildcard src/*.h) $(HDR) $(STATIC)
	@mkdir -p $(OMP_DIR)
	$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) -fopenmp -Ibench -o $@ $< $(STATIC) $(LDLIBS_ALL)

policy: all
	@if $(MAKE) --no-print-directory $(OMP_DIR)/arachne; then bin=$(OMP_DIR)/arachne; \
	 else echo "make policy: no OpenMP build; training on one thread"; bin=$(CLI); fi; \
	 start=$$(date +%s); $$bin train --config $(POLICY_CONFIG) || exit 1; \
	 echo "make policy: trained in $$(( $$(date +%s) - start )) s"

# ------------------------------------------------------------------------
# Reliability: fuzzing, valgrind, ThreadSanitizer, ABI (docs/reliability.md)
#   make fuzz FUZZ_SECONDS=N   build every tests/fuzz/fuzz_*.c with libFuzzer
#                              (clang) and run each N seconds (make -j2 fuzz:
#                              two at a time); logs in build/fuzz/logs
#   make fuzz-build            only build them (build/fuzz/fuzz_*)
#   make check-valgrind        memcheck over the test runner and the CLI
#   make check-tsan            the test runner under ThreadSanitizer
#   make abi-check / abi-update   compare with / regenerate abi/libarachne.abi
# ------------------------------------------------------------------------
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ_TIMEOUT ?= 10
FUZZ_O := build/fuzz
FUZZ_CFLAGS := -std=c11 -Wall -Wextra -Wpedantic -Werror -O1 -g -fno-omit-frame-pointer \
  -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_SRC := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_NAMES := $(FUZZ_SRC:tests/fuzz/fuzz_%.c=%)
FUZZ_BIN := $(FUZZ_NAMES:%=$(FUZZ_O)/fuzz_%)
FUZZ_LIB_OBJ := $(SRC:%.c=$(FUZZ_O)/%.o)
FUZZ_CLI_OBJ := $(CLI_SRC:%.c=$(FUZZ_O)/%.o)
# Per-target libFuzzer options (FUZZ_OPTS_<name>).
FUZZ_OPTS_cli := -close_fd_mask=2
FUZZ_OPTS_plan := -max_len=16384
FUZZ_OPTS_plan_svg := -max_len=16384
FUZZ_OPTS_replan := -max_len=8192
FUZZ_OPTS_model_plan := -max_len=4096
# Dictionaries shared between targets (FUZZ_DICT_<name>; default <name>.dict).
FUZZ_DICT_plan_svg := plan
FUZZ_DICT_replan := cluster_json
FUZZ_DICT_model_plan := model
FUZZ_ABS := $(CURDIR)/$(FUZZ_O)

.PHONY: fuzz fuzz-build fuzz-seeds-policy abi-check abi-update

fuzz-build: $(FUZZ_BIN)

$(FUZZ_O)/src/%.o: src/%.c $(HDR) $(wildcard src/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS_ALL) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_O)/examples/cli/%.o: examples/cli/%.c $(wildcard examples/cli/*.h examples/cli/*.inc) $(HDR)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS_ALL) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -DARACHNE_CLI_NO_MAIN -c $< -o $@

$(FUZZ_O)/fuzz_cli: tests/fuzz/fuzz_cli.c tests/fuzz/fuzz_common.h $(FUZZ_LIB_OBJ) $(FUZZ_CLI_OBJ)
	$(FUZZ_CC) $(CPPFLAGS_ALL) -Iexamples/cli $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_CLI_OBJ) $(FUZZ_LIB_OBJ) -lm

$(FUZZ_O)/fuzz_%: tests/fuzz/fuzz_%.c $(wildcard tests/fuzz/*.h) $(FUZZ_LIB_OBJ)
	$(FUZZ_CC) $(CPPFLAGS_ALL) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_LIB_OBJ) -lm

# Each run reads the committed seeds (tests/fuzz/corpus/<name>) and keeps what
# it discovers in build/fuzz/corpus/<name>; crashes go to build/fuzz/artifacts.
fuzz-run-%: $(FUZZ_O)/fuzz_%
	@mkdir -p $(FUZZ_O)/corpus/$* $(FUZZ_O)/artifacts $(FUZZ_O)/logs tests/fuzz/corpus/$*
	@echo "fuzz $*: $(FUZZ_SECONDS) s (log $(FUZZ_O)/logs/$*.log)"
	@$(FUZZ_ABS)/fuzz_$* -max_total_time=$(FUZZ_SECONDS) -timeout=$(FUZZ_TIMEOUT) -rss_limit_mb=2048 \
	  -print_final_stats=1 -artifact_prefix=$(FUZZ_ABS)/artifacts/$*- \
	  $(if $(wildcard tests/fuzz/$(or $(FUZZ_DICT_$*),$*).dict),-dict=$(CURDIR)/tests/fuzz/$(or $(FUZZ_DICT_$*),$*).dict) $(FUZZ_OPTS_$*) \
	  $(FUZZ_ABS)/corpus/$* $(CURDIR)/tests/fuzz/corpus/$* > $(FUZZ_O)/logs/$*.log 2>&1 || \
	  { echo "fuzz $*: FAILED, see $(FUZZ_O)/logs/$*.log and $(FUZZ_O)/artifacts/"; \
	    grep -E 'ERROR|SUMMARY|FUZZ_CHECK|==[0-9]+==' $(FUZZ_O)/logs/$*.log | head -20; exit 1; }
	@echo "fuzz $*: $$(grep -E '^stat::number_of_executed_units' $(FUZZ_O)/logs/$*.log | awk '{print $$2}') executions," \
	  "$$(grep -E '^#[0-9]+.*DONE' $(FUZZ_O)/logs/$*.log | sed 's/.*DONE *//')"

fuzz: $(FUZZ_NAMES:%=fuzz-run-%)

# The policy target's seeds are written by the encoder itself, so they stay
# valid when the network or the file format changes (tests/fuzz/README.md).
fuzz-seeds-policy: $(STATIC)
	@mkdir -p $(O)/tests
	$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) -o $(O)/tests/gen_policy_seeds tests/fuzz/gen_policy_seeds.c $(STATIC) $(LDLIBS_ALL)
	$(O)/tests/gen_policy_seeds tests/fuzz/corpus/policy

# memcheck: the C test runner, then the CLI over the example inputs
# (tests/valgrind_cli.sh).  Exit status 1 from memcheck fails the runner;
# the CLI runs use 99 so that expected CLI failures (exit 1) stay apart.
VALGRIND ?= valgrind
VALGRIND_FLAGS := --leak-check=full --errors-for-leak-kinds=definite,indirect \
  --show-leak-kinds=definite,indirect --track-origins=yes -q
# ARACHNE_TEST_QUICK scales the heavy tests down (docs/reliability.md);
# VALGRIND_RUNNER_ARGS=--times prints each test's CPU seconds under memcheck.
VALGRIND_RUNNER_ARGS ?=
check-valgrind: all $(RUNNER)
	ARACHNE_TEST_QUICK=1 $(VALGRIND) $(VALGRIND_FLAGS) --error-exitcode=1 $(RUNNER) $(VALGRIND_RUNNER_ARGS)
	@VALGRIND="$(VALGRIND) $(VALGRIND_FLAGS) --error-exitcode=99" ARACHNE_BIN=$(CLI) sh tests/valgrind_cli.sh

check-tsan:
	@$(MAKE) --no-print-directory SAN=tsan OPT="-O1 -g" all build/tsan/tests/runner
	ARACHNE_TEST_QUICK=1 TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 $(TSAN_OPTIONS)" ARACHNE_BIN=build/tsan/bin/arachne \
	  $(TSAN_SETARCH) build/tsan/tests/runner

# ABI baseline: abidw over the shared library (public types only, no paths).
# abi-check fails when abidiff reports an incompatible change (exit bit 8)
# or any removed/changed function or variable; additions pass.
ABI_FILE := abi/libarachne.abi
ABIDW_FLAGS := --headers-dir include --no-corpus-path --no-comp-dir-path --no-show-locs --drop-private-types
abi-update: lib
	@mkdir -p abi
	abidw $(ABIDW_FLAGS) --out-file $(ABI_FILE) $(SHARED_REAL)
	@echo "wrote $(ABI_FILE)"

abi-check: lib
	@command -v abidiff >/dev/null 2>&1 || { echo "abi-check: abidiff not found (apt-get install abigail-tools)"; exit 1; }
	@mkdir -p build/abi
	@abidw $(ABIDW_FLAGS) --out-file build/abi/current.abi $(SHARED_REAL)
	@abidiff $(ABI_FILE) build/abi/current.abi > build/abi/diff.txt 2>&1; rc=$$?; \
	  bad=$$(grep -E '(Functions|Variables) changes summary' build/abi/diff.txt | \
	         grep -vE ': 0 Removed, 0 Changed' || true); \
	  if [ $$((rc & 3)) -ne 0 ]; then cat build/abi/diff.txt; echo "abi-check: abidiff failed (exit $$rc)"; exit 1; \
	  elif [ $$((rc & 8)) -ne 0 ] || [ -n "$$bad" ]; then cat build/abi/diff.txt; \
	    echo "abi-check: INCOMPATIBLE change against $(ABI_FILE) (if intended: bump the major version, make abi-update)"; exit 1; \
	  else echo "abi-check: compatible with $(ABI_FILE) ($$(grep -cE 'function .*arachne_' build/abi/diff.txt || true) additions listed in build/abi/diff.txt)"; fi

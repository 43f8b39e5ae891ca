# libarachne -- GNU make build.  See README.md.
#   make                 library, bin/arachne and examples
#   make check           every test; ends with "tests: N passed, M failed"
#   make check-asan      the same tests under AddressSanitizer + UBSan
#   make run             the main job: plan the default heterogeneous cluster
#   make bench           benchmarks (tables + JSON lines)
#   make install PREFIX=/usr/local DESTDIR=   /  make uninstall
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

.PHONY: all lib check check-c check-asan check-tsan check-valgrind run bench install uninstall clean policy elastic

all: lib $(CLI) $(EX_BIN)

lib: $(STATIC) $(SHARED)

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

$(O)/tests/%.o: tests/%.c tests/harness.h $(HDR) $(wildcard src/*.h) | $(O)/tests
	$(CC) $(CPPFLAGS_ALL) -Itests $(CFLAGS_ALL) -c $< -o $@

$(RUNNER): $(TEST_OBJ) $(STATIC)
	$(CC) $(CFLAGS_ALL) -o $@ $(TEST_OBJ) $(STATIC) $(LDLIBS_ALL)

# check: C suites + shell checks + Python tests, one summary line.
check: all $(RUNNER)
	@ARACHNE_BIN=$(CLI) ARACHNE_LIBDIR=$(LIBDIR) CC="$(CC)" PYTHON=$(PYTHON) sh tests/run.sh $(RUNNER)

check-asan:
	@$(MAKE) --no-print-directory SAN=asan OPT="-O1 -g" all $(O:build/rel=build/asan)/tests/runner
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ARACHNE_BIN=build/asan/bin/arachne ARACHNE_LIBDIR=build/asan/lib CC="$(CC)" PYTHON=$(PYTHON) \
	  ARACHNE_SKIP_SHARED_CHECKS=1 sh tests/run.sh build/asan/tests/runner

run: all
	$(CLI) plan --model llama3-8b --cluster a100-40:32x4,a6000:32x4,h100:64x4

bench: all $(BENCH_BIN)
	@for b in $(BENCH_BIN); do echo "== $$b"; $$b || exit 1; done

arachne.pc: pkgconfig/arachne.pc.in $(HDR)
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' $< > $@

install: all arachne.pc
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/bin
	install -m 644 $(HDR) $(DESTDIR)$(PREFIX)/include/arachne.h
	install -m 644 $(STATIC) $(DESTDIR)$(PREFIX)/lib/libarachne.a
	install -m 755 $(SHARED_REAL) $(DESTDIR)$(PREFIX)/lib/libarachne.so.$(VERSION)
	ln -sf libarachne.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/$(SHARED_SONAME)
	ln -sf $(SHARED_SONAME) $(DESTDIR)$(PREFIX)/lib/libarachne.so
	install -m 644 arachne.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/arachne.pc
	install -m 755 $(CLI) $(DESTDIR)$(PREFIX)/bin/arachne

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/include/arachne.h $(DESTDIR)$(PREFIX)/lib/libarachne.a \
	  $(DESTDIR)$(PREFIX)/lib/libarachne.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/$(SHARED_SONAME) \
	  $(DESTDIR)$(PREFIX)/lib/libarachne.so $(DESTDIR)$(PREFIX)/lib/pkgconfig/arachne.pc \
	  $(DESTDIR)$(PREFIX)/bin/arachne

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

policy: all
	@if $(MAKE) --no-print-directory $(OMP_DIR)/arachne; then bin=$(OMP_DIR)/arachne; \
	 else echo "make policy: no OpenMP build; training on one thread"; bin=$(CLI); fi; \
	 start=$$(date +%s); $$bin train --config $(POLICY_CONFIG) || exit 1; \
	 echo "make policy: trained in $$(( $$(date +%s) - start )) s"

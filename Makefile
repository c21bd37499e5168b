# sqlite-bert: BERT inside SQLite.
#
#   make            build bert.so (the loadable extension)
#   make demo       run sql/demo.sql in the sqlite3 shell
#   make test       run the test suite (ends with "N passed, 0 failed, M skipped")
#   make bench      speed measurements (installs its peers, not part of test)
#   make bench-train  fine-tuning examples/s and peak memory beside PyTorch
#   make bench-kernels  GFLOP/s of the float32, bfloat16 and int8 projection
#                   kernels on bert-base and MiniLM shapes, one thread
#   make bench-fine-tune  sql/fine_tune_intents.sql's accuracy, ours beside PyTorch's
#                   with the same options, over eight seeds (needs python3-torch)
#   make static     build libsqlite_bert.a, to link into an application
#   make install    copy bert.so, libsqlite_bert.a, sqlite_bert.h and sqlite-bert.pc
#                   under $(DESTDIR)$(PREFIX)
#   make python-package  sdist and wheel of the Python package into build/dist/
#   make node-package    npm tarball (with this platform's bert.so) into build/dist/
#   make test-packages   both packages installed and used, pkg-config, the model fetcher
#   make deps       check (and as root, install) the Debian packages needed
#   make test-dqlite  the extension in a three-node dqlite cluster on 127.0.0.1
#                   (needs libdqlite-dev; not part of make test)
#   make test-arm64 cross-compiled for arm64 and run under qemu, on emulated
#                   CPUs with all, some and none of the dot-product instructions
#                   (tests/arm64/run.sh; Debian x86-64; not part of make test)
#   make sqlite-vec fetch sqlite-vec's loadable vec0.so (npm) to ./vec0.so, for
#                   the vector-index examples and tests (sql/vector_search.sql)
#   make examples   what every example in sql/ needs: bert.so, the generated test
#                   models (entities.sql, answers.sql) and ./vec0.so
#   make test SUITE=NAME  one suite of the test suite
#   make RELEASE=   keep assert() in bert.so and libsqlite_bert.a (compiled out
#                   by default; the test runner always keeps them)
#
# Every target that compiles checks the build's packages first (build-deps),
# so a fresh machine gets the apt-get line to run, not compiler errors about
# missing headers.

CC      ?= cc
PREFIX  ?= /usr/local
LIBDIR  ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PKGS    := sqlite3 openblas libutf8proc
OPT     ?= -O3 -g
SAN     ?=
BUILD   ?= build

PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs openblas libutf8proc 2>/dev/null)
ifeq ($(strip $(PKG_LIBS)),)
PKG_LIBS   := -lopenblas -lutf8proc
endif

# macOS (not tested here): a .dylib, and Homebrew's keg-only sqlite and
# openblas, which pkg-config finds only through their own prefixes.
UNAME_S := $(shell uname -s)
ifeq ($(UNAME_S),Darwin)
BREW    := $(shell brew --prefix 2>/dev/null || echo /opt/homebrew)
export PKG_CONFIG_PATH := $(BREW)/opt/sqlite/lib/pkgconfig:$(BREW)/opt/openblas/lib/pkgconfig:$(PKG_CONFIG_PATH)
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs openblas libutf8proc 2>/dev/null)
EXT_LIB    := bert.dylib
SHARED     := -dynamiclib
else
EXT_LIB    := bert.so
SHARED     := -shared
endif
VERSION := $(shell sed -n 's/^\#define SQLITE_BERT_VERSION "\(.*\)"/\1/p' ext/sql/sqlite_bert.h)

WARN    := -std=c11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wvla
DEFS    := -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
CFLAGS_ALL := $(OPT) $(SAN) $(WARN) $(DEFS) $(PKG_CFLAGS) $(CFLAGS)
# What users run (the extension, the static library, the packages) and the
# benchmarks compile the invariants' assert() out, as SQLite's releases do;
# the test runner keeps them, and so do its sanitizer builds in CI, where a
# broken invariant must stop the run.  `make RELEASE=` keeps them everywhere.
RELEASE ?= -DNDEBUG
LIBS    := $(PKG_LIBS) -lpthread -lm

# The sources, in folders by layer (ext/README.md).  The files that talk to
# SQLite (the SQL layer, and the JSON reader on SQLite's JSON functions) are
# compiled differently for the loadable extension (through SQLite's routine
# table) and for linking in (SQLITE_CORE); every other object is shared by
# bert.so and libsqlite_bert.a.
EXT_SRC   := $(sort $(wildcard ext/*/*.c))
EXT_HDR   := $(wildcard ext/*.h ext/*/*.h)
HOST_SRC  := $(wildcard ext/sql/*.c) ext/base/json.c
CORE_SRC  := $(filter-out $(HOST_SRC),$(EXT_SRC))
# The test runner counts the extension's own allocations (tests/test_main.c).
COUNT_ALLOCS := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,--wrap=strndup
TEST_SRC  := $(wildcard tests/test_*.c)
MODELS    := build/models/.done

# One object per source, with its dependency file (-MMD), so that `make -j`
# uses every core and a change rebuilds only what includes it:
#   $(BUILD)/rel/       shared by bert.so and libsqlite_bert.a (-fPIC, $(RELEASE))
#   $(BUILD)/loadable/  the SQLite-facing files of bert.so
#   $(BUILD)/core/      the SQLite-facing files of libsqlite_bert.a (SQLITE_CORE)
#   $(BUILD)/test/      everything again for the test runner but the kernels: assert() kept, SQLITE_CORE
# Each compile prints one line with its time; V=1 prints the commands instead.
REL_OBJ      := $(patsubst ext/%.c,$(BUILD)/rel/%.o,$(CORE_SRC))
LOADABLE_OBJ := $(patsubst ext/%.c,$(BUILD)/loadable/%.o,$(HOST_SRC))
CORE_OBJ     := $(patsubst ext/%.c,$(BUILD)/core/%.o,$(HOST_SRC))
# The kernels hold no assert(), so the test runner links the release objects
# of them: the AVX-512 file alone takes a minute of one core to compile.
KERNEL_SRC   := $(filter ext/kernels/%,$(EXT_SRC))
TEST_OBJ     := $(patsubst ext/%.c,$(BUILD)/test/%.o,$(filter-out $(KERNEL_SRC),$(EXT_SRC))) \
                $(patsubst ext/%.c,$(BUILD)/rel/%.o,$(KERNEL_SRC)) \
                $(patsubst tests/%.c,$(BUILD)/test/tests/%.o,$(TEST_SRC))
STATIC_OBJ   := $(REL_OBJ) $(CORE_OBJ)
# The fine-tuning engine's network again in double precision (its symbols
# end in _f64), linked into the test runner: the trainer suite checks its
# gradients against finite differences in double (ext/encoder/train_net.h).
TRAIN64_OBJ  := $(patsubst ext/%.c,$(BUILD)/test64/%.o,$(wildcard ext/encoder/train_*.c))

ifeq ($(V),1)
Q :=
else
Q := @
endif
# $(call compile,FLAGS): $< to $@ with its dependency file, saying how long it took.
define compile
	@mkdir -p $(@D)
	$(Q)t0=$$(date +%s%N); \
	$(CC) $(CFLAGS_ALL) $(1) -MMD -MP -c -o $@ $< || exit 1; \
	[ -z "$(Q)" ] || printf '  CC  %-42s %s\n' '$(patsubst $(BUILD)/%,%,$@)' \
	    "$$(awk -v t0=$$t0 -v t1=$$(date +%s%N) 'BEGIN { printf "%.1f s", (t1 - t0) / 1e9 }')"
endef

.PHONY: all static test examples layers demo bench bench-train bench-fine-tune bench-tokenizer bench-kernels bench-vec install uninstall clean deps build-deps sqlite-vec test-dqlite test-arm64
.PHONY: python-package node-package test-packages
all: $(EXT_LIB)

deps:
	@sh tests/check_deps.sh

build-deps:
	@sh tests/check_deps.sh build

# build-deps is order-only (after the |): it runs before compiling, but its
# being phony does not make the targets out of date.
$(BUILD)/rel/%.o: ext/%.c | build-deps
	$(call compile,$(RELEASE) -fPIC -fvisibility=hidden)
$(BUILD)/loadable/%.o: ext/%.c | build-deps
	$(call compile,$(RELEASE) -fPIC -fvisibility=hidden)
$(BUILD)/core/%.o: ext/%.c | build-deps
	$(call compile,$(RELEASE) -fPIC -fvisibility=hidden -DSQLITE_CORE)
$(BUILD)/test/%.o: ext/%.c | build-deps
	$(call compile,-DSQLITE_CORE)
$(BUILD)/test/tests/%.o: tests/%.c | build-deps
	$(call compile,-DSQLITE_CORE)
$(BUILD)/test64/%.o: ext/%.c | build-deps
	$(call compile,-DSQLITE_CORE -DBERT_TRAIN_DOUBLE)

-include $(wildcard $(BUILD)/*/*/*.d $(BUILD)/*/*/*/*.d)

bert.so bert.dylib: $(REL_OBJ) $(LOADABLE_OBJ)
	$(Q)$(CC) $(OPT) $(SAN) $(SHARED) -o $@ $^ $(LIBS) $(LDFLAGS)
	@[ -z "$(Q)" ] || echo "  LD  $@"

# For applications that link the extension in (SQLITE_CORE: direct calls to
# SQLite, no routine table); include ext/sql/sqlite_bert.h.
libsqlite_bert.a: $(STATIC_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^
	@[ -z "$(Q)" ] || echo "  AR  $@"

static: libsqlite_bert.a

# The README's "linked into the application" example, run by the test suite.
$(BUILD)/static_app: tests/c_app/static_app.c libsqlite_bert.a ext/sql/sqlite_bert.h | build-deps
	$(Q)$(CC) $(CFLAGS_ALL) -Iext/sql -o $@ tests/c_app/static_app.c libsqlite_bert.a -lsqlite3 $(LIBS) $(LDFLAGS)
	@[ -z "$(Q)" ] || echo "  LD  $@"

# The test runner links the extension's sources directly (SQLITE_CORE), so
# sanitizers see every line of it.
$(BUILD)/run_tests: $(TEST_OBJ) $(TRAIN64_OBJ)
	$(Q)$(CC) $(OPT) $(SAN) -o $@ $^ -lsqlite3 $(LIBS) $(LDFLAGS) $(COUNT_ALLOCS)
	@[ -z "$(Q)" ] || echo "  LD  $@"

# Random-weight models in the Hugging Face layout; tests/golden/ holds what
# an independent PyTorch implementation computes from the very same bytes.
$(MODELS): tests/tools/gen_model.c tests/tools/make_test_models.sh tests/fixtures/bert-base-uncased/vocab.txt \
           tests/fixtures/bpe-bytelevel/tokenizer.json tests/fixtures/unigram-xlmr/tokenizer.json \
           tests/fixtures/deberta-v3/tokenizer.json \
           tests/golden/make_encoder_models.py | build-deps
	sh tests/tools/make_test_models.sh build/models
	@touch $@

# One BLAS thread by default: the test models are small, and idle OpenBLAS
# workers spinning between calls would only slow the suite down.
# Which ext/ headers each layer may include (the rules are in the script).
layers:
	@sh tests/check_layers.sh

test: deps layers bert.so $(BUILD)/run_tests $(BUILD)/static_app $(MODELS)
	OPENBLAS_NUM_THREADS=$${OPENBLAS_NUM_THREADS:-1} $(BUILD)/run_tests $(SUITE)

# dqlite replicates pages: the leader computes, followers store the bytes.
test-dqlite: bert.so libsqlite_bert.a
	sh tests/dqlite/run.sh

# JOBS picks CPU:SUITE runs (default: the kernel-checking suites on three emulated CPUs).
test-arm64:
	sh tests/arm64/run.sh $(JOBS)

demo: deps bert.so
	sqlite3 -bail :memory: < sql/demo.sql

# entities.sql and answers.sql run on generated models; the vector examples
# load sqlite-vec.
examples: deps bert.so $(MODELS) vec0.so
	@echo "examples: run any of them with sqlite3 < sql/NAME.sql"

# The benchmarks link the static library's objects (SQLITE_CORE, $(RELEASE)).
$(BUILD)/bench_tokenizer: tests/bench/bench_tokenizer.c libsqlite_bert.a | build-deps
	$(CC) $(CFLAGS_ALL) $(RELEASE) -DSQLITE_CORE -o $@ tests/bench/bench_tokenizer.c libsqlite_bert.a -lsqlite3 $(LIBS) $(LDFLAGS)

bench-tokenizer: $(BUILD)/bench_tokenizer
	$(BUILD)/bench_tokenizer

$(BUILD)/bench_kernels: tests/bench/bench_kernels.c tests/bench/bench_clock.h libsqlite_bert.a | build-deps
	$(CC) $(CFLAGS_ALL) $(RELEASE) -DSQLITE_CORE -o $@ tests/bench/bench_kernels.c libsqlite_bert.a -lsqlite3 $(LIBS) $(LDFLAGS)

# Pinned to one core, with OpenBLAS's own choice of kernels for this CPU.
bench-kernels: $(BUILD)/bench_kernels
	env -u OPENBLAS_CORETYPE taskset -c 1 $(BUILD)/bench_kernels

# Fine-tuning beside PyTorch (tests/bench/train_bench.sh; not part of test).
$(BUILD)/bench_train: tests/bench/bench_train.c tests/bench/bench_clock.h libsqlite_bert.a | build-deps
	$(CC) $(CFLAGS_ALL) $(RELEASE) -DSQLITE_CORE -o $@ tests/bench/bench_train.c libsqlite_bert.a -lsqlite3 $(LIBS) $(LDFLAGS)

bench-train: $(BUILD)/bench_train
	sh tests/bench/train_bench.sh

bench: bert.so $(BUILD)/bench_tokenizer vec0.so
	sh tests/bench/run.sh
	sh tests/bench/vec_bench.sh

# The intents example fine-tuned by bert_train and by PyTorch (Trainer's recipe).
bench-fine-tune: bert.so
	/usr/bin/python3 tests/bench/fine_tune_parity.py

# 100,000 generated rows: embedding, the vec0 index, brute force against KNN.
bench-vec: bert.so vec0.so
	sh tests/bench/vec_bench.sh

# sqlite-vec (https://github.com/asg017/sqlite-vec) ships its loadable
# extension in npm platform packages (sqlite-vec-linux-x64 and others); the
# install runs no package scripts.  ./vec0.so is what `.load ./vec0` finds.
SQLITE_VEC_VERSION ?= 0.1.9
VEC_DIR := build/sqlite-vec
vec0.so:
	@command -v npm >/dev/null || { echo "make sqlite-vec: npm is needed (apt-get install npm)" >&2; exit 1; }
	@mkdir -p $(VEC_DIR)
	npm install --prefix $(VEC_DIR) --ignore-scripts --no-audit --no-fund --no-save sqlite-vec@$(SQLITE_VEC_VERSION)
	@so=$$(find $(VEC_DIR)/node_modules -path '*/sqlite-vec-*/vec0.so' | head -n 1); \
	 if [ -z "$$so" ]; then echo "make sqlite-vec: the npm package has no vec0.so for this platform ($$(uname -sm))" >&2; exit 1; fi; \
	 cp "$$so" $@
	@echo "vec0.so: sqlite-vec $(SQLITE_VEC_VERSION)"

sqlite-vec: vec0.so

# sqlite-bert.pc describes the static library: its dependencies are needed
# on every link, so they are public (Requires, Libs), and a plain
# `pkg-config --cflags --libs sqlite-bert` links.  A dependency without a .pc
# file of its own (older systems) is named as a plain -l flag instead.
# Paths under the prefix are written relative to it (${prefix}/lib), so that
# `pkg-config --define-prefix` finds a tree installed with DESTDIR.
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
PC_LIBDIR     = $(patsubst $(PREFIX)/%,$${prefix}/%,$(LIBDIR))
PC_INCLUDEDIR = $(patsubst $(PREFIX)/%,$${prefix}/%,$(INCLUDEDIR))
$(BUILD)/sqlite-bert.pc: ext/sql/sqlite-bert.pc.in ext/sql/sqlite_bert.h FORCE
	@mkdir -p $(BUILD)
	@req=sqlite3; libs=; \
	 for p in openblas:-lopenblas libutf8proc:-lutf8proc; do \
	     if pkg-config --exists $${p%%:*} 2>/dev/null; then req="$$req $${p%%:*}"; else libs="$$libs $${p#*:}"; fi; \
	 done; \
	 sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(PC_LIBDIR)|' -e 's|@INCLUDEDIR@|$(PC_INCLUDEDIR)|' \
	     -e 's|@VERSION@|$(VERSION)|' -e "s|@REQUIRES@|$$req|" -e "s|@DEPLIBS@|$$libs|" \
	     ext/sql/sqlite-bert.pc.in > $@.tmp && mv $@.tmp $@

install: $(EXT_LIB) libsqlite_bert.a $(BUILD)/sqlite-bert.pc
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(PKGCONFIGDIR)
	install -m 644 $(EXT_LIB) $(DESTDIR)$(LIBDIR)/$(EXT_LIB)
	install -m 644 libsqlite_bert.a $(DESTDIR)$(LIBDIR)/libsqlite_bert.a
	install -m 644 ext/sql/sqlite_bert.h $(DESTDIR)$(INCLUDEDIR)/sqlite_bert.h
	install -m 644 $(BUILD)/sqlite-bert.pc $(DESTDIR)$(PKGCONFIGDIR)/sqlite-bert.pc

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/$(EXT_LIB) $(DESTDIR)$(LIBDIR)/libsqlite_bert.a $(DESTDIR)$(INCLUDEDIR)/sqlite_bert.h \
	      $(DESTDIR)$(PKGCONFIGDIR)/sqlite-bert.pc

# The Python package (ext/python/): its sdist carries the C sources (and the
# demo model, model/demo/ as sqlite_bert/demo_model/) and
# builds them with the user's compiler and libraries; the wheel is built from
# that sdist, the way pip would.  The sdist is staged in $(BUILD)/python
# because setuptools packages only files under the project folder.
PYTHON  ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)
PY_STAGE := $(BUILD)/python
DIST    := $(BUILD)/dist
python-package: | build-deps
	rm -rf $(PY_STAGE) $(DIST)/sqlite_bert-* $(DIST)/sqlite-bert-*.tar.gz
	mkdir -p $(PY_STAGE)/csrc $(DIST)
	cp -R ext/python/. $(PY_STAGE)/
	cd ext && cp --parents $(patsubst ext/%,%,$(EXT_SRC) $(EXT_HDR)) $(CURDIR)/$(PY_STAGE)/csrc/
	cp README.md $(PY_STAGE)/README.md
	cp -R model/demo $(PY_STAGE)/sqlite_bert/demo_model
	cd $(PY_STAGE) && $(PYTHON) setup.py -q sdist -d $(CURDIR)/$(DIST)
	$(PYTHON) -m pip wheel -q --no-deps --no-build-isolation --no-index -w $(DIST) $(DIST)/sqlite-bert-$(VERSION).tar.gz
	@ls -1 $(DIST)/sqlite-bert-$(VERSION).tar.gz $(DIST)/sqlite_bert-$(VERSION)-*.whl

# The npm package (ext/node/) ships the extension prebuilt for the platform
# that packs it, in prebuilt/<platform>-<arch>/, as built by this Makefile,
# and the demo model (model/demo/) in demo-model/.
NODE_STAGE := $(BUILD)/node
node-package: $(EXT_LIB)
	@command -v npm >/dev/null || { echo "make node-package: npm is needed (apt-get install npm)" >&2; exit 1; }
	rm -rf $(NODE_STAGE) $(DIST)/sqlite-bert-$(VERSION).tgz
	mkdir -p $(NODE_STAGE) $(DIST)
	cp -R ext/node/. $(NODE_STAGE)/
	cp README.md $(NODE_STAGE)/README.md
	cp -R model/demo $(NODE_STAGE)/demo-model
	plat=$$(node -p 'process.platform + "-" + process.arch') && mkdir -p $(NODE_STAGE)/prebuilt/$$plat && \
	    cp $(EXT_LIB) $(NODE_STAGE)/prebuilt/$$plat/
	cd $(NODE_STAGE) && npm pkg set version=$(VERSION) && npm pack --silent --pack-destination $(CURDIR)/$(DIST)
	@ls -1 $(DIST)/sqlite-bert-$(VERSION).tgz

# Both packages installed into fresh places and used, a C program built
# through pkg-config after `make install DESTDIR=...`, and the model fetcher
# against a hub served on 127.0.0.1.
test-packages: python-package node-package $(MODELS)
	sh tests/packages/run.sh

FORCE:

clean:
	rm -rf bert.so libsqlite_bert.a vec0.so $(BUILD)

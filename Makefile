# sqlite-bert: BERT inside SQLite.
#
#   make            build bert.so (the loadable extension)
#   make demo       run sql/demo.sql in the sqlite3 shell
#   make test       run the test suite (ends with "N passed, N failed")
#   make bench      speed measurements (installs its peers, not part of test)
#   make bench-kernels  GFLOP/s of the float32, bfloat16 and int8 projection
#                   kernels on bert-base and MiniLM shapes, one thread
#   make static     build libsqlite_bert.a, to link into an application
#   make install    copy bert.so, libsqlite_bert.a and sqlite_bert.h under $(DESTDIR)$(PREFIX)
#   make deps       check (and as root, install) the Debian packages needed
#   make test-dqlite  the extension in a three-node dqlite cluster on 127.0.0.1
#                   (needs libdqlite-dev; not part of make test)
#   make test-arm64 cross-compiled for arm64 and run under qemu, on emulated
#                   CPUs with and without the dot-product instructions
#                   (tests/arm64/run.sh; Debian x86-64; not part of make test)
#   make sqlite-vec fetch sqlite-vec's loadable vec0.so (npm) to ./vec0.so, for
#                   the vector-index examples and tests (sql/vector_search.sql)
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

WARN    := -std=c11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wvla
DEFS    := -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
CFLAGS_ALL := $(OPT) $(SAN) $(WARN) $(DEFS) $(PKG_CFLAGS) $(CFLAGS)
LIBS    := $(PKG_LIBS) -lpthread -lm

EXT_SRC   := $(wildcard ext/*.c)
# The test runner counts the extension's own allocations (tests/test_main.c).
COUNT_ALLOCS := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,--wrap=strndup
EXT_HDR   := $(wildcard ext/*.h)
TEST_SRC  := $(wildcard tests/test_*.c)
MODELS    := build/models/.done

.PHONY: all static test demo bench bench-tokenizer bench-kernels bench-vec install uninstall clean deps build-deps sqlite-vec test-dqlite test-arm64
all: bert.so

deps:
	@sh tests/check_deps.sh

build-deps:
	@sh tests/check_deps.sh build

# build-deps is order-only (after the |): it runs before compiling, but its
# being phony does not make the targets out of date.
bert.so: $(EXT_SRC) $(EXT_HDR) | build-deps
	$(CC) $(CFLAGS_ALL) -fPIC -shared -fvisibility=hidden -o $@ $(EXT_SRC) $(LIBS) $(LDFLAGS)

# For applications that link the extension in (SQLITE_CORE: direct calls to
# SQLite, no routine table); include ext/sqlite_bert.h.
STATIC_OBJ := $(patsubst ext/%.c,$(BUILD)/static/%.o,$(EXT_SRC))
$(BUILD)/static/%.o: ext/%.c $(EXT_HDR) | build-deps
	@mkdir -p $(BUILD)/static
	$(CC) $(CFLAGS_ALL) -DSQLITE_CORE -c -o $@ $<

libsqlite_bert.a: $(STATIC_OBJ)
	rm -f $@
	ar rcs $@ $(STATIC_OBJ)

static: libsqlite_bert.a

# The README's "linked into the application" example, run by the test suite.
$(BUILD)/static_app: tests/c_app/static_app.c libsqlite_bert.a ext/sqlite_bert.h | build-deps
	$(CC) $(CFLAGS_ALL) -Iext -o $@ tests/c_app/static_app.c libsqlite_bert.a -lsqlite3 $(LIBS) $(LDFLAGS)

# The test runner links the extension's sources directly (SQLITE_CORE), so
# sanitizers see every line of it.
$(BUILD)/run_tests: $(EXT_SRC) $(EXT_HDR) $(TEST_SRC) $(wildcard tests/*.h) | build-deps
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS_ALL) -DSQLITE_CORE -o $@ $(TEST_SRC) $(EXT_SRC) -lsqlite3 $(LIBS) $(LDFLAGS) $(COUNT_ALLOCS)

# Random-weight models in the Hugging Face layout; tests/golden/ holds what
# an independent PyTorch implementation computes from the very same bytes.
$(MODELS): tests/tools/gen_model.c tests/tools/make_test_models.sh tests/fixtures/bert-base-uncased/vocab.txt | build-deps
	sh tests/tools/make_test_models.sh build/models
	@touch $@

# One BLAS thread by default: the test models are small, and idle OpenBLAS
# workers spinning between calls would only slow the suite down.
test: deps bert.so $(BUILD)/run_tests $(BUILD)/static_app $(MODELS)
	OPENBLAS_NUM_THREADS=$${OPENBLAS_NUM_THREADS:-1} $(BUILD)/run_tests $(SUITE)

# dqlite replicates pages: the leader computes, followers store the bytes.
test-dqlite: bert.so libsqlite_bert.a
	sh tests/dqlite/run.sh

# SUITE picks suites (default: the kernel, precision, golden and SQL ones).
test-arm64:
	sh tests/arm64/run.sh $(SUITE)

demo: deps bert.so
	sqlite3 -bail :memory: < sql/demo.sql

$(BUILD)/bench_tokenizer: tests/bench/bench_tokenizer.c $(EXT_SRC) $(EXT_HDR) | build-deps
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS_ALL) -DSQLITE_CORE -o $@ tests/bench/bench_tokenizer.c $(EXT_SRC) -lsqlite3 $(LIBS) $(LDFLAGS)

bench-tokenizer: $(BUILD)/bench_tokenizer
	$(BUILD)/bench_tokenizer

$(BUILD)/bench_kernels: tests/bench/bench_kernels.c tests/bench/bench_clock.h $(EXT_SRC) $(EXT_HDR) | build-deps
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS_ALL) -DSQLITE_CORE -o $@ tests/bench/bench_kernels.c $(EXT_SRC) -lsqlite3 $(LIBS) $(LDFLAGS)

# Pinned to one core, with OpenBLAS's own choice of kernels for this CPU.
bench-kernels: $(BUILD)/bench_kernels
	env -u OPENBLAS_CORETYPE taskset -c 1 $(BUILD)/bench_kernels

bench: bert.so $(BUILD)/bench_tokenizer vec0.so
	sh tests/bench/run.sh
	sh tests/bench/vec_bench.sh

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
	cd $(VEC_DIR) && npm install --ignore-scripts --no-audit --no-fund --no-save sqlite-vec@$(SQLITE_VEC_VERSION)
	@so=$$(find $(VEC_DIR)/node_modules -path '*/sqlite-vec-*/vec0.so' | head -n 1); \
	 if [ -z "$$so" ]; then echo "make sqlite-vec: the npm package has no vec0.so for this platform ($$(uname -sm))" >&2; exit 1; fi; \
	 cp "$$so" $@
	@echo "vec0.so: sqlite-vec $(SQLITE_VEC_VERSION)"

sqlite-vec: vec0.so

install: bert.so libsqlite_bert.a
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR)
	install -m 644 bert.so $(DESTDIR)$(LIBDIR)/bert.so
	install -m 644 libsqlite_bert.a $(DESTDIR)$(LIBDIR)/libsqlite_bert.a
	install -m 644 ext/sqlite_bert.h $(DESTDIR)$(INCLUDEDIR)/sqlite_bert.h

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/bert.so $(DESTDIR)$(LIBDIR)/libsqlite_bert.a $(DESTDIR)$(INCLUDEDIR)/sqlite_bert.h

clean:
	rm -rf bert.so libsqlite_bert.a vec0.so $(BUILD)

# sqlite-bert: BERT inside SQLite.
#
#   make            build bert.so (the loadable extension)
#   make demo       run sql/demo.sql in the sqlite3 shell
#   make test       run the test suite (ends with "N passed, N failed")
#   make bench      speed measurements (installs its peers, not part of test)
#   make install    copy bert.so to $(DESTDIR)$(LIBDIR)
#   make deps       check (and as root, install) the Debian packages needed

CC      ?= cc
PREFIX  ?= /usr/local
LIBDIR  ?= $(PREFIX)/lib
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

.PHONY: all test demo bench bench-tokenizer install uninstall clean deps
all: bert.so

deps:
	@sh tests/check_deps.sh

bert.so: $(EXT_SRC) $(EXT_HDR)
	$(CC) $(CFLAGS_ALL) -fPIC -shared -fvisibility=hidden -o $@ $(EXT_SRC) $(LIBS) $(LDFLAGS)

# The test runner links the extension's sources directly (SQLITE_CORE), so
# sanitizers see every line of it.
$(BUILD)/run_tests: $(EXT_SRC) $(EXT_HDR) $(TEST_SRC) tests/test.h
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS_ALL) -DSQLITE_CORE -o $@ $(TEST_SRC) $(EXT_SRC) -lsqlite3 $(LIBS) $(LDFLAGS) $(COUNT_ALLOCS)

# Random-weight models in the Hugging Face layout; tests/golden/ holds what
# an independent PyTorch implementation computes from the very same bytes.
$(MODELS): tests/tools/gen_model.c tests/tools/make_test_models.sh tests/fixtures/bert-base-uncased/vocab.txt
	sh tests/tools/make_test_models.sh build/models
	@touch $@

# One BLAS thread by default: the test models are small, and idle OpenBLAS
# workers spinning between calls would only slow the suite down.
test: deps bert.so $(BUILD)/run_tests $(MODELS)
	OPENBLAS_NUM_THREADS=$${OPENBLAS_NUM_THREADS:-1} $(BUILD)/run_tests $(SUITE)

demo: deps bert.so
	sqlite3 -bail :memory: < sql/demo.sql

$(BUILD)/bench_tokenizer: tests/bench/bench_tokenizer.c $(EXT_SRC) $(EXT_HDR)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS_ALL) -DSQLITE_CORE -o $@ tests/bench/bench_tokenizer.c $(EXT_SRC) -lsqlite3 $(LIBS) $(LDFLAGS)

bench-tokenizer: $(BUILD)/bench_tokenizer
	$(BUILD)/bench_tokenizer

bench: bert.so $(BUILD)/bench_tokenizer
	sh tests/bench/run.sh

install: bert.so
	install -d $(DESTDIR)$(LIBDIR)
	install -m 644 bert.so $(DESTDIR)$(LIBDIR)/bert.so

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/bert.so

clean:
	rm -rf bert.so $(BUILD)

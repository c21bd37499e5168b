# sqlite-bert: BERT inside SQLite.  `make` builds bert.so; `make test` runs the suite.

CC      ?= cc
PREFIX  ?= /usr/local
LIBDIR  ?= $(PREFIX)/lib
PKGS    := sqlite3 openblas libutf8proc
OPT     ?= -O2 -g
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

EXT_SRC   := $(wildcard ext/*.c)
EXT_HDR   := $(wildcard ext/*.h)
TEST_SRC  := $(wildcard tests/test_*.c)

.PHONY: all test clean
all: bert.so

bert.so: $(EXT_SRC) $(EXT_HDR)
	$(CC) $(CFLAGS_ALL) -fPIC -shared -fvisibility=hidden -o $@ $(EXT_SRC) $(PKG_LIBS) -lpthread -lm $(LDFLAGS)

# The test runner links the extension's sources directly (SQLITE_CORE), so
# sanitizers see every line of it.
$(BUILD)/run_tests: $(EXT_SRC) $(EXT_HDR) $(TEST_SRC) tests/test.h
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS_ALL) -DSQLITE_CORE -o $@ $(TEST_SRC) $(EXT_SRC) -lsqlite3 $(PKG_LIBS) -lpthread -lm $(LDFLAGS)

test: bert.so $(BUILD)/run_tests
	$(BUILD)/run_tests $(SUITE)

clean:
	rm -rf bert.so $(BUILD)

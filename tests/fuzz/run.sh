#!/bin/sh
# run.sh TARGET SECONDS [libFuzzer options...]
#
# Builds tests/fuzz/fuzz_TARGET.c with the extension's sources under clang's
# libFuzzer, AddressSanitizer and UndefinedBehaviorSanitizer, and fuzzes it
# for SECONDS on one core (SECONDS 0: build only, so that targets built one
# after another can then run side by side).  TARGET is tokenizer, safetensors, json_config or
# sql.  The committed seeds in tests/fuzz/corpus/TARGET are read, never
# written; what the run learns goes to build/fuzz/corpus/TARGET, and an input
# that crashes, leaks, hangs or breaks an invariant to build/fuzz/artifacts/.
#
# Needs clang and its fuzzer runtime (Debian: clang, libclang-rt-14-dev) and
# the test models (make test, or make build/models/.done).  The extension's
# objects are compiled once, two at a time, into build/fuzz/static/ and shared
# by the four targets; make recompiles only what changed.  CLANG=clang-14
# picks the compiler.
set -eu

if [ $# -lt 2 ]; then
    echo "usage: $0 TARGET SECONDS [libFuzzer options]   (TARGET: tokenizer safetensors json_config sql)" >&2
    exit 2
fi
target=$1
seconds=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"

src=tests/fuzz/fuzz_$target.c
if [ ! -f "$src" ]; then
    echo "$0: no fuzz target $src" >&2
    exit 2
fi
clang=${CLANG:-clang}
if ! command -v "$clang" >/dev/null 2>&1; then
    echo "$0: $clang not found: apt-get install clang libclang-rt-14-dev" >&2
    exit 2
fi
if [ ! -f build/models/.done ]; then
    make build/models/.done
fi

pkgs="sqlite3 openblas libutf8proc"
cflags=$(pkg-config --cflags $pkgs 2>/dev/null || true)
libs=$(pkg-config --libs openblas libutf8proc 2>/dev/null || echo "-lopenblas -lutf8proc")

mkdir -p build/fuzz/corpus/"$target" build/fuzz/artifacts
# This target's scratch directories only: another target may be running.
rm -rf build/fuzz/scratch/"$target".*
bin=build/fuzz/fuzz_$target
# fuzzer-no-link: the objects get libFuzzer's coverage hooks; only the target
# links its main.  -Wno-unused-command-line-argument: pkg-config's flags are
# shared with gcc.  RELEASE=: the objects keep their assert()s, so that a
# broken invariant is a finding.
san="-fsanitize=address,undefined -fno-sanitize-recover=all"
# The static library's objects (SQLITE_CORE), as `make static` lays them out.
objs=$(for f in ext/*/*.c; do
           case "$f" in ext/sql/*|ext/base/json.c) tree=core ;; *) tree=rel ;; esac
           f=${f#ext/}; printf 'build/fuzz/%s/%s.o ' "$tree" "${f%.c}"
       done)
make -s -j2 BUILD=build/fuzz CC="$clang" OPT="-g -O1 -fno-omit-frame-pointer" RELEASE= \
    SAN="-fsanitize=fuzzer-no-link $san" CFLAGS=-Wno-unused-command-line-argument $objs
"$clang" -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer $san \
    -std=c11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wvla -Wno-unused-command-line-argument \
    -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -DSQLITE_CORE $cflags \
    -o "$bin" "$src" $objs -lsqlite3 $libs -lpthread -lm

[ "$seconds" = 0 ] && exit 0

dict=
if [ -f tests/fuzz/$target.dict ]; then dict=-dict=tests/fuzz/$target.dict; fi
# One BLAS thread: the machine's other core belongs to whoever else runs.
OPENBLAS_NUM_THREADS=1 \
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
"$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix=build/fuzz/artifacts/"$target"- $dict "$@" \
    build/fuzz/corpus/"$target" tests/fuzz/corpus/"$target"

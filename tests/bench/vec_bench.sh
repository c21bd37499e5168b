#!/bin/sh
# vec_bench.sh - `make bench` (and `make bench-vec`): 100,000 generated rows
# embedded with the demo model, indexed with sqlite-vec, queried by brute
# force and by vec0 KNN (tests/bench/bench_vec.c).
#
#   sh tests/bench/vec_bench.sh      (needs ./bert.so and ./vec0.so:
#                                     make && make sqlite-vec)
# Environment:
#   VEC_BENCH_ROWS     rows (default 100000; the embedding takes about a
#                      minute on one core)
#   VEC_BENCH_QUERIES  queries, each timed once per method (default 20)
#   VEC_BENCH_MODEL    model directory (default model/demo)
#   OPENBLAS_NUM_THREADS  BLAS threads for the embedding (default 1)
# Writes build/bench/vec.txt.
set -eu

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
rows=${VEC_BENCH_ROWS:-100000}
queries=${VEC_BENCH_QUERIES:-20}
model=${VEC_BENCH_MODEL:-model/demo}
OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
export OPENBLAS_NUM_THREADS
CC=${CC:-cc}

for f in bert.so vec0.so; do
    if [ ! -f "$f" ]; then
        echo "vec_bench.sh: no ./$f: make bert.so vec0.so" >&2
        exit 1
    fi
done
mkdir -p build/bench
$CC -std=c11 -O2 -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L \
    -o build/bench/bench_vec tests/bench/bench_vec.c -lsqlite3
echo "== vector search: $rows rows, $model, OPENBLAS_NUM_THREADS=$OPENBLAS_NUM_THREADS," \
     "sqlite-vec $(sqlite3 :memory: '.load ./vec0' 'SELECT vec_version()'), SQLite $(sqlite3 --version | cut -d' ' -f1)"
status=0
build/bench/bench_vec ./bert.so ./vec0.so "$model" tests/bench/sentences.txt "$rows" "$queries" \
    > build/bench/vec.txt || status=$?
cat build/bench/vec.txt
exit $status

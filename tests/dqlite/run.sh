#!/bin/sh
# run.sh - the extension in a dqlite cluster: three nodes on 127.0.0.1,
# checked by tests/dqlite/check.py (see there for what it shows).
#
#   sh tests/dqlite/run.sh          (after make bert.so libsqlite_bert.a)
#
# Needs Debian's libdqlite-dev (apt-get install libdqlite-dev) and
# /usr/bin/python3.  Bounded: the check is killed after 120 s.
set -eu

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=build/dqlite
rm -rf "$out"
mkdir -p "$out/1" "$out/2" "$out/3"

pkg-config --exists dqlite || { echo "dqlite: libdqlite-dev is not installed" >&2; exit 1; }
${CC:-cc} -std=c11 -O2 -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L -Iext/sql \
    -o "$out/node" tests/dqlite/node.c libsqlite_bert.a \
    $(pkg-config --cflags --libs dqlite) -lsqlite3 \
    $(pkg-config --libs openblas libutf8proc 2>/dev/null || echo -lopenblas -lutf8proc) -lpthread -lm

# Three free loopback ports.
ports=$(/usr/bin/python3 -c '
import socket
ss = [socket.socket() for _ in range(3)]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))
for s in ss: s.close()')
set -- $ports
a1=127.0.0.1:$1 a2=127.0.0.1:$2 a3=127.0.0.1:$3

pids=""
cleanup() {
    for pid in $pids; do kill "$pid" 2>/dev/null || true; done
    for pid in $pids; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT INT TERM

export BERT_MODEL=model/demo OPENBLAS_NUM_THREADS=1
"$out/node" 1 "$a1" "$out/1" --with-bert 2>> "$out/log.txt" & pids="$pids $!"
"$out/node" 2 "$a2" "$out/2" --with-bert 2>> "$out/log.txt" & pids="$pids $!"
"$out/node" 3 "$a3" "$out/3" 2>> "$out/log.txt" & pids="$pids $!"

status=0
timeout 120 /usr/bin/python3 tests/dqlite/check.py "$a1" "$a2" "$a3" ./bert.so model/demo || status=$?
if [ $status != 0 ]; then
    echo "dqlite: the check failed (status $status); the nodes' log:" >&2
    tail -n 20 "$out/log.txt" >&2
fi
exit $status

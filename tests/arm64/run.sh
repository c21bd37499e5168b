#!/bin/sh
# run.sh [CPU:SUITE...] - test suites on arm64, from an x86-64 Debian
# machine: cross-compiled with Debian's cross compiler against Debian's
# arm64 libraries, run under qemu's user emulation on emulated CPUs: qemu's
# "max" (dot-product, matrix-multiply and bfloat16 instructions),
# neoverse-n1 (dot products only) and cortex-a53 (none of them), so that
# the NEON kernels of those extensions and their fallbacks run.
#
# Emulation is 30 to 120 times slower than native: the suites run light
# (BERT_TEST_LIGHT: small shapes, four sentences, a ninth of the golden
# embedding lines), two at a time, each under `timeout` (ARM64_TIMEOUT
# seconds, default 900) so that a hang fails quickly, with each case's
# wall-clock and CPU time in its log (BERT_TEST_TIMES).  Default jobs: the
# precision, golden, kernels, lowp and kernel_choice suites on each of the
# three CPUs; e.g. `run.sh max:kernels cortex-a53:lowp` for a few.
#
# As root it installs what is missing (apt-get, arm64 added to dpkg's
# architectures); otherwise it prints the command to run.  Logs go to
# build/arm64/CPU-SUITE.log; exits non-zero when a suite fails, times out
# or skips a case for another reason than a kernel the emulated CPU cannot
# run.
set -eu
cd "$(dirname "$0")/../.."
root=$(pwd)
# By default every suite that checks kernels, on each of the three CPUs,
# ordered so that the two lanes below (the odd and the even places) take
# about the same CPU time: measured under qemu, precision 58 s on max (its
# bfloat16 instructions are emulated slowly) and 21 s elsewhere, golden
# 31 s, kernels 14 s, lowp and kernel_choice about 1 s.
default_jobs="max:precision neoverse-n1:precision neoverse-n1:golden cortex-a53:precision
    cortex-a53:kernels max:golden neoverse-n1:kernels cortex-a53:golden max:lowp max:kernels
    neoverse-n1:lowp cortex-a53:lowp max:kernel_choice neoverse-n1:kernel_choice cortex-a53:kernel_choice"
jobs=${*:-$default_jobs}
limit=${ARM64_TIMEOUT:-900}
out=build/arm64
started=$(date +%s)

packages="crossbuild-essential-arm64 qemu-user-static libc6:arm64 libsqlite3-dev:arm64 libopenblas-dev:arm64 libutf8proc-dev:arm64"
missing=""
for p in $packages; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "missing:$missing" >&2
        echo "run:  sudo dpkg --add-architecture arm64 && sudo apt-get update && sudo apt-get install -y$missing" >&2
        exit 1
    fi
    echo "installing:$missing"
    dpkg --add-architecture arm64
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
fi

# The suites find build/models and model/ relative to where they run: a
# copy of the sources of its own, so that the native build stays as it is,
# with the native build's test models (bytes, the same on every CPU).
[ -f build/models/.done ] || make build/models/.done
tree=$out/tree
rm -rf "$tree"
mkdir -p "$tree/build"
tar cf - --exclude=./build --exclude=./.git --exclude=./model --exclude='./*.so' --exclude=./libsqlite_bert.a . |
    (cd "$tree" && tar xf -)
ln -s "$root/model" "$tree/model"
ln -s "$root/build/models" "$tree/build/models"

# Without PKG_CONFIG_LIBDIR pkg-config would hand over the x86-64 OpenBLAS headers.
PKG_CONFIG_LIBDIR=/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig \
    make -s -j2 -C "$tree" CC=aarch64-linux-gnu-gcc build/run_tests
echo "arm64: cross-built in $(( $(date +%s) - started )) s"

# One emulated run: CPU SUITE, with the features /proc/cpuinfo would list
# on that CPU (kernel_choice checks the kernels chosen against them).
run_one() {
    case $1 in
        max) features="asimd asimddp i8mm bf16" ;;
        neoverse-n1 | cortex-a76) features="asimd asimddp" ;;
        *) features="asimd" ;;
    esac
    log=$root/$out/$1-$2.log
    t0=$(date +%s)
    # CPU seconds too: on a shared machine the wall-clock time says little.
    timer=""
    [ -x /usr/bin/time ] && timer="/usr/bin/time -f cpu=%U+%S"
    set +e
    # -L /: the arm64 dynamic loader and libc of the same package
    # (libc6:arm64, /lib/aarch64-linux-gnu).  With -L /usr/aarch64-linux-gnu
    # the cross toolchain's loader met the multiarch libc.so.6 of another
    # build; their private structures differ, and the first pthread_create
    # looped for ever in the loader's stack cache, so that every case with a
    # helper thread (or OpenBLAS with threads) hung until the timeout.
    (cd "$root/$tree" && BERT_TEST_LIGHT=1 BERT_TEST_TIMES=1 BERT_TEST_CPU_FEATURES="$features" OPENBLAS_NUM_THREADS=1 \
        timeout "$limit" $timer qemu-aarch64-static -L / -cpu "$1" build/run_tests "$2") > "$log" 2>&1
    echo "exit $? after $(( $(date +%s) - t0 )) s" >> "$log"
}

# Two lanes, one a core: the jobs in the order given, each lane taking
# every other one, so that a long job never leaves the other core idle
# while it waits for a pair to finish.
lane() {
    n=0
    for job in $jobs; do
        [ $((n % 2)) = "$1" ] && run_one "${job%%:*}" "${job#*:}"
        n=$((n + 1))
    done
}
lane 0 &
lane 1 &
wait

status=0
for job in $jobs; do
    log=$out/${job%%:*}-${job#*:}.log
    summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1 || true)
    cpu=$(grep '^cpu=' "$log" | tail -n 1 || true)
    echo "arm64 $job: ${summary:-no summary} ($(tail -n 1 "$log")${cpu:+, $cpu s})"
    if ! tail -n 1 "$log" | grep -q '^exit 0 ' || ! echo "$summary" | grep -q ' 0 failed'; then
        grep -E '^(FAIL|  )' "$log" | head -n 20 >&2 || true
        status=1
    fi
    if grep '^SKIP' "$log" | grep -v 'this CPU lacks the instructions' | grep -q .; then
        grep '^SKIP' "$log" | grep -v 'this CPU lacks the instructions' >&2
        status=1
    fi
done
echo "arm64: $(( $(date +%s) - started )) s in all"
exit $status

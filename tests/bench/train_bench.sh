#!/bin/sh
# train_bench.sh - `make bench-train`: fine-tuning speed and peak memory of
# the trainer (tests/bench/bench_train.c) beside PyTorch float32
# (tests/bench/torch_train_bench.py) on the same machine, the same random
# weights, batches, lengths and thread counts.
#
#   sh tests/bench/train_bench.sh     (make bench-train builds bench_train first)
#
# Environment:
#   BENCH_TRAIN_MODELS   among "minilm bert-base" (default: both)
#   BENCH_TRAIN_SHAPES   BATCHxLENGTH workloads (default "16x128 8x512")
#   BENCH_TRAIN_THREADS  thread counts (default "1 N", N the machine's cores)
#   BENCH_TRAIN_STEPS    timed steps after the warm-up step (default 3)
#   BENCH_TRAIN_ROUNDS   times each pair runs, ours and PyTorch alternating (default 1)
#   BENCH_TRAIN_OUT      where the raw lines, the log and the table go (default build/bench)
#
# Each measurement is a process of its own, so that its peak resident set
# (ru_maxrss) is its own; ours and PyTorch alternate, so that a busy
# machine slows both alike.  The models are the ones `make bench` makes
# (tests/tools/gen_model.c, bert-base and MiniLM sizes, float32) in
# build/bench/models.  Writes build/bench/train_raw.txt (every RESULT line)
# and build/bench/train_results.txt (the table it prints).
set -eu

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=build/bench
res=${BENCH_TRAIN_OUT:-$out}
cores=$(nproc)
models=${BENCH_TRAIN_MODELS:-minilm bert-base}
shapes=${BENCH_TRAIN_SHAPES:-16x128 8x512}
thread_counts=${BENCH_TRAIN_THREADS:-1 $cores}
steps=${BENCH_TRAIN_STEPS:-3}
rounds=${BENCH_TRAIN_ROUNDS:-1}
vocab=${BERT_TEST_VOCAB:-tests/fixtures/bert-base-uncased/vocab.txt}
python=/usr/bin/python3
bench=${BENCH_TRAIN_PROGRAM:-build/bench_train}

[ -x "$bench" ] || { echo "train_bench.sh: no $bench: run make bench-train" >&2; exit 1; }
mkdir -p "$out/models"
mkdir -p "$res"
raw=$res/train_raw.txt
log=$res/train_log.txt
: > "$raw"
: > "$log"

# OpenBLAS under both (torch's BLAS on Debian) and OpenMP: the thread count is set per run.
cc -std=c11 -O2 -ffp-contract=off -o "$out/gen_model" tests/tools/gen_model.c -lm
make_model() {    # NAME, then gen_model options (run.sh's)
    name=$1
    shift
    dir=$out/models/$name
    stamp="$(cksum < tests/tools/gen_model.c) $(cksum < "$vocab") $*"
    if [ -f "$dir/.made" ] && [ "$(cat "$dir/.made")" = "$stamp" ]; then
        return
    fi
    rm -rf "$dir"
    "$out/gen_model" "$dir" --vocab "$vocab" --max-positions 512 --dtype f32 "$@" >> "$log"
    echo "$stamp" > "$dir/.made"
}
for m in $models; do
    case $m in
        bert-base) make_model bert-base --seed 101 --layers 12 --hidden 768 --heads 12 --intermediate 3072 ;;
        minilm) make_model minilm --seed 102 --layers 6 --hidden 384 --heads 12 --intermediate 1536 \
                    --st-pooling mean --normalize --max-seq-length 256 ;;
        *) echo "train_bench.sh: unknown model $m (minilm, bert-base)" >&2; exit 2 ;;
    esac
done

have_torch=1
$python -c 'import torch' 2>/dev/null || { have_torch=0; echo "train_bench.sh: no python3-torch: ours alone" >&2; }

run() {   # ENGINE MODEL BATCH LENGTH THREADS
    engine=$1 m=$2 n=$3 len=$4 t=$5
    if [ "$engine" = ours ]; then
        set -- "$bench" "$out/models/$m" "$m" "$n" "$len" "$t" "$steps"
    else
        set -- "$python" tests/bench/torch_train_bench.py "$out/models/$m" "$m" "$n" "$len" "$t" "$steps"
    fi
    if OPENBLAS_NUM_THREADS=$t OMP_NUM_THREADS=$t "$@" > "$res/train_step.txt" 2>> "$log"; then
        cat "$res/train_step.txt" | tee -a "$raw"
    else
        echo "train_bench.sh: $engine $m ${n}x$len threads $t failed; see $log" >&2
    fi
}

for m in $models; do
    for shape in $shapes; do
        n=${shape%x*} len=${shape#*x}
        for t in $thread_counts; do
            r=0
            while [ $r -lt "$rounds" ]; do
                # Alternate which goes first from one round to the next.
                if [ $((r % 2)) = 0 ]; then order="ours torch"; else order="torch ours"; fi
                for e in $order; do
                    [ "$e" = torch ] && [ $have_torch = 0 ] && continue
                    run "$e" "$m" "$n" "$len" "$t"
                done
                r=$((r + 1))
            done
        done
    done
done

cpu=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1)
isa=AVX2
grep -q avx512f /proc/cpuinfo 2>/dev/null && isa=AVX-512
load=$(cut -d' ' -f1-3 /proc/loadavg)
coretype=${OPENBLAS_CORETYPE:-"chosen by OpenBLAS"}
$python - "$raw" "$cpu" "$isa" "$cores" "$load" "$coretype" <<'EOF' | tee "$res/train_results.txt"
import sys
from collections import defaultdict
raw, cpu, isa, cores, load, coretype = sys.argv[1:]
runs = defaultdict(lambda: defaultdict(list))
for line in open(raw):
    if not line.startswith("RESULT "):
        continue
    f = dict(kv.split("=", 1) for kv in line.split()[1:])
    key = (f["label"], int(f["batch"]), int(f["length"]), int(f["threads"]))
    runs[key][f["engine"]].append((float(f["examples_per_s"]), float(f["maxrss_mb"])))
print(f"Fine-tuning, float32, sequence classification: {cpu} ({isa}), {cores} cores, load average {load}, "
      f"OpenBLAS kernels: {coretype}")
print("examples/s: the best round of each; peak memory: ru_maxrss of the process (MB)")
head = f"{'model':<10} {'batch':>5} {'len':>4} {'thr':>3} | {'ours ex/s':>9} {'torch ex/s':>10} {'ratio':>6} | {'ours MB':>8} {'torch MB':>8} {'ratio':>6}"
print(head)
print("-" * len(head))
for key in sorted(runs, key=lambda k: (k[0] != "minilm", k[1] * k[2], k[2], k[3])):
    r = runs[key]
    o = max(r["ours"], default=None)
    t = max(r["torch"], default=None)
    om = min((x[1] for x in r["ours"]), default=None)
    tm = min((x[1] for x in r["torch"]), default=None)
    fmt = lambda v, p: f"{v:.{p}f}" if v is not None else "-"
    ratio = f"{o[0] / t[0]:.2f}" if o and t else "-"
    mratio = f"{om / tm:.2f}" if om and tm else "-"
    print(f"{key[0]:<10} {key[1]:>5} {key[2]:>4} {key[3]:>3} | {fmt(o and o[0], 2):>9} {fmt(t and t[0], 2):>10} {ratio:>6} | "
          f"{fmt(om, 0):>8} {fmt(tm, 0):>8} {mratio:>6}")
EOF

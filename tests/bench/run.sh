#!/bin/sh
# run.sh - `make bench`: embedding throughput of the extension against
# PyTorch, ONNX Runtime and llama.cpp, on the same random weights, the same
# sentences (tests/bench/sentences.txt) and the same thread count.
#
#   sh tests/bench/run.sh          (make bench builds bert.so first)
#
# Environment:
#   BENCH_THREADS     threads for every engine (default: all cores)
#   BENCH_SENTENCES   use only the first N sentences (default: all)
#   BENCH_MODELS      which models, among "bert-base minilm modernbert-base deberta-v3-base"
#                     (default: all four)
#   BENCH_ORT_VERSION onnxruntime-node version to install (default 1.30.0)
#   BENCH_QUERY_ROWS  stored vectors for the query-constant rows (default 100000)
#   BENCH_PRECISIONS  reduced precisions of ours beside float32 (default "bfloat16 int8")
#   BENCH_TORCH       0: PyTorch only exports the ONNX file, untimed (default 1)
#   BENCH_EXTRA       0: leaves out the rows of ours alone and the reranking (default 1)
#   BENCH_LONG        texts of about 450 tokens for bert-base, modernbert-base and
#                     deberta-v3-base (labels NAME-long): the number of texts (default 12;
#                     0 leaves the workload out)
#   BENCH_AVX2        1 (the default on a CPU with AVX-512): ours also held to AVX2
#                     (SQLITE_BERT_ISA=avx2, OPENBLAS_CORETYPE=Haswell), labels NAME@avx2
#   BENCH_LLAMA       0: leaves llama.cpp out (default 1)
#   BENCH_LLAMA_VERSION node-llama-cpp version to install (default 3.22.1)
#
# Ours runs at float32 and at each of BENCH_PRECISIONS (bert_load's
# "precision"), each in a process of its own so that its resident set
# growth (bench_embed's MEMORY line) is its own; so does the demo model
# on the same sentences.  report.py puts them in a table of their own,
# against ONNX Runtime float32 and our float32.
#
# Each workload runs ONNX Runtime twice: on the float32 ONNX file and on
# the int8 graph that onnxruntime's quantize_dynamic emits
# (DynamicQuantizeLinear + MatMulInteger, int8 weights, one scale a tensor),
# written from the float32 file by tests/bench/quantize_dynamic.py
# (Debian's python3-onnx).  The long-text workload (bert-base-long) joins
# consecutive sentences of sentences.txt into texts of about 450 tokens.
# llama.cpp runs row by row (tests/bench/llama_bench.js, through
# node-llama-cpp's prebuilt CPU binaries, never built nor downloaded at run
# time) on two GGUF files that tests/bench/gguf_write.py writes from each
# model's safetensors (architecture "bert", mean pooling, WordPiece
# vocabulary): F32, and Q8_0 (the projections and token embeddings in ggml's
# blocks of 32 int8 with a float16 scale, as llama.cpp's converter makes
# them); report.py sets them beside ours at float32 and int8.
#
# At the AVX2 level (NAME@avx2 rows) only ours runs: ONNX Runtime has no
# switch that holds its kernels to AVX2 on an AVX-512 CPU, so no peer is
# comparable there.
#
# After the peers' comparison, three sets of rows of ours alone (extra.txt,
# appended to results.txt):
#   - bert-base on the long texts at one thread and at the default count;
#   - the demo model (model/demo, 4 x 256) on 1,000 short texts (about 12
#     tokens each), batched against row by row;
#   - a busy machine: a busy-loop process pinned to the last core while the
#     demo model (short texts) and MiniLM (the sentences) run row by row and
#     batched, at the default thread count and with bert_load's
#     {"threads": 1};
#   - the query-constant pattern: ORDER BY bert_similarity(embedding, 'text')
#     against bert_similarity(embedding, bert_embed('text')) over
#     BENCH_QUERY_ROWS stored vectors of the demo model's width.
#
# Writes into build/bench/: the models (made by tests/tools/gen_model.c:
# bert-base size, 12 layers x 768, and MiniLM size, 6 layers x 384; by
# tests/bench/make_bench_encoders.py: ModernBERT-base and DeBERTa-v3-base
# sizes, which PyTorch runs through tests/reference/encoder_reference.py and
# ONNX Runtime as that module's export; ModernBERT's needs ModernBERT-large's
# tokenizer files in ../shared/models or MODERNBERT_DIR, and is skipped
# without them), the peers' installation (node_modules), raw.txt (every
# measurement) and results.txt (the table it prints at the end).  llama.cpp
# runs on the BERT models only.
#
# Peers: Debian's python3-torch (installed with apt-get when run as root;
# otherwise: sudo apt-get install python3-torch python3-numpy) and
# onnxruntime-node from npm (npm install --ignore-scripts onnxruntime-node,
# into build/bench/node_modules), node-llama-cpp and its platform package
# (@node-llama-cpp/linux-x64 and the like) the same way.  A missing peer is
# skipped with a note.
# None of this is part of `make test`.
set -eu

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=build/bench
here=tests/bench
threads=${BENCH_THREADS:-$(nproc)}
limit=${BENCH_SENTENCES:-0}
models=${BENCH_MODELS:-bert-base minilm modernbert-base deberta-v3-base}
modernbert_dir=${MODERNBERT_DIR:-$root/../shared/models/answerdotai__ModernBERT-large}
precisions=${BENCH_PRECISIONS:-bfloat16 int8}
long_texts=${BENCH_LONG:-12}
torch_timing=${BENCH_TORCH:-1}
extra_rows=${BENCH_EXTRA:-1}
avx2_default=0
grep -q avx512f /proc/cpuinfo 2>/dev/null && avx2_default=1
avx2_level=${BENCH_AVX2:-$avx2_default}
ort_version=${BENCH_ORT_VERSION:-1.30.0}
llama_peer=${BENCH_LLAMA:-1}
llama_version=${BENCH_LLAMA_VERSION:-3.22.1}
vocab=${BERT_TEST_VOCAB:-tests/fixtures/bert-base-uncased/vocab.txt}
CC=${CC:-cc}
python=/usr/bin/python3

case $threads in
    ''|*[!0-9]*|0) echo "run.sh: BENCH_THREADS must be a positive integer, not '$threads'" >&2; exit 2 ;;
esac
if [ ! -f bert.so ]; then
    echo "run.sh: no ./bert.so: build it with make (make bench does)" >&2
    exit 1
fi
if [ ! -f "$vocab" ]; then
    echo "run.sh: no vocabulary at $vocab: add the bert-base-uncased vocab.txt there or set BERT_TEST_VOCAB" >&2
    exit 1
fi

mkdir -p "$out/models"
raw=$out/raw.txt
log=$out/log.txt
: > "$raw"
: > "$log"
start=$(date +%s)
step() { echo "[$(( $(date +%s) - start ))s] $*"; }

# Runs a measuring program: its lines go to the screen and to raw.txt, its
# stderr to log.txt.  Returns its status (sh has no pipefail for a tee).
record() {
    status=0
    "$@" > "$out/step.txt" 2>> "$log" || status=$?
    cat "$out/step.txt"
    cat "$out/step.txt" >> "$raw"
    if [ $status != 0 ]; then
        echo "run.sh: $1 failed (status $status); the end of $log:" >&2
        tail -n 15 "$log" >&2
    fi
    return $status
}

# One setting for every engine: OpenBLAS (ours, the sgemm ceiling, and the
# BLAS under Debian's torch), OpenMP (torch), ORT's intra-op pool (below).
OPENBLAS_NUM_THREADS=$threads
OMP_NUM_THREADS=$threads
export OPENBLAS_NUM_THREADS OMP_NUM_THREADS

# ---- the C programs
warn="-std=c11 -O2 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wvla -D_POSIX_C_SOURCE=200809L"
blas_cflags=$(pkg-config --cflags openblas 2>/dev/null || true)
blas_libs=$(pkg-config --libs openblas 2>/dev/null || echo -lopenblas)
step "building the benchmark programs"
# shellcheck disable=SC2086
$CC $warn $blas_cflags -o "$out/sgemm_peak" "$here/sgemm_peak.c" $blas_libs
# shellcheck disable=SC2086
$CC $warn -o "$out/bench_embed" "$here/bench_embed.c" -lsqlite3 -lm
$CC $warn -o "$out/bench_query" "$here/bench_query.c" -lsqlite3 -lm
$CC -std=c11 -O2 -ffp-contract=off -o "$out/gen_model" tests/tools/gen_model.c -lm

# ---- the models: pseudo-random weights, the same bytes on every machine
make_model() {    # NAME, then gen_model options
    name=$1
    shift
    dir=$out/models/$name
    # Made again when the generator, its options or the vocabulary change.
    stamp="$(cksum < tests/tools/gen_model.c) $(cksum < "$vocab") $*"
    if [ -f "$dir/.made" ] && [ "$(cat "$dir/.made")" = "$stamp" ]; then
        return
    fi
    rm -rf "$dir"
    "$out/gen_model" "$dir" --vocab "$vocab" --max-positions 512 --dtype f32 "$@" >> "$log"
    echo "$stamp" > "$dir/.made"
}
step "making the models"
make_model bert-base --seed 101 --layers 12 --hidden 768 --heads 12 --intermediate 3072
# Shaped like all-MiniLM-L6-v2: mean pooling and Normalize.
make_model minilm --seed 102 --layers 6 --hidden 384 --heads 12 --intermediate 1536 \
    --st-pooling mean --normalize --max-seq-length 256
# Today's encoders at base size: numpy's generator, made again when it changes.
for name in modernbert-base deberta-v3-base; do
    case " $models " in *" $name "*) ;; *) continue ;; esac
    dir=$out/models/$name
    stamp="$(cksum < $here/make_bench_encoders.py) $(cksum < tests/golden/make_encoder_models.py) $(cksum < "$vocab")"
    [ -f "$dir/.made" ] && [ "$(cat "$dir/.made")" = "$stamp" ] && continue
    rm -rf "$dir"
    if $python "$here/make_bench_encoders.py" "$out/models" "$name" "$vocab" "$modernbert_dir" >> "$log" 2>&1; then
        echo "$stamp" > "$dir/.made"
    else
        rm -rf "$dir"
        echo "note: $name not made (numpy, or for ModernBERT its tokenizer files at $modernbert_dir; see $log): skipped"
    fi
done

# ---- the peers
have_torch=0
if $python -c 'import torch, numpy' 2>/dev/null; then
    have_torch=1
elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    step "installing python3-torch with apt-get"
    if apt-get update -qq >> "$log" 2>&1 && apt-get install -y -qq python3-torch python3-numpy >> "$log" 2>&1; then
        have_torch=1
    fi
fi
[ $have_torch = 1 ] || echo "note: no PyTorch; install it with: sudo apt-get install python3-torch python3-numpy (PyTorch and ONNX Runtime skipped)"

have_ort=0
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        step "installing nodejs and npm with apt-get"
        if apt-get update -qq >> "$log" 2>&1; then
            apt-get install -y -qq nodejs npm >> "$log" 2>&1 || true
        fi
    fi
fi
if [ -f "$out/node_modules/onnxruntime-node/package.json" ]; then
    have_ort=1
elif command -v npm >/dev/null; then
    step "installing onnxruntime-node@$ort_version into $out/node_modules"
    if npm install --ignore-scripts --no-audit --no-fund --prefix "$out" "onnxruntime-node@$ort_version" >> "$log" 2>&1; then
        have_ort=1
    fi
fi
[ $have_ort = 1 ] || echo "note: no onnxruntime-node; install node and npm, then: npm install --ignore-scripts --prefix $out onnxruntime-node (ONNX Runtime skipped)"
[ $have_torch = 1 ] || have_ort=0     # the ONNX file is exported from PyTorch

have_onnx=0
if $python -c 'import onnx' 2>/dev/null; then
    have_onnx=1
elif [ $have_ort = 1 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    step "installing python3-onnx with apt-get"
    apt-get install -y -qq python3-onnx >> "$log" 2>&1 && have_onnx=1
fi
[ $have_onnx = 1 ] || echo "note: no python3-onnx (sudo apt-get install python3-onnx): ONNX Runtime int8 skipped"

# llama.cpp: node-llama-cpp with its prebuilt CPU binaries (the platform
# package; --omit=optional leaves out the CUDA and Vulkan ones), no install
# scripts; its GGUF files come from tests/bench/gguf_write.py (numpy).
have_llama=0
if [ "$llama_peer" != 0 ]; then
    llama_pkg=$out/node_modules/node-llama-cpp/package.json
    if ! $python -c 'import numpy' 2>/dev/null; then
        echo "note: no numpy for /usr/bin/python3 (sudo apt-get install python3-numpy): llama.cpp skipped"
    elif ! command -v node >/dev/null || ! command -v npm >/dev/null; then
        echo "note: no node and npm: llama.cpp skipped"
    else
        if [ ! -f "$llama_pkg" ] || ! grep -q "\"version\": \"$llama_version\"" "$llama_pkg"; then
            platform=$(node -p 'process.platform + "-" + process.arch')
            step "installing node-llama-cpp@$llama_version (@node-llama-cpp/$platform) into $out/node_modules"
            npm install --ignore-scripts --no-audit --no-fund --omit=optional --prefix "$out" \
                "node-llama-cpp@$llama_version" "@node-llama-cpp/$platform@$llama_version" >> "$log" 2>&1 || true
        fi
        if [ -f "$llama_pkg" ]; then
            have_llama=1
        else
            echo "note: node-llama-cpp@$llama_version did not install (see $log; BENCH_LLAMA=0 leaves it out): llama.cpp skipped"
        fi
    fi
fi

# The GGUF files of a model, made again when the model or the writer changes.
make_gguf() {    # NAME TYPE: prints the file's path, or nothing when it cannot be written
    gguf=$out/models/$1.$2.gguf
    stamp="$(cat "$out/models/$1/.made") $(cksum < "$here/gguf_write.py")"
    if [ ! -f "$gguf" ] || [ "$(cat "$gguf.made" 2>/dev/null)" != "$stamp" ]; then
        rm -f "$gguf" "$gguf.made"
        $python "$here/gguf_write.py" "$out/models/$1" "$gguf" --type "$2" >> "$log" 2>&1 || return 0
        echo "$stamp" > "$gguf.made"
    fi
    echo "$gguf"
}

# ---- the ceiling
step "measuring the cblas_sgemm ceiling ($threads thread(s))"
"$out/sgemm_peak" 2048 10 > "$out/step.txt"
sed 's/$/ env=bench/' "$out/step.txt" | tee -a "$raw"
if [ -n "${OPENBLAS_CORETYPE:-}" ]; then
    # The environment forces an OpenBLAS kernel; show what the CPU itself gets.
    env -u OPENBLAS_CORETYPE "$out/sgemm_peak" 2048 10 > "$out/step.txt"
    sed 's/$/ env=autodetect/' "$out/step.txt" | tee -a "$raw"
fi

# ---- the long texts: consecutive sentences joined until about 450 tokens
# (385 words of sentences.txt make 420 to 470 of bert-base-uncased's tokens)
awk -v want="$long_texts" 'NF && !/^#/ { s[n++] = $0 }
    END { t = ""; w = 0; k = 0
          for (i = 0; n && k < want; i = (i + 1) % n) {
              t = t (w ? " " : "") s[i]; w += split(s[i], a, " ")
              if (w >= 385) { print t; t = ""; w = 0; k++ } } }' "$here/sentences.txt" > "$out/long.txt"

# ---- the measurements, workload by workload: LABEL MODEL TEXTS
workloads=""
for name in $models; do
    workloads="$workloads $name:$name:$here/sentences.txt"
done
for name in bert-base modernbert-base deberta-v3-base; do
    case " $models " in
        *" $name "*) [ "$long_texts" -gt 0 ] && workloads="$workloads $name-long:$name:$out/long.txt" ;;
    esac
done
args=""
for spec in $workloads; do
    label=${spec%%:*}; rest=${spec#*:}; name=${rest%%:*}; texts=${rest#*:}
    dir=$out/models/$name
    if [ ! -d "$dir" ]; then
        case $name in
            modernbert-base|deberta-v3-base) continue ;;     # not made: noted above
        esac
        echo "run.sh: unknown model '$name' in BENCH_MODELS (bert-base, minilm, modernbert-base, deberta-v3-base)" >&2
        exit 2
    fi
    args="$args $label=$dir"
    step "$label: ours, row by row and batched"
    record "$out/bench_embed" ./bert.so "$dir" "$texts" "$label" "$out" "$limit" || exit 1
    for precision in $precisions; do
        step "$label: ours at $precision, row by row and batched"
        BENCH_LOAD_OPTIONS="{\"precision\": \"$precision\"}" BENCH_REFERENCE="$out/$label.ours.f32" \
            record "$out/bench_embed" ./bert.so "$dir" "$texts" "$label" "$out" "$limit" || true
    done
    rm -f "$out/$label.onnx" "$out/$label.int8.onnx"
    if [ $have_torch = 1 ]; then
        step "$label: PyTorch, batch 1 and 32"
        onnx=""
        [ $have_ort = 1 ] && onnx="--onnx $out/$label.onnx"
        [ "$torch_timing" = 0 ] && onnx="$onnx --export-only"
        # shellcheck disable=SC2086
        record $python "$here/torch_bench.py" "$dir" "$out/$label.ids.json" "$label" --threads "$threads" \
            --ours "$out/$label.ours.f32" $onnx || true
    fi
    if [ $have_ort = 1 ] && [ -f "$out/$label.onnx" ]; then
        step "$label: ONNX Runtime, batch 1 and 32"
        record node "$here/ort_bench.js" "$out/$label.onnx" "$out/$label.ids.json" "$label" "$threads" \
            "$out/$label.ours.f32" || true
        if [ $have_onnx = 1 ] && $python "$here/quantize_dynamic.py" "$out/$label.onnx" "$out/$label.int8.onnx" >> "$log" 2>&1; then
            step "$label: ONNX Runtime int8 (quantize_dynamic's graph), batch 1 and 32"
            record node "$here/ort_bench.js" "$out/$label.int8.onnx" "$out/$label.ids.json" "$label" "$threads" \
                "$out/$label.ours.f32" int8 || true
        fi
        rm -f "$out/$label.onnx" "$out/$label.int8.onnx"
    fi
    llama_here=$have_llama
    case $name in bert-base|minilm) ;; *) llama_here=0 ;; esac     # gguf_write.py writes BERT alone
    if [ $llama_here = 1 ]; then
        for type in f32 q8_0; do
            gguf=$(make_gguf "$name" $type)
            if [ -z "$gguf" ]; then
                echo "note: tests/bench/gguf_write.py failed on $name (see $log): llama.cpp $type skipped"
                continue
            fi
            precision=float32
            [ $type = f32 ] || precision=$type
            step "$label: llama.cpp $type (node-llama-cpp), row by row"
            record node "$here/llama_bench.js" "$gguf" "$out/$label.ids.json" "$label" "$threads" $precision \
                "$out/$label.ours.f32" "$texts" "$limit" || true
        done
    fi
    if [ "$avx2_level" = 1 ]; then
        step "$label: ours held to AVX2 (SQLITE_BERT_ISA=avx2, OPENBLAS_CORETYPE=Haswell)"
        args="$args $label@avx2=$dir"
        SQLITE_BERT_ISA=avx2 OPENBLAS_CORETYPE=Haswell \
            record "$out/bench_embed" ./bert.so "$dir" "$texts" "$label@avx2" "$out" "$limit" || true
        for precision in $precisions; do
            SQLITE_BERT_ISA=avx2 OPENBLAS_CORETYPE=Haswell BENCH_LOAD_OPTIONS="{\"precision\": \"$precision\"}" \
                BENCH_REFERENCE="$out/$label@avx2.ours.f32" \
                record "$out/bench_embed" ./bert.so "$dir" "$texts" "$label@avx2" "$out" "$limit" || true
        done
    fi
done

# ---- the demo model (trained weights, float16) at every precision
if [ "$extra_rows" = 1 ] && [ -f model/demo/model.safetensors ]; then
    step "demo: ours at float32 and $precisions, row by row and batched"
    record "$out/bench_embed" ./bert.so model/demo "$here/sentences.txt" demo-model "$out" "$limit" || true
    for precision in $precisions; do
        BENCH_LOAD_OPTIONS="{\"precision\": \"$precision\"}" BENCH_REFERENCE="$out/demo-model.ours.f32" \
            record "$out/bench_embed" ./bert.so model/demo "$here/sentences.txt" demo-model "$out" "$limit" || true
    done
fi

# ---- ours alone: the demo model on short texts, a busy core, the query pattern
extra=$out/extra.txt
: > "$extra"
query_rows=${BENCH_QUERY_ROWS:-100000}
busy_pid=""
stop_busy() { [ -n "$busy_pid" ] && kill "$busy_pid" 2>/dev/null; busy_pid=""; }
trap stop_busy EXIT INT TERM
# 1,000 short texts: the first nine words of each sentence, in turn.
awk 'NF && !/^#/ { line = ""; for (i = 1; i <= 9 && i <= NF; i++) line = line (i > 1 ? " " : "") $i; s[n++] = line }
     END { for (i = 0; i < 1000; i++) print s[i % n] }' "$here/sentences.txt" > "$out/short.txt"
# Prints "LABEL: row by row S s, batched S s" from bench_embed's lines.
summarize() {    # LABEL, then bench_embed's arguments
    label=$1
    shift
    "$out/bench_embed" "$@" > "$out/step.txt" 2>> "$log" || { echo "$label: failed (see $log)"; return 0; }
    cat "$out/step.txt" >> "$raw"
    awk -v label="$label" '$1 == "RESULT" && $3 == "engine=ours" {
            split($4, b, "="); split($7, t, "="); split($8, c, "=");
            if (b[2] == "1") row = t[2]; else { all = t[2]; tokens = $6 }
            cpu[b[2]] = c[2] }
        END { split(tokens, k, "=");
              printf "%-44s row by row %7.3f s (cpu %6.3f), batched %7.3f s (cpu %6.3f), %s tokens\n",
                     label, row, cpu["1"], all, cpu["all"], k[2] }' "$out/step.txt"
}
if [ -d "$out/models/bert-base" ] && [ "$long_texts" -gt 0 ]; then
    step "bert-base on the long texts: one thread against the default"
    # Twice each, alternating, so that a change in the machine's load falls on both.
    for round in 1 2; do
        for n in 1 "$threads"; do
            BENCH_LOAD_OPTIONS="{\"threads\": $n}" summarize "bert-base, ~450-token texts, threads $n ($round)" \
                ./bert.so "$out/models/bert-base" "$out/long.txt" "long-$n" "$out" "$limit" | tee -a "$extra"
        done
    done
    awk '/~450-token texts, threads/ { if ($5 == "1") one += $10; else many += $10 }
         END { if (many > 0) printf "two rounds, row by row: threads %s over threads 1: %.2fx\n", "'"$threads"'", one / many }' \
        "$extra" | tee -a "$extra"
fi
if [ "$extra_rows" = 1 ] && [ -f model/demo/model.safetensors ]; then
    step "demo model: short texts, row by row and batched"
    summarize "demo, short texts, $threads thread(s)" ./bert.so model/demo "$out/short.txt" demo "$out" | tee -a "$extra"
    cores=$(nproc)
    if [ "$cores" -ge 2 ]; then
        step "a busy core: default threads against threads 1"
        last=$((cores - 1))
        taskset -c "$last" sh -c 'while :; do :; done' &
        busy_pid=$!
        for spec in "demo:model/demo:$out/short.txt" "minilm:$out/models/minilm:$here/sentences.txt"; do
            label=${spec%%:*}; rest=${spec#*:}; dir=${rest%%:*}; texts=${rest#*:}
            [ -d "$dir" ] || continue
            summarize "$label, CPU $last busy, default ($threads)" ./bert.so "$dir" "$texts" "$label-busy" "$out" | tee -a "$extra"
            BENCH_LOAD_OPTIONS='{"threads": 1}' \
                summarize "$label, CPU $last busy, threads 1" ./bert.so "$dir" "$texts" "$label-busy1" "$out" | tee -a "$extra"
        done
        stop_busy
    fi
    step "the query-constant pattern over $query_rows stored vectors"
    if "$out/bench_query" ./bert.so model/demo "$query_rows" demo > "$out/step.txt" 2>> "$log"; then
        cat "$out/step.txt" >> "$raw"
        awk '$1 == "QUERY" { split($4, f, "="); split($5, t, "=");
                 if (f[2] == "bert_embed") e = t[2]; else { x = t[2]; r = $6; same = $7; n = $3 } }
             END { split(n, k, "="); split(r, q, "="); split(same, s, "=");
                   printf "query over %s vectors: bert_similarity(e, bert_embed(q)) %.3f s, bert_similarity(e, q) %.3f s, ratio %s, same top 5: %s\n",
                          k[2], e, x, q[2], s[2] }' "$out/step.txt" | tee -a "$extra"
    else
        echo "query-constant rows: bench_query failed (see $log)" | tee -a "$extra"
    fi
else
    echo "note: no model/demo/model.safetensors (fetch it with git lfs pull): demo-model rows skipped"
fi

# ---- the tokenizer on its own, when its benchmark is there (make bench
# builds it as build/bench_tokenizer; run directly, this script builds it)
rm -f "$out/tokenizer.txt"
if [ "$extra_rows" = 1 ] && [ -f "$here/bench_tokenizer.c" ]; then
    step "tokenizer"
    tok=build/bench_tokenizer
    if [ ! -x "$tok" ] || [ -n "$(find "$here/bench_tokenizer.c" ext -newer "$tok" -name '*.[ch]' 2>/dev/null)" ]; then
        tok=$out/bench_tokenizer
        ext_flags="$warn -D_DEFAULT_SOURCE -DSQLITE_CORE $(pkg-config --cflags sqlite3 openblas libutf8proc 2>/dev/null || true)"
        ext_libs="$(pkg-config --libs openblas libutf8proc 2>/dev/null || echo -lopenblas -lutf8proc) -lsqlite3 -lpthread -lm"
        # shellcheck disable=SC2086
        $CC $ext_flags -o "$tok" "$here/bench_tokenizer.c" ext/*/*.c $ext_libs >> "$log" 2>&1 || tok=""
    fi
    if [ -n "$tok" ]; then
        "$tok" > "$out/tokenizer.txt" 2>&1 || echo "(bench_tokenizer failed: see above)" >> "$out/tokenizer.txt"
    else
        echo "(tests/bench/bench_tokenizer.c did not build: see $log)" > "$out/tokenizer.txt"
    fi
fi

# Cross-encoder reranking: pairs per second, row by row and in packed
# batches, against ONNX Runtime (tests/bench/rerank_bench.py).
if [ $have_torch = 1 ] && [ "$extra_rows" = 1 ]; then
    step "rerank"
    $python "$here/rerank_bench.py" --threads "$threads" > "$out/rerank.txt" 2>> "$log" ||
        echo "(rerank_bench.py failed: see $log)" >> "$out/rerank.txt"
fi

rm -f "$out/step.txt"
step "done"
echo
# shellcheck disable=SC2086
$python "$here/report.py" "$raw" "$out" "$threads" $args
if [ -s "$extra" ]; then
    echo
    cat "$extra"
    { echo; cat "$extra"; } >> "$out/results.txt"
fi
[ -f "$out/rerank.txt" ] && { echo; cat "$out/rerank.txt"; }
echo "(written to $out/results.txt and $out/rerank.txt; details of the runs in $log)"

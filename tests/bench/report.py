#!/usr/bin/python3
"""report.py - turns the "RESULT/CHECK/INFO ..." lines that tests/bench/run.sh
collects into the table `make bench` prints and writes to results.txt.

    report.py RAW_LINES OUTDIR THREADS LABEL=MODEL_DIR ...

Throughput counts real tokens only ([CLS] and [SEP] included, padding not).
GFLOP/s is the encoder's useful work over the wall time, the same count for
every engine: per layer 2*n*(4*H*H + 2*H*I) for the projections and the
feed-forward network plus 2*2*n*n*H for the attention products, n being a
sentence's real tokens.  ModernBERT's gated feed-forward network counts
2*n*3*H*I (Wi to 2*I, Wo from I) and its local layers' attention
2*2*n*min(n, window + 1)*H; DeBERTa's disentangled attention adds, per
layer, its c2p and p2c products against the 2*span relative positions,
2*2*n*(2*span)*H, and the relative embeddings through query_proj and
key_proj, 2*2*(2*span)*H*H.  It leaves out the embeddings, LayerNorm, softmax
and pooling, and the work the padded engines spend on padding.
llama.cpp (engine=llama, tests/bench/llama_bench.js) runs row by row only: its
F32 rows join the peers' table, its Q8_0 rows the reduced-precision one, and
both a table of their own against ours at float32 and int8.
Needs only the Python standard library.
"""
import json
import os
import sys

ENGINES = {
    ("ours", "1"): "ours: bert_embed, row by row",
    ("ours", "all"): "ours: bert_embed_each, batched",
    ("torch", "1"): "PyTorch {v} float32",
    ("torch", "32"): "PyTorch {v} float32",
    ("ort", "1"): "ONNX Runtime {v} (node)",
    ("ort", "32"): "ONNX Runtime {v} (node)",
    ("llama", "1"): "node-llama-cpp {v} F32",
}


def parse(path):
    results, checks, info, sgemm, memory = [], [], {}, [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            kind, _, rest = line.strip().partition(" ")
            fields = dict(p.split("=", 1) for p in rest.split() if "=" in p)
            if kind == "RESULT" and fields.get("engine") == "sgemm":
                sgemm.append(fields)
            elif kind == "RESULT":
                results.append(fields)
            elif kind == "CHECK":
                checks.append(fields)
            elif kind == "INFO":
                info[fields.get("engine")] = fields
            elif kind == "MEMORY":
                memory.append(fields)
    return results, checks, info, sgemm, memory


def encoder_flops(model_dir, lengths):
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        c = json.load(f)
    H, I, L = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"]
    family = c.get("model_type")
    if family == "modernbert":
        every, window = c.get("global_attn_every_n_layers", 3), c.get("local_attention", 128)
        total = 0
        for n in lengths:
            for layer in range(L):
                seen = n if layer % every == 0 else min(n, window + 1)
                total += 2 * n * (4 * H * H + 3 * H * I) + 4 * n * seen * H
        return total, (L, H, I)
    total = sum(L * (2 * n * (4 * H * H + 2 * H * I) + 4 * n * n * H) for n in lengths)
    if family == "deberta-v2" and c.get("relative_attention"):
        buckets, max_rel = c.get("position_buckets", -1), c.get("max_relative_positions", -1)
        span = buckets if buckets > 0 else (max_rel if max_rel > 0 else c["max_position_embeddings"])
        terms = sum(t in (c.get("pos_att_type") or []) for t in ("c2p", "p2c"))
        total += sum(L * terms * (2 * n * (2 * span) * H + 2 * (2 * span) * H * H) for n in lengths)
    return total, (L, H, I)


def precision_table(results, reduced, checks, memory):
    """Ours at float32, bfloat16 and int8, model by model: speed against
    ONNX Runtime float32 (batch 1 for row by row, batch 32 for batched) and
    against our own float32, resident memory growth, cosine to float32."""
    if not reduced:
        return []
    # Per CPU-second: at one thread on a core that other work shares, the
    # wall clock counts the others' turns; CPU time does not.
    speed = {}
    for r in results + reduced:
        key = (r["model"], r["engine"], r.get("precision", "float32"), r["batch"])
        seconds = float(r.get("cpu_seconds", 0)) or float(r["seconds"])
        speed[key] = int(r["tokens"]) / seconds
    growth = {(m["model"], m["engine"], m.get("precision", "float32")): int(m["growth_kb"]) / 1024
              for m in memory if int(m.get("growth_kb", -1)) >= 0}
    cos = {(c["model"], c["what"].split("-vs-")[0]): (float(c["min_cos"]), float(c["mean_cos"]))
           for c in checks if "min_cos" in c}
    out = ["", "Reduced precision (bert_load's \"precision\"): tokens per CPU-second, and their ratio to ONNX "
           "Runtime float32", "(row by row: its batch 1; batched: its batch 32) and to our float32; resident set "
           "growth after first use; cosine to our float32.", ""]
    header = (f"{'model':<16} {'precision':<9} {'row/cs':>8} {'/ORT b1':>7} {'/f32':>5}   {'batch/cs':>8} "
              f"{'/ORT b32':>8} {'/f32':>5}   {'RSS MB':>7} {'/f32':>5}   {'min cos':>8} {'mean cos':>8}")
    out.append(header)
    out.append("-" * len(header))

    def ratio(a, b):
        return f"{a / b:.2f}" if a and b else "-"

    models = []
    for r in reduced:
        if r["model"] not in models:
            models.append(r["model"])
    for label in models:
        ort1, ort32 = speed.get((label, "ort", "float32", "1")), speed.get((label, "ort", "float32", "32"))
        f1, fall = speed.get((label, "ours", "float32", "1")), speed.get((label, "ours", "float32", "all"))
        fmem = growth.get((label, "ours", "float32"))
        for p in ("float32", "bfloat16", "int8"):
            s1, sall = speed.get((label, "ours", p, "1")), speed.get((label, "ours", p, "all"))
            if not s1 and not sall:
                continue
            mem = growth.get((label, "ours", p))
            mc = cos.get((label, p))
            out.append(f"{label:<16} {p:<9} {s1 or 0:8.0f} {ratio(s1, ort1):>7} {ratio(s1, f1):>5}   "
                       f"{sall or 0:8.0f} {ratio(sall, ort32):>8} {ratio(sall, fall):>5}   "
                       f"{mem if mem is not None else float('nan'):7.1f} {ratio(mem, fmem):>5}   "
                       f"{(f'{mc[0]:.5f}' if mc else '-'):>8} {(f'{mc[1]:.5f}' if mc else '-'):>8}")
        o1, oall = speed.get((label, "ort", "int8", "1")), speed.get((label, "ort", "int8", "32"))
        if o1 or oall:
            i1, iall = speed.get((label, "ours", "int8", "1")), speed.get((label, "ours", "int8", "all"))
            oc = cos.get((label, "ort-int8-b1"))
            out.append(f"{label:<16} {'ORT int8':<9} {o1 or 0:8.0f} {ratio(o1, ort1):>7} {'':>5}   "
                       f"{oall or 0:8.0f} {ratio(oall, ort32):>8} {'':>5}   {'':>7} {'':>5}   "
                       f"{(f'{oc[0]:.5f}' if oc else '-'):>8} {(f'{oc[1]:.5f}' if oc else '-'):>8}")
            out.append(f"{label:<16} ours int8 / ONNX Runtime int8: row by row {ratio(i1, o1)}, "
                       f"batched (against its batch 32) {ratio(iall, oall)}")
        l32, lq8 = speed.get((label, "llama", "float32", "1")), speed.get((label, "llama", "q8_0", "1"))
        for name, s, what in (("llama F32", l32, "llama-float32"), ("llama Q8_0", lq8, "llama-q8_0")):
            if not s:
                continue
            lc = cos.get((label, what))
            lmem = growth.get((label, "llama", "float32" if what == "llama-float32" else "q8_0"))
            out.append(f"{label:<16} {name:<9} {s:8.0f} {ratio(s, ort1):>7} {'':>5}   "
                       f"{'-':>8} {'':>8} {'':>5}   "
                       f"{lmem if lmem is not None else float('nan'):7.1f} {ratio(lmem, fmem):>5}   "
                       f"{(f'{lc[0]:.5f}' if lc else '-'):>8} {(f'{lc[1]:.5f}' if lc else '-'):>8}")
        if l32 or lq8:
            i1 = speed.get((label, "ours", "int8", "1"))
            out.append(f"{label:<16} ours / llama.cpp, row by row, per CPU-second: float32 / F32 {ratio(f1, l32)}, "
                       f"int8 / Q8_0 {ratio(i1, lq8)}")
        om = growth.get((label, "ort", "float32"))
        if om is not None:
            out.append(f"{label:<16} (ONNX Runtime float32: resident set growth {om:.1f} MB from creating the "
                       f"session to after its first run)")
    return out


def llama_table(results, reduced, checks, info):
    """llama.cpp (node-llama-cpp, row by row) at F32 and Q8_0 against ours
    row by row at float32 and int8: tokens per second by the wall clock and
    per CPU-second, and ours over llama.cpp."""
    rows = [r for r in results + reduced if r["engine"] == "llama"]
    if not rows:
        return []
    wall, cpu = {}, {}
    for r in results + reduced:
        if r["batch"] != "1" or r["engine"] not in ("ours", "llama"):
            continue
        key = (r["model"], r["engine"], r.get("precision", "float32"))
        wall[key] = int(r["tokens"]) / float(r["seconds"])
        if float(r.get("cpu_seconds", 0)) > 0:
            cpu[key] = int(r["tokens"]) / float(r["cpu_seconds"])
    l = info.get("llama", {})
    out = ["", f"llama.cpp {l.get('llama_cpp', '?')} through node-llama-cpp {l.get('version', '?')} "
               f"(prebuilt CPU binaries, ggml CPU variant {l.get('cpu_variant', '?')}, "
               f"{l.get('threads', '?')} thread(s), flash attention "
               f"{l.get('flash_attention', '?')}), one text at a time, on GGUF files written by "
               "tests/bench/gguf_write.py", "from the same safetensors; ours row by row (bert_embed). "
               "Tokens per second (wall) and per CPU-second; ours / llama.cpp.", ""]
    header = (f"{'model':<16} {'pair':<22} {'ours t/s':>9} {'llama t/s':>9} {'ratio':>6}   "
              f"{'ours /cs':>9} {'llama /cs':>9} {'ratio':>6}   {'min cos':>10}")
    out.append(header)
    out.append("-" * len(header))
    cos = {(c["model"], c["what"].split("-vs-")[0]): float(c["min_cos"]) for c in checks if "min_cos" in c}

    def ratio(a, b):
        return f"{a / b:.2f}" if a and b else "-"

    models = []
    for r in rows:
        if r["model"] not in models:
            models.append(r["model"])
    for label in models:
        for mine, theirs, name in (("float32", "float32", "ours f32 / llama F32"),
                                   ("int8", "q8_0", "ours int8 / llama Q8_0")):
            lw, lc = wall.get((label, "llama", theirs)), cpu.get((label, "llama", theirs))
            if not lw:
                continue
            ow, oc = wall.get((label, "ours", mine)), cpu.get((label, "ours", mine))
            mc = cos.get((label, f"llama-{theirs}"))
            out.append(f"{label:<16} {name:<22} {ow or 0:9.0f} {lw:9.0f} {ratio(ow, lw):>6}   "
                       f"{oc or 0:9.0f} {lc or 0:9.0f} {ratio(oc, lc):>6}   "
                       f"{(f'{mc:.8f}' if mc is not None else '-'):>10}")
    out.append("min cos: llama.cpp's embedding against our float32 one, the lowest over the texts. Per CPU-second")
    out.append("counts every thread's time, spinning included (ggml's threads spin at their barriers).")
    for c in checks:
        if c.get("what") == "llama-tokenizer-vs-ours":
            out.append(f"{c['model']}: llama.cpp's own WordPiece tokenization gives our ids for "
                       f"{c['same_ids']} of {c['texts']} texts (timed runs use our ids for every engine).")
    return out


def main():
    if len(sys.argv) < 5:
        sys.exit("usage: report.py RAW_LINES OUTDIR THREADS LABEL=MODEL_DIR ...")
    raw, outdir, threads = sys.argv[1], sys.argv[2], sys.argv[3]
    models = dict(a.split("=", 1) for a in sys.argv[4:])
    results, checks, info, sgemm, memory = parse(raw)
    # The peers' table is float32's; the reduced precisions get their own.
    reduced = [r for r in results if r.get("precision", "float32") != "float32"]
    results = [r for r in results if r.get("precision", "float32") == "float32"]
    out = []

    ceiling = cpu_ceiling = None
    for s in sgemm:
        if s.get("env") == "bench":
            ceiling = float(s["gflops"])
            cpu_ceiling = float(s.get("cpu_gflops", 0)) or None
    bench_sgemm = next((s for s in sgemm if s.get("env") == "bench"), {})
    out.append(f"sqlite-bert throughput: {threads} thread(s); OpenBLAS core {bench_sgemm.get('core', '?')}; "
               f"our few-rows kernels: {bench_sgemm.get('isa', '?')}")
    for s in sgemm:
        where = ("the thread count and OpenBLAS settings of every run below" if s.get("env") == "bench"
                 else "OPENBLAS_CORETYPE unset, OpenBLAS's own CPU detection")
        per_cpu = f" ({float(s['cpu_gflops']):.1f} per CPU-second)" if "cpu_gflops" in s else ""
        out.append(f"cblas_sgemm ceiling: {float(s['gflops']):.1f} GFLOP/s{per_cpu}, core {s['core']}, "
                   f"{s['shape']}, best of {s.get('runs', '?')}, {s['threads']} thread(s)")
        out.append(f"                     ({where})")

    auto = next((float(s.get("cpu_gflops") or s["gflops"]) for s in sgemm if s.get("env") == "autodetect"), None)
    mine = cpu_ceiling or ceiling
    if mine and auto and auto > 1.3 * mine:
        out.append(f"NOTE: OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '?')} in the environment holds "
                   f"OpenBLAS (ours, and the BLAS under PyTorch) to {auto / mine:.1f}x fewer")
        out.append("      GFLOP/s than OpenBLAS picks for this CPU by itself; ONNX Runtime's own kernels are not "
                   "held back. For that comparison:")
        out.append("      env -u OPENBLAS_CORETYPE make bench")

    lengths = {}
    for label in models:
        path = os.path.join(outdir, f"{label}.ids.json")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                lengths[label] = [len(s) for s in json.load(f)]
    for label, ls in lengths.items():
        if ls:
            out.append(f"{label}: {len(ls)} texts, {sum(ls)} real tokens, {min(ls)} to {max(ls)} a text, "
                       f"mean {sum(ls) / len(ls):.1f}")
    out.append("")

    header = (f"{'model':<16} {'engine':<32} {'batch':>5} {'seconds':>8} {'cpu/wall':>8} {'tokens/s':>9} "
              f"{'ours/peer':>9} {'GFLOP/s':>8} {'% sgemm':>8}   {'tokens':>9} {'ours/peer':>9} {'% sgemm':>8}")
    out.append(f"{'':<103}{'per CPU-second':-^30}")
    out.append(header)
    out.append("-" * len(header))
    for label, model_dir in models.items():
        rows = [r for r in results if r["model"] == label and r["engine"] in ("ours", "torch", "ort", "llama")]
        if not rows:
            continue
        flops, (L, H, I) = encoder_flops(model_dir, lengths.get(label, []))
        speed = {(r["engine"], r["batch"]): int(r["tokens"]) / float(r["seconds"]) for r in rows}
        cpu_speed = {(r["engine"], r["batch"]): int(r["tokens"]) / float(r["cpu_seconds"])
                     for r in rows if float(r.get("cpu_seconds", 0)) > 0}
        for r in rows:
            key = (r["engine"], r["batch"])
            name = ENGINES.get(key, r["engine"]).format(v=info.get(r["engine"], {}).get("version", "?"))
            secs = float(r["seconds"])
            gflops = flops / secs * 1e-9
            cpu = f"{float(r['cpu_seconds']) / secs:.2f}" if key in cpu_speed else "-"
            pct = f"{100 * gflops / ceiling:.1f}%" if ceiling else "-"
            ratio = cpu_ratio = ""
            if r["engine"] != "ours":
                mine = ("ours", "1" if r["batch"] == "1" else "all")
                ratio = f"{speed[mine] / speed[key]:.2f}" if mine in speed else "-"
                cpu_ratio = f"{cpu_speed[mine] / cpu_speed[key]:.2f}" if mine in cpu_speed and key in cpu_speed else "-"
            tpc = f"{cpu_speed[key]:9.0f}" if key in cpu_speed else f"{'-':>9}"
            cpu_pct = (f"{100 * flops / float(r['cpu_seconds']) * 1e-9 / cpu_ceiling:.1f}%"
                       if key in cpu_speed and cpu_ceiling else "-")
            out.append(f"{label:<16} {name:<32} {r['batch']:>5} {secs:8.2f} {cpu:>8} {speed[key]:9.0f} "
                       f"{ratio:>9} {gflops:8.1f} {pct:>8}   {tpc} {cpu_ratio:>9} {cpu_pct:>8}")
        out.append(f"{'':<16} ({L} layers, hidden {H}, ffn {I}: {flops * 1e-9:.0f} GFLOP for the whole list)")
    out.append("")
    out.append("ours/peer: our tokens/s over the peer's, row by row against batch 1, bert_embed_each "
               "against batch 32 (above 1: we are faster).")
    out.append("% sgemm: the encoder's GFLOP/s as a share of the cblas_sgemm ceiling, by wall time and by CPU time.")
    out.append("Ours is timed through SQLite (tests/bench/bench_embed.c, the system libsqlite3 loading ./bert.so),")
    out.append("tokenization included; the peers are given the token ids ready-made. Batch 32 pads each group of")
    out.append("32 consecutive sentences to its longest, with an attention mask; bert_embed_each packs sentences")
    out.append("without padding. cpu/wall: CPU time of the process over wall time; below the thread count, the run")
    out.append("shared its cores with other work (or waited), and then the per-CPU-second columns compare better")
    out.append("(at one thread; with more, idle threads that spin count as busy).")
    padded = [r for r in results if r["engine"] == "torch" and r["batch"] == "32" and "padded_tokens" in r]
    if padded:
        r = padded[0]
        out.append(f"Batch 32 computes {int(r['padded_tokens'])} token positions for {int(r['tokens'])} real tokens "
                   f"({100 * (int(r['padded_tokens']) / int(r['tokens']) - 1):.0f}% padding).")

    tok = [r for r in results if r["engine"] == "ours-tokenize"]
    if tok:
        r = tok[0]
        out.append(f"Tokenizer through SQL (bert_token_ids, one call a sentence): "
                   f"{int(r['tokens']) / float(r['seconds']):,.0f} tokens/s.")
    diffs = [c for c in checks if "max_abs_diff" in c]
    if diffs:
        out.append("")
        out.append("Same computation (largest |difference| between embeddings):")
        for c in diffs:
            out.append(f"  {c['model']:<16} {c['what']:<24} {c['max_abs_diff']}")

    out.extend(precision_table(results, reduced, checks, memory))
    out.extend(llama_table(results, reduced, checks, info))

    tok_path = os.path.join(outdir, "tokenizer.txt")
    if os.path.exists(tok_path):
        with open(tok_path, encoding="utf-8") as f:
            text = f.read().strip()
        if text:
            out.append("")
            out.append("Tokenizer alone (tests/bench/bench_tokenizer.c):")
            out.extend("  " + line for line in text.splitlines())

    text = "\n".join(out) + "\n"
    sys.stdout.write(text)
    with open(os.path.join(outdir, "results.txt"), "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

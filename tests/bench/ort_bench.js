// ort_bench.js - the ONNX Runtime side of `make bench`: runs the model that
// tests/bench/torch_bench.py exported (ids and attention mask in, pooled
// embedding out) with onnxruntime-node on the CPU, at batch 1 and batch 32,
// padded exactly as the PyTorch run pads them.
//
//   node ort_bench.js MODEL.onnx IDS_JSON LABEL THREADS [OURS_F32 [PRECISION]]
//
// PRECISION names the model's weights in the RESULT lines: "float32" (the
// default) or "int8" (tests/bench/quantize_dynamic.py's graph); an int8
// model's embeddings are compared with ours at float32 by cosine.
//
// onnxruntime-node is looked up in build/bench/node_modules (tests/bench/run.sh
// installs it there: npm install --ignore-scripts onnxruntime-node), then on
// NODE_PATH.  Prints "RESULT ...", "CHECK ..." and "MEMORY ..." lines for
// tests/bench/report.py.
'use strict';

const fs = require('fs');
const path = require('path');

function loadOrt() {
  const local = path.join(__dirname, '..', '..', 'build', 'bench', 'node_modules', 'onnxruntime-node');
  for (const name of [local, 'onnxruntime-node']) {
    let ort;
    try {
      ort = require(name);
    } catch (e) {
      continue;
    }
    let version = '?';
    try {
      version = require(path.join(path.dirname(require.resolve(name)), '..', 'package.json')).version;
    } catch (e) { /* the version is only informative */ }
    return { ort, version };
  }
  console.error('ort_bench: onnxruntime-node is not installed: ' +
                'npm install --ignore-scripts --prefix build/bench onnxruntime-node');
  process.exit(1);
}

function* batches(ids, size) {
  for (let start = 0; start < ids.length; start += size) {
    const group = ids.slice(start, start + size);
    const longest = Math.max(...group.map((s) => s.length));
    const inputIds = new BigInt64Array(group.length * longest);     // 0 is [PAD]
    const mask = new BigInt64Array(group.length * longest);
    group.forEach((s, row) => {
      s.forEach((id, col) => {
        inputIds[row * longest + col] = BigInt(id);
        mask[row * longest + col] = 1n;
      });
    });
    yield { rows: group.length, longest, inputIds, mask };
  }
}

// Returns [wall seconds, CPU seconds of the whole process].
async function run(ort, session, ids, size, out) {
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  let offset = 0;
  for (const b of batches(ids, size)) {
    const dims = [b.rows, b.longest];
    const result = await session.run({
      input_ids: new ort.Tensor('int64', b.inputIds, dims),
      attention_mask: new ort.Tensor('int64', b.mask, dims),
    });
    const emb = result.embedding.data;
    if (out) out.set(emb, offset);
    offset += emb.length;
  }
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  return [wall, (cpu.user + cpu.system) / 1e6];
}

async function main() {
  const [onnxPath, idsPath, label, threadsArg, oursPath, precisionArg] = process.argv.slice(2);
  const precision = precisionArg || 'float32';
  if (!onnxPath || !idsPath || !label || !threadsArg) {
    console.error('usage: node ort_bench.js MODEL.onnx IDS_JSON LABEL THREADS [OURS_F32]');
    process.exit(2);
  }
  const threads = Number(threadsArg);
  const { ort, version } = loadOrt();
  // Resident set from before the session to after its first run: what
  // holding the model costs, as bench_embed measures ours.
  const rssBefore = process.memoryUsage().rss;
  const session = await ort.InferenceSession.create(onnxPath, {
    executionProviders: ['cpu'],
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const ids = JSON.parse(fs.readFileSync(idsPath, 'utf8'));
  const tokens = ids.reduce((n, s) => n + s.length, 0);
  let ours = null;
  if (oursPath) {
    const buf = fs.readFileSync(oursPath);
    ours = new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4);
  }
  console.log(`INFO engine=ort version=${version} threads=${threads}`);

  for (const size of [1, 32]) {
    await run(ort, session, ids.slice(0, size), size, null);      // warm-up
    if (size === 1) {
      const rssAfter = process.memoryUsage().rss;
      console.log(`MEMORY model=${label} engine=ort precision=${precision} rss_before_kb=${Math.round(rssBefore / 1024)} ` +
                  `rss_after_kb=${Math.round(rssAfter / 1024)} growth_kb=${Math.round((rssAfter - rssBefore) / 1024)}`);
    }
    const out = ours ? new Float32Array(ours.length) : null;
    const [seconds, cpuSeconds] = await run(ort, session, ids, size, out);
    let padded = 0;
    for (const b of batches(ids, size)) padded += b.rows * b.longest;
    console.log(`RESULT model=${label} engine=ort batch=${size} sentences=${ids.length} tokens=${tokens} ` +
                `padded_tokens=${padded} seconds=${seconds.toFixed(6)} cpu_seconds=${cpuSeconds.toFixed(3)} ` +
                `precision=${precision}`);
    if (ours && precision !== 'float32') {
      const dim = ours.length / ids.length;
      let min = 1, sum = 0;
      for (let s = 0; s < ids.length; s++) {
        let dot = 0, a2 = 0, b2 = 0;
        for (let i = s * dim; i < (s + 1) * dim; i++) {
          dot += out[i] * ours[i];
          a2 += out[i] * out[i];
          b2 += ours[i] * ours[i];
        }
        const cos = dot / Math.sqrt(a2 * b2);
        min = Math.min(min, cos);
        sum += cos;
      }
      console.log(`CHECK model=${label} what=ort-${precision}-b${size}-vs-ours-float32 ` +
                  `min_cos=${min.toFixed(5)} mean_cos=${(sum / ids.length).toFixed(5)}`);
    } else if (ours) {
      let worst = 0;
      for (let i = 0; i < ours.length; i++) worst = Math.max(worst, Math.abs(out[i] - ours[i]));
      console.log(`CHECK model=${label} what=ours-vs-ort-b${size} max_abs_diff=${worst.toExponential(2)}`);
    }
  }
}

main().catch((e) => {
  console.error(`ort_bench: ${e && e.message ? e.message : e}`);
  process.exit(1);
});

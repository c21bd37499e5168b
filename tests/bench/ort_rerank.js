// ort_rerank.js - the ONNX Runtime side of the rerank benchmark
// (tests/bench/rerank_bench.py): a cross-encoder exported to ONNX scores
// query-document pairs one by one and in padded batches of 32.
//
//   node ort_rerank.js MODEL.onnx PAIRS_JSON THREADS
//
// PAIRS_JSON: [{"ids": [...], "types": [...]}, ...], [CLS] q [SEP] d [SEP].
// Prints one JSON line per batch size: {"batch", "pairs", "seconds",
// "scores"} (sigmoid of the logit, as sentence-transformers' CrossEncoder).
// onnxruntime-node is looked up in build/bench/node_modules, then on NODE_PATH.
'use strict';

const fs = require('fs');
const path = require('path');

function loadOrt() {
  const local = path.join(__dirname, '..', '..', 'build', 'bench', 'node_modules', 'onnxruntime-node');
  for (const name of [local, 'onnxruntime-node']) {
    try {
      return require(name);
    } catch (e) { /* try the next */ }
  }
  console.error('ort_rerank: onnxruntime-node is not installed: ' +
                'npm install --ignore-scripts --prefix build/bench onnxruntime-node');
  process.exit(1);
}

async function score(ort, session, pairs, size) {
  const scores = [];
  for (let start = 0; start < pairs.length; start += size) {
    const group = pairs.slice(start, start + size);
    const longest = Math.max(...group.map((p) => p.ids.length));
    const ids = new BigInt64Array(group.length * longest);
    const types = new BigInt64Array(group.length * longest);
    const mask = new BigInt64Array(group.length * longest);
    group.forEach((p, row) => {
      p.ids.forEach((id, col) => {
        ids[row * longest + col] = BigInt(id);
        types[row * longest + col] = BigInt(p.types[col]);
        mask[row * longest + col] = 1n;
      });
    });
    const dims = [group.length, longest];
    const out = await session.run({
      input_ids: new ort.Tensor('int64', ids, dims),
      attention_mask: new ort.Tensor('int64', mask, dims),
      token_type_ids: new ort.Tensor('int64', types, dims),
    });
    for (const logit of out.logits.data) scores.push(1 / (1 + Math.exp(-logit)));
  }
  return scores;
}

async function main() {
  const [onnxPath, pairsPath, threadsArg] = process.argv.slice(2);
  if (!onnxPath || !pairsPath || !threadsArg) {
    console.error('usage: node ort_rerank.js MODEL.onnx PAIRS_JSON THREADS');
    process.exit(2);
  }
  const ort = loadOrt();
  const session = await ort.InferenceSession.create(onnxPath, {
    executionProviders: ['cpu'], intraOpNumThreads: Number(threadsArg), interOpNumThreads: 1,
    executionMode: 'sequential', graphOptimizationLevel: 'all',
  });
  const pairs = JSON.parse(fs.readFileSync(pairsPath, 'utf8'));
  for (const size of [1, 32]) {
    await score(ort, session, pairs.slice(0, size), size);     // warm-up
    const t0 = process.hrtime.bigint();
    const scores = await score(ort, session, pairs, size);
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    console.log(JSON.stringify({ batch: size, pairs: pairs.length, seconds, scores }));
  }
}

main().catch((e) => {
  console.error(`ort_rerank: ${e && e.message ? e.message : e}`);
  process.exit(1);
});

// llama_bench.js - the llama.cpp side of `make bench`: embeds the token ids
// that bench_embed wrote (LABEL.ids.json, [CLS] and [SEP] included) one text
// at a time with llama.cpp, through node-llama-cpp's prebuilt CPU binaries,
// from a GGUF file that tests/bench/gguf_write.py wrote from the same
// safetensors (mean pooling, as every engine of the bench pools).
//
//   node llama_bench.js MODEL.gguf IDS_JSON LABEL THREADS PRECISION [OURS_F32 [TEXTS [LIMIT]]]
//
// PRECISION names the GGUF's weights in the RESULT lines: "float32" (F32) or
// "q8_0".  With OURS_F32 (our float32 embeddings, bench_embed's
// LABEL.ours.f32) every embedding is compared with ours by cosine (and, at
// float32, by the largest |difference| once both are scaled to unit length,
// since llama.cpp returns the mean before any Normalize module).  With TEXTS
// (the texts bench_embed read, LIMIT as its) llama.cpp's own WordPiece
// tokenization of each text is compared with ours: a CHECK line counts the
// texts whose ids are the same, and the first difference goes to stderr.
//
// node-llama-cpp is looked up in build/bench/node_modules (tests/bench/run.sh
// installs it there with --ignore-scripts: its platform package carries the
// binaries), never built and never downloading at run time (build: "never",
// skipDownload).  Prints "RESULT ...", "CHECK ...", "MEMORY ..." and "INFO
// ..." lines for tests/bench/report.py, as ort_bench.js does; row by row only
// (batch=1): its embedding context takes one sequence at a time.
'use strict';

const fs = require('fs');
const path = require('path');
const { pathToFileURL } = require('url');

async function loadLlamaModule() {
  const local = path.join(__dirname, '..', '..', 'build', 'bench', 'node_modules', 'node-llama-cpp');
  for (const dir of [local]) {
    const pkg = path.join(dir, 'package.json');
    if (!fs.existsSync(pkg)) continue;
    const version = JSON.parse(fs.readFileSync(pkg, 'utf8')).version;
    const mod = await import(pathToFileURL(path.join(dir, 'dist', 'index.js')).href);
    return { mod, version };
  }
  try {
    const mod = await import('node-llama-cpp');
    return { mod, version: '?' };
  } catch (e) {
    console.error('llama_bench: node-llama-cpp is not installed: ' +
                  'npm install --ignore-scripts --prefix build/bench node-llama-cpp');
    process.exit(1);
  }
}

// One text a line; blank lines and lines starting with '#' skipped (as bench_embed).
function readTexts(file, limit) {
  const out = [];
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    const t = line.replace(/\r$/, '');
    if (t === '' || t[0] === '#') continue;
    out.push(t);
    if (limit > 0 && out.length >= limit) break;
  }
  return out;
}

function norm(v, from, to) {
  let s = 0;
  for (let i = from; i < to; i++) s += v[i] * v[i];
  return Math.sqrt(s);
}

async function main() {
  const [ggufPath, idsPath, label, threadsArg, precisionArg, oursPath, textsPath, limitArg] = process.argv.slice(2);
  if (!ggufPath || !idsPath || !label || !threadsArg || !precisionArg) {
    console.error('usage: node llama_bench.js MODEL.gguf IDS_JSON LABEL THREADS PRECISION [OURS_F32 [TEXTS [LIMIT]]]');
    process.exit(2);
  }
  const threads = Number(threadsArg);
  const precision = precisionArg;
  const { mod, version } = await loadLlamaModule();
  const { getLlama, LlamaLogLevel } = mod;

  const llama = await getLlama({
    gpu: false,               // the CPU binaries of the platform package
    build: 'never',           // no compiler at run time: prebuilt or fail
    skipDownload: true,       // no network at run time
    usePrebuiltBinaries: true,
    progressLogs: false,
    maxThreads: threads,
    logLevel: LlamaLogLevel.error,
  });
  const ids = JSON.parse(fs.readFileSync(idsPath, 'utf8'));
  const tokens = ids.reduce((n, s) => n + s.length, 0);
  const longest = Math.max(...ids.map((s) => s.length));

  // Resident set from before loading the model to after its first
  // embedding: what holding the model costs, as for ours and ONNX Runtime.
  const rssBefore = process.memoryUsage().rss;
  const model = await llama.loadModel({ modelPath: ggufPath, gpuLayers: 0 });
  const trained = model.trainContextSize || 512;
  // The whole text in one ubatch (non-causal attention needs it): context
  // and batch of the model's positions (512 for both bench models).
  const size = Math.min(trained, 512);
  if (longest >= size) {
    console.error(`llama_bench: a text of ${longest} tokens does not fit llama.cpp's context of ${size}`);
    process.exit(1);
  }
  const context = await model.createEmbeddingContext({ contextSize: size, batchSize: size, threads });
  const dim = model.embeddingVectorSize;
  const flash = context._llamaContext ? context._llamaContext.flashAttention : '?';
  // Which of ggml's CPU variants the loader picked for this CPU (Linux).
  let variant = '?';
  try {
    const m = fs.readFileSync('/proc/self/maps', 'utf8').match(/libggml-cpu-([a-z0-9_]+)\.so/);
    if (m) variant = m[1];
  } catch (e) { /* informative only */ }
  console.log(`INFO engine=llama version=${version} llama_cpp=${llama.llamaCppRelease.release} ` +
              `threads=${threads} build=${llama.buildType} gpu=${llama.gpu} cpu_variant=${variant} ` +
              `flash_attention=${flash}`);
  console.error(`llama_bench: ${llama.systemInfo}`);

  const embed = async (seq) => (await context.getEmbeddingFor(seq.slice())).vector;
  await embed(ids[0]);                                             // warm-up
  const rssAfter = process.memoryUsage().rss;
  console.log(`MEMORY model=${label} engine=llama precision=${precision} rss_before_kb=${Math.round(rssBefore / 1024)} ` +
              `rss_after_kb=${Math.round(rssAfter / 1024)} growth_kb=${Math.round((rssAfter - rssBefore) / 1024)}`);

  const out = new Float32Array(ids.length * dim);
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  for (let s = 0; s < ids.length; s++) {
    const v = await embed(ids[s]);
    if (v.length !== dim) throw new Error(`an embedding of ${v.length} values, not ${dim}`);
    out.set(v, s * dim);
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  console.log(`RESULT model=${label} engine=llama batch=1 sentences=${ids.length} tokens=${tokens} ` +
              `padded_tokens=${tokens} seconds=${seconds.toFixed(6)} cpu_seconds=${cpuSeconds.toFixed(3)} ` +
              `precision=${precision}`);

  if (oursPath) {
    const buf = fs.readFileSync(oursPath);
    const ours = new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4);
    if (ours.length !== out.length) {
      console.error(`llama_bench: ${oursPath} holds ${ours.length} values, not ${out.length}`);
    } else {
      let min = 1, sum = 0, worst = 0;
      for (let s = 0; s < ids.length; s++) {
        const a = s * dim, b = a + dim;
        const na = norm(out, a, b), nb = norm(ours, a, b);
        let dot = 0;
        for (let i = a; i < b; i++) dot += out[i] * ours[i];
        const cos = dot / (na * nb);
        min = Math.min(min, cos);
        sum += cos;
        for (let i = a; i < b; i++) worst = Math.max(worst, Math.abs(out[i] / na - ours[i] / nb));
      }
      console.log(`CHECK model=${label} what=llama-${precision}-vs-ours-float32 ` +
                  `min_cos=${min.toFixed(8)} mean_cos=${(sum / ids.length).toFixed(8)}`);
      if (precision === 'float32') {
        console.log(`CHECK model=${label} what=ours-vs-llama-f32-unit max_abs_diff=${worst.toExponential(2)}`);
      }
    }
  }

  if (textsPath && precision === 'float32') {
    const texts = readTexts(textsPath, Number(limitArg || 0));
    if (texts.length !== ids.length) {
      console.error(`llama_bench: ${texts.length} texts in ${textsPath} against ${ids.length} id lists`);
    } else {
      const bos = model.tokens.bos, sep = model.tokens.sep;
      let same = 0, first = null;
      for (let s = 0; s < texts.length; s++) {
        const mine = [bos, ...model.tokenize(texts[s]), sep];
        const theirs = ids[s];
        const eq = mine.length === theirs.length && mine.every((t, i) => t === theirs[i]);
        if (eq) same++;
        else if (!first) first = { s, mine, theirs };
      }
      console.log(`CHECK model=${label} what=llama-tokenizer-vs-ours same_ids=${same} texts=${texts.length}`);
      if (first) {
        let at = 0;
        while (at < first.mine.length && first.mine[at] === first.theirs[at]) at++;
        console.error(`llama_bench: text ${first.s + 1}: llama.cpp's ids differ from ours from position ${at}: ` +
                      `llama.cpp ${JSON.stringify(first.mine.slice(at, at + 8))} ` +
                      `(${first.mine.slice(at, at + 8).map((t) => model.detokenize([t], true)).join('|')}), ` +
                      `ours ${JSON.stringify(first.theirs.slice(at, at + 8))} ` +
                      `(${first.theirs.slice(at, at + 8).map((t) => model.detokenize([t], true)).join('|')})`);
      }
    }
  }
  await context.dispose();
  await model.dispose();
  await llama.dispose();
}

main().catch((e) => {
  console.error(`llama_bench: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});

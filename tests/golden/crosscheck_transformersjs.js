// crosscheck_transformersjs.js - transformers.js's `text-classification`
// pipeline on local ONNX exports, for crosscheck_transformersjs.py.
//
//   node crosscheck_transformersjs.js MODELS_ROOT < requests.json > answers.json
//
// requests: [{"model": dir name under MODELS_ROOT, "text": text}, ...]
// answers:  [[{"label", "score"}, ...] for each request]: every label (top_k
//           null), best first, as the pipeline returns them.
//
// Nothing is fetched: remote models are switched off, the model directories
// hold config.json, tokenizer.json, tokenizer_config.json and onnx/model.onnx.
// Needs: npm install --ignore-scripts @huggingface/transformers, with NODE_PATH
// pointing at that node_modules.
'use strict';

async function main() {
    const root = process.argv[2];
    if (!root) {
        process.stderr.write('usage: node crosscheck_transformersjs.js MODELS_ROOT < requests.json\n');
        process.exit(2);
    }
    let transformers;
    try {
        transformers = require('@huggingface/transformers');  // CommonJS: honours NODE_PATH
    } catch (e) {
        process.stderr.write('cannot load @huggingface/transformers: npm install --ignore-scripts ' +
            '@huggingface/transformers and set NODE_PATH (' + e.message + ')\n');
        process.exit(1);
    }
    const { pipeline, env } = transformers;
    env.allowRemoteModels = false;
    env.allowLocalModels = true;
    env.localModelPath = root.endsWith('/') ? root : root + '/';

    let input = '';
    for await (const chunk of process.stdin) input += chunk;
    const requests = JSON.parse(input);
    const pipes = new Map();
    const answers = [];
    for (const r of requests) {
        if (!pipes.has(r.model)) {
            pipes.set(r.model, await pipeline('text-classification', r.model, { dtype: 'fp32' }));
        }
        answers.push(await pipes.get(r.model)(r.text, { top_k: null }));
    }
    process.stdout.write(JSON.stringify(answers));
}

main().catch((e) => {
    process.stderr.write(String(e && e.stack ? e.stack : e) + '\n');
    process.exit(1);
});

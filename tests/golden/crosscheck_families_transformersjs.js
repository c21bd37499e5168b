// crosscheck_families_transformersjs.js - transformers.js's pipelines on local
// ONNX exports of the RoBERTa, XLM-RoBERTa and MPNet test models, for
// crosscheck_families_transformersjs.py.
//
//   node crosscheck_families_transformersjs.js MODELS_ROOT < requests.json > answers.json
//
// requests: [{"model": dir under MODELS_ROOT, "task": "feature-extraction" |
//            "fill-mask" | "text-classification", "text": text}, ...]
// answers:  one per request, {"ids": transformers.js's token ids of the text,
//           "result": the mean-pooled, normalized embedding; the top 5
//           {"token", "score"} of the mask; every {"label", "score"}, best first}.
//
// Nothing is fetched: remote models are off; each directory holds
// config.json, tokenizer.json, tokenizer_config.json and onnx/model.onnx.
// Needs: npm install --ignore-scripts @huggingface/transformers, with NODE_PATH
// pointing at that node_modules.
'use strict';

async function main() {
    const root = process.argv[2];
    if (!root) {
        process.stderr.write('usage: node crosscheck_families_transformersjs.js MODELS_ROOT < requests.json\n');
        process.exit(2);
    }
    let transformers;
    try {
        transformers = require('@huggingface/transformers');
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
    const pipes = new Map();
    const answers = [];
    for (const r of JSON.parse(input)) {
        const key = r.task + ' ' + r.model;
        if (!pipes.has(key)) pipes.set(key, await pipeline(r.task, r.model, { dtype: 'fp32' }));
        const p = pipes.get(key);
        const ids = Array.from(p.tokenizer(r.text).input_ids.data, Number);
        let result;
        if (r.task === 'feature-extraction') {
            result = Array.from((await p(r.text, { pooling: 'mean', normalize: true })).data);
        } else if (r.task === 'fill-mask') {
            result = (await p(r.text, { top_k: 5 })).map((c) => ({ token: c.token, score: c.score }));
        } else {
            result = await p(r.text, { top_k: null });
        }
        answers.push({ ids, result });
    }
    process.stdout.write(JSON.stringify(answers));
}

main().catch((e) => {
    process.stderr.write(String(e && e.stack ? e.stack : e) + '\n');
    process.exit(1);
});

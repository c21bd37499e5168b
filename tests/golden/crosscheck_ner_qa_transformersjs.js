// crosscheck_ner_qa_transformersjs.js - transformers.js's `token-classification`
// (no aggregation) and `question-answering` pipelines on local ONNX exports,
// for crosscheck_ner_qa_transformersjs.py.
//
//   node crosscheck_ner_qa_transformersjs.js MODELS_ROOT < requests.json > answers.json
//
// requests: [{"task": "ner", "model", "text"} or {"task": "qa", "model", "question", "context"}]
// answers:  for "ner" the pipeline's [{"entity", "score", "index", "word"}];
//           for "qa" its top-1 {"answer", "score"}.
//
// Nothing is fetched: remote models are switched off; each model directory
// holds config.json, tokenizer.json, tokenizer_config.json and onnx/model.onnx.
// Needs: npm install --ignore-scripts @huggingface/transformers, with NODE_PATH
// pointing at that node_modules.
'use strict';

async function main() {
    const root = process.argv[2];
    if (!root) {
        process.stderr.write('usage: node crosscheck_ner_qa_transformersjs.js MODELS_ROOT < requests.json\n');
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
        const task = r.task === 'ner' ? 'token-classification' : 'question-answering';
        const key = task + ' ' + r.model;
        if (!pipes.has(key)) pipes.set(key, await pipeline(task, r.model, { dtype: 'fp32' }));
        const pipe = pipes.get(key);
        answers.push(r.task === 'ner' ? await pipe(r.text) : await pipe(r.question, r.context));
    }
    process.stdout.write(JSON.stringify(answers));
}

main().catch((e) => {
    process.stderr.write(String(e && e.stack ? e.stack : e) + '\n');
    process.exit(1);
});

// transformersjs_local.js - what the transformers.js cross-checks share: load
// @huggingface/transformers with remote models switched off, read the
// requests (a JSON array) from stdin, run each through a pipeline kept per
// task and model, and write the answers (a JSON array) to stdout.
//
//   require('./transformersjs_local.js').serve(script, (r) => [task, model], (pipe, r) => answer)
//
// Each model directory under MODELS_ROOT (the script's one argument) holds
// config.json, tokenizer.json, tokenizer_config.json and onnx/model.onnx.
// Needs: npm install --ignore-scripts @huggingface/transformers, with
// NODE_PATH pointing at that node_modules.
'use strict';

async function run(script, pipelineOf, answer) {
    const root = process.argv[2];
    if (!root) {
        process.stderr.write(`usage: node ${script} MODELS_ROOT < requests.json\n`);
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
    const pipes = new Map();
    const answers = [];
    for (const r of JSON.parse(input)) {
        const [task, model] = pipelineOf(r);
        const key = task + ' ' + model;
        if (!pipes.has(key)) pipes.set(key, await pipeline(task, model, { dtype: 'fp32' }));
        answers.push(await answer(pipes.get(key), r));
    }
    process.stdout.write(JSON.stringify(answers));
}

function serve(script, pipelineOf, answer) {
    run(script, pipelineOf, answer).catch((e) => {
        process.stderr.write(String(e && e.stack ? e.stack : e) + '\n');
        process.exit(1);
    });
}

module.exports = { serve };

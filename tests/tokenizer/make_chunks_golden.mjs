// make_chunks_golden.mjs - what bert_chunks must return, computed here from
// Hugging Face's own Rust tokenizer (the npm package `tokenizers`, on
// bert-base-uncased's tokenizer.json): its offsets and word ids, cut into
// chunks by the rule below, written independently of the C code.
//
//   npm install --ignore-scripts tokenizers
//   node tests/tokenizer/make_chunks_golden.mjs      (from the project root)
//
// NPM_REF and REF_TOKENIZER_DIR as for make_golden.mjs.
//
// The rule (README, bert_chunks): a chunk holds at most max_tokens word
// pieces and ends at the last word boundary (pieces of different
// pre-tokenizer words on either side) that fits; when none fits, the word
// at its start alone is longer than max_tokens and is cut after max_tokens
// pieces.  The next chunk starts at the first word boundary at or after
// `overlap` pieces before the end, but after the previous start (inside a
// word that was cut every piece counts as a boundary); when the chunk from
// there would end where the previous one ended, the next chunk starts at
// that end instead.  start/end are the character offsets of the chunk's
// first piece's start and last piece's end.
//
// Writes tests/tokenizer/chunks_golden.jsonl: per line {"text" or "corpus"
// (a corpus line number, from 1) or "joined" ({"from", "to", "sep"}: corpus
// lines from..to, 1-based inclusive, joined by sep), "pieces" (how many),
// "max_tokens", "overlap", "chunks": [first piece, end piece, start, end]
// per chunk, flattened}.
import { createRequire } from 'module';
import { readFileSync, writeFileSync } from 'fs';
import { join } from 'path';

const require = createRequire(join(process.cwd(), 'package.json'));
const resolve = (name) => (process.env.NPM_REF ? join(process.env.NPM_REF, name) : name);
const { Tokenizer } = require(resolve('tokenizers'));
const refDir = process.env.REF_TOKENIZER_DIR;
if (!refDir) {
    console.error('set REF_TOKENIZER_DIR to a directory holding bert-base-uncased\'s tokenizer.json, tokenizer_config.json and vocab.txt');
    process.exit(2);
}
const j = JSON.parse(readFileSync(join(refDir, 'tokenizer.json'), 'utf8'));
j.truncation = null;   // tokenizers 0.23.1/0.23.2 stop at max_length when truncation is on
j.padding = null;
const tok = Tokenizer.fromString(JSON.stringify(j));
const out = 'tests/tokenizer';
const corpus = readFileSync(join(out, 'corpus.jsonl'), 'utf8').split('\n').filter((l) => l).map((l) => JSON.parse(l));

function chunks(words, offsets, maxTokens, overlap) {
    const n = words.length;
    const boundary = (i) => i === 0 || i === n || words[i] !== words[i - 1];
    const endFrom = (s) => {
        let end = -1;
        for (let i = s + 1; i <= Math.min(s + maxTokens, n); i++) if (boundary(i)) end = i;
        return end < 0 ? { end: s + maxTokens, forced: true } : { end, forced: false };
    };
    const result = [];
    let s = 0;
    while (s < n) {
        const { end: e, forced } = endFrom(s);
        result.push(s, e, offsets[s][0], offsets[e - 1][1]);
        if (e >= n) break;
        let b = e;
        if (overlap > 0) {
            const lo = Math.max(s + 1, e - overlap);
            if (forced) b = lo;
            else for (let i = lo; i < e; i++) if (boundary(i)) { b = i; break; }
            if (b < e && endFrom(b).end <= e) b = e;
        }
        s = b;
    }
    return result;
}

async function row(source, text, settings) {
    const e = await tok.encode(text, null, { addSpecialTokens: false });
    const words = e.getWordIds(), offsets = e.getOffsets();
    return settings.map(([m, o]) => JSON.stringify({ ...source, pieces: words.length, max_tokens: m, overlap: o,
        chunks: chunks(words, offsets, m, o) }));
}

const lines = [];
// Every corpus line, with chunks small enough to cut most of them.
for (const [i, text] of corpus.entries()) lines.push(...await row({ corpus: i + 1 }, text, [[5, 2]]));
// Long texts: runs of corpus lines, and a text of over-long words,
// punctuation runs and ideographs.
const longSettings = [[510, 0], [126, 32], [32, 8]];
for (const [from, to, sep] of [[1, 600, ' '], [1, corpus.length, '\n'], [601, 900, '  ']])
    lines.push(...await row({ joined: { from, to, sep } }, corpus.slice(from - 1, to).join(sep), longSettings));
const odd = [];
for (let i = 0; i < 40; i++) {
    odd.push('antidisestablishmentarianism'.repeat(1 + (i % 5)), '!!!...', '\u4e2d\u6587\u5b57' + 'x'.repeat(i % 7),
        'caf\u00e9', '[MASK]', 'unwanted' + '\u00e9'.repeat(i % 3), ':-)', 'Zw\u00f6lf' + '\u0301'.repeat(i % 4));
}
lines.push(...await row({ text: odd.join(' ') }, odd.join(' '), [...longSettings, [16, 15], [5, 0], [3, 1], [1, 0]]));
writeFileSync(join(out, 'chunks_golden.jsonl'), lines.join('\n') + '\n');
console.log(`chunks_golden.jsonl: ${lines.length} lines`);

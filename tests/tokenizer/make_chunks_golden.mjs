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
// The rule (README, bert_chunks).  Where a cut may fall: between pieces of
// different pre-tokenizer words (a word boundary), or of one word (inside
// it), but never where the two sides share a character or a grapheme
// cluster (Intl.Segmenter's).  A chunk holds at most max_tokens pieces and
// ends at the last word boundary that fits; when none fits, the word at its
// start alone is longer and the chunk ends at the last cut inside it that
// fits, or when none does (one character or cluster gives more pieces), at
// the first cut after.  The next chunk starts at the first boundary (inside
// a word that was cut: any cut) at or after `overlap` pieces before the
// end, but after the previous start, from which a chunk reaches past that
// end; when there is none, at that end.  A chunk's text: from the cut
// before its first piece to the cut after its last; at a cut the text
// between the pieces (it gives no piece) goes to the left chunk up to its
// last cluster that is not all white space, and to the right chunk from
// its first such cluster that does not hold the left pieces' last
// character; before the first piece and after the last alike.  start/end
// count code points.
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

const segmenter = new Intl.Segmenter('en', { granularity: 'grapheme' });
const white = /^\p{White_Space}$/u;

// Per code point: the code point where its cluster begins.
function clusterStarts(chars) {
    const starts = new Array(chars.length + 1);
    let at = 0;
    for (const { segment } of segmenter.segment(chars.join(''))) {
        const n = Array.from(segment).length;
        for (let k = 0; k < n; k++) starts[at + k] = at;
        at += n;
    }
    starts[chars.length] = chars.length;
    return starts;
}

// The cuts between pieces: for each i in 0..n, whether a cut may fall
// before piece i ("none", "inside" or "word") and where the chunks that end
// and begin there do.
function cuts(chars, words, offsets) {
    const n = words.length, starts = clusterStarts(chars);
    const result = [];
    let leftEnd = 0;
    for (let i = 0; i <= n; i++) {
        if (i > 0) leftEnd = Math.max(leftEnd, offsets[i - 1][1]);
        let rightStart = chars.length;
        for (let j = i; j < n; j++) rightStart = Math.min(rightStart, offsets[j][0]);
        const holder = starts[rightStart];   // where the right pieces' first cluster begins
        let kind = i === 0 || i === n ? 'word' : words[i] !== words[i - 1] ? 'word' : 'inside';
        if (leftEnd > rightStart || holder < leftEnd) kind = 'none';
        let left = null, right = null;
        if (kind !== 'none' || i === 0 || i === n) {
            for (let c = leftEnd; c <= holder; c++) if (starts[c] === c || c === chars.length) { left = c; break; }
            for (let c = leftEnd; c < holder; c++)
                if (!white.test(chars[c])) {
                    let end = c + 1;
                    while (end < chars.length && starts[end] !== end) end++;
                    if (end <= holder) left = Math.max(left, end);
                    if (right === null && starts[c] >= leftEnd) right = starts[c];
                }
            if (right === null) right = holder;
        }
        result.push({ kind, left, right });
    }
    return result;
}

function chunks(chars, words, offsets, maxTokens, overlap) {
    const n = words.length, cut = cuts(chars, words, offsets);
    const rank = { none: 0, inside: 1, word: 2 };
    const kind = (i) => (i >= n ? 2 : rank[cut[i].kind]);
    const endFrom = (s) => {
        let wordEnd = -1, anyEnd = -1;
        for (let i = s + 1; i <= Math.min(s + maxTokens, n); i++) {
            if (kind(i) === 2) wordEnd = i;
            if (kind(i) > 0) anyEnd = i;
        }
        if (wordEnd > 0) return { end: wordEnd, forced: false };
        if (anyEnd > 0) return { end: anyEnd, forced: true };
        let i = s + maxTokens + 1;
        while (kind(i) === 0) i++;
        return { end: i, forced: true };
    };
    const result = [];
    let s = 0;
    while (s < n) {
        const { end: e, forced } = endFrom(s);
        result.push(s, e, cut[s].right, cut[e].left);
        if (e >= n) break;
        let b = e;
        if (overlap > 0) {
            const least = forced ? 1 : 2;
            for (let i = Math.max(s + 1, e - overlap); i < e; i++)
                if (kind(i) >= least && endFrom(i).end > e) { b = i; break; }
        }
        s = b;
    }
    return result;
}

async function row(source, text, settings) {
    const e = await tok.encode(text, null, { addSpecialTokens: false });
    const words = e.getWordIds(), offsets = e.getOffsets(), chars = Array.from(text);
    return settings.map(([m, o]) => JSON.stringify({ ...source, pieces: words.length, max_tokens: m, overlap: o,
        chunks: chunks(chars, words, offsets, m, o) }));
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

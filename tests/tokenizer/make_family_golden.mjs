// make_family_golden.mjs - what Hugging Face's Rust tokenizer (the npm
// package `tokenizers`) gives for every line of the tokenizer corpus under
// the byte-level BPE, Unigram and WordPiece tokenizers of other families:
// the ones tests/tokenizer/make_family_fixtures.py generates (always) and
// the real ones of ../shared/models (when present; the tests skip them
// where ../shared is absent).
//
//   npm install --ignore-scripts --prefix /work/npm-tok tokenizers@0.23.2
//   NPM_REF=/work/npm-tok/node_modules node tests/tokenizer/make_family_golden.mjs
//
// Writes tests/tokenizer/family_<name>.jsonl: a first line
// {"dir": the model directory, relative to the project root}, then per
// corpus line {"ids": the pieces without special tokens, "offsets": flat
// [start, end, ...] in code points, after the post-processor's
// trim_offsets, "decode": decode(ids) with transformers'
// clean_up_tokenization when tokenizer_config.json asks for it (the
// default)}, then {"a", "b", "ids", "types", "decode_skip"} lines: pairs
// through the post-processor with special tokens, and their decode with
// skip_special_tokens.
//
// A directory with only vocab.json + merges.txt is read as transformers
// converts it: ByteLevel(add_prefix_space from tokenizer_config.json),
// BPE, RobertaProcessing, the special tokens of special_tokens_map.json
// (<mask> with lstrip).
import { createRequire } from 'module';
import { existsSync, readFileSync, writeFileSync } from 'fs';
import { join } from 'path';

const require = createRequire(join(process.cwd(), 'package.json'));
const resolve = (name) => (process.env.NPM_REF ? join(process.env.NPM_REF, name) : name);
const { Tokenizer } = require(resolve('tokenizers'));

const out = 'tests/tokenizer';
const corpus = readFileSync(join(out, 'corpus.jsonl'), 'utf8').split('\n').filter((l) => l).map((l) => JSON.parse(l));
const shared = process.env.SHARED_MODELS || '../shared/models';

const TOKENIZERS = [
    ['bpe_bytelevel', 'tests/fixtures/bpe-bytelevel'],
    ['unigram_xlmr', 'tests/fixtures/unigram-xlmr'],
    ['unigram_bytes', 'tests/fixtures/unigram-bytes'],
    ['deberta_v3', 'tests/fixtures/deberta-v3'],
    ['roberta_base', `${shared}/FacebookAI__roberta-base`],
    ['distilroberta', `${shared}/sentence-transformers__all-distilroberta-v1`],
    ['roberta_squad2', `${shared}/deepset__roberta-base-squad2`],
    ['twitter_roberta', `${shared}/cardiffnlp__twitter-roberta-base-sentiment-latest`],
    ['mpnet', `${shared}/sentence-transformers__all-mpnet-base-v2`],
    ['t5_small', `${shared}/google-t5__t5-small`],
    ['xlnet', `${shared}/xlnet__xlnet-base-cased`],
    ['bert_uncased', `${shared}/bert-base-uncased-tokenizer`],
];

const PAIRS = [
    ['Hello, naïve world!', 'Second  text <mask> here.'],
    ['  leading spaces', 'ＡＢＣ ﬁne … ①'],
    ['The <mask> of France.', '野口里佳 ünïcödé'],
];

function readJson(dir, name) {
    const p = join(dir, name);
    return existsSync(p) ? JSON.parse(readFileSync(p, 'utf8')) : null;
}

function legacyTokenizer(dir) {
    const vocab = readJson(dir, 'vocab.json');
    const merges = readFileSync(join(dir, 'merges.txt'), 'utf8').split('\n')
        .filter((l, i) => l && !(i === 0 && l.startsWith('#version'))).map((l) => l.replace(/\r$/, ''));
    const config = readJson(dir, 'tokenizer_config.json') || {};
    const map = readJson(dir, 'special_tokens_map.json') || {};
    const name = (k, d) => {
        const v = map[k] ?? config[k];
        return v ? (typeof v === 'string' ? v : v.content) : d;
    };
    const keys = [['bos_token', '<s>'], ['pad_token', '<pad>'], ['eos_token', '</s>'], ['unk_token', '<unk>'],
        ['cls_token', '<s>'], ['sep_token', '</s>'], ['mask_token', '<mask>']];
    const added = [];
    for (const [k, d] of keys) {
        const n = name(k, d);
        if (vocab[n] === undefined || added.some((a) => a.content === n)) continue;
        added.push({ id: vocab[n], content: n, single_word: false, lstrip: k === 'mask_token', rstrip: false,
            normalized: false, special: true });
    }
    const aps = !!config.add_prefix_space;
    return Tokenizer.fromString(JSON.stringify({
        version: '1.0', truncation: null, padding: null, added_tokens: added, normalizer: null,
        pre_tokenizer: { type: 'ByteLevel', add_prefix_space: aps, trim_offsets: true, use_regex: true },
        post_processor: { type: 'RobertaProcessing', sep: [name('sep_token', '</s>'), vocab[name('sep_token', '</s>')]],
            cls: [name('cls_token', '<s>'), vocab[name('cls_token', '<s>')]], trim_offsets: true, add_prefix_space: aps },
        decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
        model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '',
            fuse_unk: false, byte_fallback: false, vocab, merges },
    }));
}

// transformers' PreTrainedTokenizerBase.clean_up_tokenization, rule for rule.
function cleanUp(text) {
    return text.split(' .').join('.').split(' ?').join('?').split(' !').join('!')
        .split(' ,').join(',').split(" ' ").join("'").split(" n't").join("n't")
        .split(" 'm").join("'m").split(" 's").join("'s").split(" 've").join("'ve")
        .split(" 're").join("'re");
}

async function main() {
    for (const [name, dir] of TOKENIZERS) {
        if (!existsSync(dir)) { console.log(`skip ${name}: ${dir} is absent`); continue; }
        const tok = existsSync(join(dir, 'tokenizer.json')) ? Tokenizer.fromFile(join(dir, 'tokenizer.json')) : legacyTokenizer(dir);
        tok.disablePadding();
        tok.disableTruncation();
        const config = readJson(dir, 'tokenizer_config.json') || {};
        const cleanup = config.clean_up_tokenization_spaces ?? true;
        const lines = [JSON.stringify({ dir })];
        for (const text of corpus) {
            const e = await tok.encode(text, null, { addSpecialTokens: false });
            const ids = e.getIds();
            let decoded = await tok.decode(ids, false);
            if (cleanup) decoded = cleanUp(decoded);
            lines.push(JSON.stringify({ ids, offsets: e.getOffsets().flat(), decode: decoded }));
        }
        for (const [a, b] of PAIRS) {
            const e = await tok.encode(a, b);
            let decoded = await tok.decode(e.getIds(), true);
            if (cleanup) decoded = cleanUp(decoded);
            lines.push(JSON.stringify({ a, b, ids: e.getIds(), types: e.getTypeIds(), decode_skip: decoded }));
        }
        writeFileSync(join(out, `family_${name}.jsonl`), lines.join('\n') + '\n');
        console.log(`${name}: ${corpus.length} lines`);
    }
}

main();

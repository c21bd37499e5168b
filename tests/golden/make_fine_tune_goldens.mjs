// make_fine_tune_goldens.mjs - what bert_train's data preparation must give,
// computed here from Hugging Face's own Rust tokenizer (the npm package
// `tokenizers`) by the example scripts' own steps, written independently of
// the C code:
//
//  - question answering: transformers' examples/pytorch/question-answering/
//    run_qa.py, prepare_train_features: the question's leading white space
//    stripped, tokenizer(question, context, truncation="only_second",
//    max_length, stride=doc_stride, return_overflowing_tokens=True,
//    return_offsets_mapping=True), and for each window the answer's start and
//    end token found from the offsets and sequence ids (the [CLS] index when
//    the answer is not wholly inside the window, or there is none);
//  - token classification: the text's pre-tokenizer words (word_ids), each
//    word tagged B-x / I-x / O from the character spans, the first piece of a
//    word carrying the tag and the others -100, as run_ner.py's
//    tokenize_and_align_labels does with label_all_tokens=False.
//
//   npm install --ignore-scripts tokenizers
//   node tests/golden/make_fine_tune_goldens.mjs      (from the project root, after make test)
//
// NPM_REF: a folder whose node_modules holds tokenizers (default: resolved
// from the project root).  BERT_TOKENIZER_JSON: bert-base-uncased's
// tokenizer.json (the test models' vocabulary; default
// ../shared/models/bert-base-uncased-tokenizer/tokenizer.json).  The RoBERTa
// cases read build/models/roberta-qa/tokenizer.json, which make test writes.
//
// Writes tests/golden/fine_tune_data.jsonl, one case a line.
import { createRequire } from 'module';
import { writeFileSync } from 'fs';
import { join } from 'path';

const require = createRequire(join(process.env.NPM_REF || process.cwd(), 'package.json'));
const { Tokenizer } = require('tokenizers');

const bertJson = process.env.BERT_TOKENIZER_JSON || '../shared/models/bert-base-uncased-tokenizer/tokenizer.json';

const context =
    'The lighthouse on the northern cape was built in 1852 by a company of stonemasons from Aberdeen. ' +
    'Its lamp burned whale oil until 1890, when the keepers switched to paraffin, and it was automated in 1978. ' +
    'Today the tower is a museum run by volunteers, open every weekend from April to October, ' +
    'and visitors can climb its 132 steps to see the old clockwork that turned the lens.';

const qaCases = [
    ['When was the lighthouse built?', '1852'],
    ['  Who built the lighthouse?', 'a company of stonemasons from Aberdeen'],
    ['What did the lamp burn?', 'whale oil'],
    ['When was it automated?', '1978'],
    ['Who runs the museum?', 'volunteers'],
    ['How many steps are there?', '132'],
    ['What did the clockwork turn?', 'the lens'],
    ['What colour is the door?', null],
];

// [max_length, doc_stride] settings: several windows, overlapping by the stride.
const qaSettings = [[40, 8], [64, 16], [32, 4]];

// The windows: tokenizers' Encoding::truncate on the context's pieces (windows
// of max_length minus the question and the specials, starting every that
// many minus doc_stride, until one reaches the end), each put in the pair
// template ([CLS] q [SEP] c [SEP], RoBERTa's <s> q </s></s> c </s>), as
// tokenizer(question, context, truncation="only_second", stride=doc_stride,
// return_overflowing_tokens=True) returns them in Python.  (This npm build's
// encode(q, c) returns only the first overflowing window, so the windows are
// cut here from its pieces and offsets.)
async function qaWindows(tok, clsId, sepId, seps, question, ctx, answer, maxLength, stride) {
    tok.disableTruncation();
    const q = await tok.encode(question.replace(/^\s+/, ''), null, { addSpecialTokens: false });
    const c = await tok.encode(ctx, null, { addSpecialTokens: false });
    const qIds = Array.from(q.getIds()), cIds = Array.from(c.getIds()), cOff = c.getOffsets();
    const width = maxLength - qIds.length - 2 - seps, step = width - stride;
    const startChar = answer === null ? -1 : ctx.indexOf(answer);
    const endChar = answer === null ? -1 : startChar + answer.length;
    const out = [];
    for (let a = 0; ; a += step) {
        const b = Math.min(a + width, cIds.length);
        const ids = [clsId, ...qIds, ...Array(seps).fill(sepId), ...cIds.slice(a, b), sepId];
        const seq = [null, ...qIds.map(() => 0), ...Array(seps).fill(null), ...cIds.slice(a, b).map(() => 1), null];
        const offsets = [[0, 0], ...q.getOffsets(), ...Array(seps).fill([0, 0]), ...cOff.slice(a, b), [0, 0]];
        // run_qa.py's prepare_train_features from here.
        const cls = ids.indexOf(clsId);
        let start = cls, end = cls;
        if (answer !== null) {
            let ts = 0;
            while (seq[ts] !== 1) ts++;
            let te = ids.length - 1;
            while (seq[te] !== 1) te--;
            if (offsets[ts][0] <= startChar && offsets[te][1] >= endChar) {
                while (ts < offsets.length && offsets[ts][0] <= startChar) ts++;
                start = ts - 1;
                while (offsets[te][1] >= endChar) te--;
                end = te + 1;
            }
        }
        out.push({ ids, start, end });
        if (b === cIds.length) break;
    }
    return out;
}

const nerCases = [
    ['John Smith lives in New York.', [[0, 10, 'PER'], [20, 28, 'LOC']]],
    ['Angela Merkel met Emmanuel Macron in Paris on Tuesday.', [[0, 13, 'PER'], [18, 33, 'PER'], [37, 42, 'LOC']]],
    ['The Huggingface team works with Wikipedia editors in Brooklyn.', [[4, 15, 'ORG'], [32, 41, 'ORG'], [53, 61, 'LOC']]],
    ['Nothing to see here.', []],
];

async function nerLabels(tok, text, entities) {
    tok.setTruncation(512);
    const e = await tok.encode(text);
    const words = e.getWordIds(), offsets = e.getOffsets();
    // Each word's first and last character.
    const span = new Map();
    words.forEach((w, i) => {
        if (w === null || w === undefined) return;
        const s = span.get(w);
        if (!s) span.set(w, [offsets[i][0], offsets[i][1]]);
        else s[1] = offsets[i][1];
    });
    const tagOf = (w) => {
        const [a, b] = span.get(w);
        for (const [s, t, l] of entities)
            if (a >= s && b <= t) return (a === s ? 'B-' : 'I-') + l;
        return 'O';
    };
    let previous = null;
    const labels = words.map((w) => {
        if (w === null || w === undefined) { previous = null; return null; }
        const first = w !== previous;
        previous = w;
        return first ? tagOf(w) : null;
    });
    return { ids: Array.from(e.getIds()), labels };
}

const lines = [];
const bert = Tokenizer.fromFile(bertJson);
const roberta = Tokenizer.fromFile('build/models/roberta-qa/tokenizer.json');
// Dynamic padding: no tokenizer.json padding (bert-base-uncased's pads to 512).
bert.disablePadding();
roberta.disablePadding();
const models = [['qa-f32', bert, bert.tokenToId('[CLS]'), bert.tokenToId('[SEP]'), 1],
                ['roberta-qa', roberta, roberta.tokenToId('<s>'), roberta.tokenToId('</s>'), 2]];
for (const [model, tok, cls, sep, seps] of models)
    for (const [maxLength, stride] of qaSettings)
        for (const [question, answer] of qaCases)
            lines.push({
                task: 'qa', model, max_length: maxLength, doc_stride: stride, question, context,
                answer_start: answer === null ? null : context.indexOf(answer), answer_text: answer,
                windows: await qaWindows(tok, cls, sep, seps, question, context, answer, maxLength, stride),
            });
bert.setTruncation(512);
for (const [text, entities] of nerCases)
    lines.push({ task: 'tokens', model: 'ner-conll-f32', text, entities, ...(await nerLabels(bert, text, entities)) });
writeFileSync('tests/golden/fine_tune_data.jsonl', lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
console.log(`wrote ${lines.length} cases to tests/golden/fine_tune_data.jsonl`);

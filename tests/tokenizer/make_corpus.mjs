// make_corpus.mjs - writes tests/tokenizer/corpus.jsonl, the texts the
// tokenizer is checked on: hand-written lines for every case that matters,
// then lines drawn at random (with a fixed seed, so the file is reproducible)
// from pools of scripts, marks, symbols, controls and whitespace.
//
//   node tests/tokenizer/make_corpus.mjs          (from the project root)
//
// One JSON string a line.  No line holds U+0000 (the C side reads the file
// through a JSON reader with NUL-terminated strings); NUL bytes are covered
// by bytes.jsonl instead.
import { writeFileSync } from 'fs';

const hand = [
    // English prose of several domains
    'The quick brown fox jumps over the lazy dog.',
    'In 1969, Neil Armstrong became the first person to walk on the Moon.',
    "Scientists at CERN announced on Tuesday that they'd observed a new particle.",
    'The defendant shall pay the plaintiff the sum of $1,250,000 within thirty (30) days.',
    'Patients received 5 mg/kg of the drug twice daily; adverse events were rare (<2%).',
    'Preheat the oven to 180°C, then whisk the eggs, sugar and butter until fluffy.',
    'The central bank raised interest rates by 0.25 percentage points to 5.5%.',
    'Shall I compare thee to a summer\'s day? Thou art more lovely and more temperate.',
    "I can't believe it's not butter! We're sure you'll love it, won't you?",
    "She said, \"Don't go there,\" but he'd already left; they've never listened, I'm afraid.",
    'Photosynthesis converts light energy into chemical energy stored in glucose.',
    'The mitochondria is the powerhouse of the cell.',
    'Machine learning models such as BERT are pre-trained on large unlabeled corpora.',
    'Transformers use self-attention to weigh the importance of each token in a sequence.',
    'The match ended 2-1 after a stoppage-time goal from the visiting striker.',
    'Hello I\'m a [MASK] model.',
    'The capital of France is [MASK].',
    'Unaffable, unbelievably, antidisestablishmentarianism, floccinaucinihilipilification.',
    'GPT, BERT, RoBERTa, DistilBERT and ALBERT are all transformer-based language models.',
    'Mr. Smith went to Washington D.C. on Jan. 5th at 3 p.m. e.g. for a meeting i.e. a hearing.',
    'UNwant\u00e9d,running',
    'unwantedX running',
    'A, na\u00efve [MASK] AllenNLP sentence.',
    '\u91ce\u53e3\u91cc\u4f73 Noguchi Rika',
    'ah\u535a\u63a8zz',
    ' \tHeLLo!how  \n Are yoU?  ',
    ' \tH\u00e4LLo!how  \n Are yoU?  ',
    "a\n'll !!to?'d of, can't.",
    '\u00ad',
    'Test \u00ad test',
    // accents and combining marks
    'caf\u00e9 na\u00efve r\u00e9sum\u00e9 Zo\u00eb \u00c5ngstr\u00f6m S\u00e3o Paulo Dvo\u0159\u00e1k \u0141\u00f3d\u017a \u00d8resund',
    'cre\u0300me bru\u0302le\u0301e jalapen\u0303o fac\u0327ade Beyonce\u0301',
    'e\u0301 a\u0308 o\u0302 n\u0303 u\u030a c\u030c',
    'a\u0301\u0316 a\u0316\u0301 a\u0323\u0302 a\u0302\u0323 q\u0307\u0323 q\u0323\u0307',
    '\u1e69 \u1e0b\u0323 d\u0307\u0323 d\u0323\u0307 \u0105\u0301 \u01fa',
    'Z\u0334\u0321\u032a\u032b\u0341a\u0338\u0323l\u0334g\u0337o\u0336 t\u0335e\u0337x\u0334t\u0338',
    'Stra\u00dfe STRASSE \u1e9e \u00df\u00df',
    '\u00c6r\u00f8 \u00e6sir \u0153uvre \u0152UVRE \u0133sselmeer \u0132',
    'Vi\u1ec7t Nam, H\u00e0 N\u1ed9i, Th\u00e0nh ph\u1ed1 H\u1ed3 Ch\u00ed Minh',
    'Mu\u0308nchen M\u00fcnchen MU\u0308NCHEN',
    'The \u212b (angstrom sign), the \u212a (kelvin sign) and the \u2126 (ohm sign).',
    // CJK, kana, Hangul, compatibility and extension-plane ideographs
    '\u6211\u7231\u5317\u4eac\u5929\u5b89\u95e8\u3002\u4eca\u5929\u5929\u6c14\u5f88\u597d\uff01',
    '\u7684\u4eba\u6709',
    '\u6771\u4eac\u90fd\u306b\u4f4f\u3093\u3067\u3044\u307e\u3059\u3002\u30ab\u30bf\u30ab\u30ca\u3068\u3072\u3089\u304c\u306a\u3002',
    '\uff76\uff80\uff76\uff85 \u30ab\u30bf\u30ab\u30ca \u3072\u3089\u304c\u306a \u30fc\u30fb',
    '\ud55c\uad6d\uc5b4\ub294 \uc5b4\ub835\uc9c0 \uc54a\uc2b5\ub2c8\ub2e4. \uc548\ub155\ud558\uc138\uc694!',
    '\u1100\u1161\u11a8 \u3131\u314f \uac00\ub098\ub2e4\ub77c',
    '\u{20000}\u{20001}\u{2A6D6}\u{2A700}\u{2B740}\u{2B81D}\u{2B820}\u{2B91F}\u{2B920}\u{2CEA1}\u{2CEB0}\u{30000}',
    'x\u{20000}y \u{2F800}\u{2FA1D} \uf900\ufa0e\ufad9 \u2f00\u2fd5 \u3400\u4dbf \u9fff\ua000',
    '\u3007\u3021\u3038 \u3005 \u303b \u31f0 \u3192',
    // other scripts
    '\u0645\u064e\u0631\u0652\u062d\u064e\u0628\u064b\u0627 \u0628\u0650\u0627\u0644\u0639\u064e\u0627\u0644\u064e\u0645\u0650\u060c \u0643\u064a\u0641 \u062d\u0627\u0644\u0643\u061f',
    '\u05e9\u05b8\u05c1\u05dc\u05d5\u05b9\u05dd \u05e2\u05d5\u05b9\u05dc\u05b8\u05dd',
    '\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440! \u0401\u043b\u043a\u0430 \u0451\u0436\u0438\u043a \u0419\u043e\u0433\u0443\u0440\u0442',
    '\u039f\u0394\u03a5\u03a3\u03a3\u0395\u03a5\u03a3 \u03a3\u03af\u03c3\u03c5\u03c6\u03bf\u03c2 \u03bb\u03cc\u03b3\u03bf\u03c2 \u03a3\u03a3\u03a3 \u03c3\u03c2 \u03a3.',
    '\u0391\u0398\u0397\u039d\u0391 \u0386\u03b8\u03b7\u03bd\u03b1 \u0390 \u03b0 \u1f00\u1f10\u1fb3',
    '\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e04\u0e23\u0e31\u0e1a \u0e20\u0e32\u0e29\u0e32\u0e44\u0e17\u0e22',
    '\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e\u0964 \u0915\u093c \u0915\u094d\u0937',
    '\u09ac\u09be\u0982\u09b2\u09be \u09ad\u09be\u09b7\u09be \u09f3\u09fd',
    '\u0ba4\u0bae\u0bbf\u0bb4\u0bcd \u0c24\u0c46\u0c32\u0c41\u0c17\u0c41 \u0c95\u0ca8\u0ccd\u0ca8\u0ca1',
    '\u10e5\u10d0\u10e0\u10d7\u10e3\u10da\u10d8 \u0570\u0561\u0575\u0565\u0580\u0565\u0576 \u12a0\u121b\u122d\u129b',
    '\u1780\u17d2\u1798\u17c2\u179a \u0f56\u0f7c\u0f51\u0f0b\u0f61\u0f72\u0f42 \u1019\u103c\u1014\u103a\u1019\u102c',
    // emoji and ZWJ sequences
    'I love it \ud83d\ude00\ud83d\ude02\ud83d\udc4d\ud83c\udffd!',
    'Family: \ud83d\udc69\u200d\ud83d\udc69\u200d\ud83d\udc67\u200d\ud83d\udc66 and \ud83c\udff3\ufe0f\u200d\ud83c\udf08 flag',
    'Flags \ud83c\uddeb\ud83c\uddf7 \ud83c\uddef\ud83c\uddf5 keycap 1\ufe0f\u20e3 heart \u2764\ufe0f \u2764',
    'hello\ud83d\ude00world emoji\ud83e\udd70new \ud83e\udee0 \ud83e\udd72',
    // control and format characters
    'soft\u00adhyphen zero\u200bwidth lrm\u200emark bom\ufeffhere nel\u0085line vt\u000bline ff\u000cline',
    'joiner\u200dnon\u200cjoiner word\u2060joiner rtl\u202eoverride\u202c \u2066isolate\u2069',
    'unit\u001fsep del\u007fete bell\u0007 esc\u001b[0m',
    'private\ue000use \udb80\udc00plane15 replacement\ufffdchar',
    'tab\tnew\nline\r\ncarriage\rreturn',
    '\u0600\u0601 \u06dd \u070f \u08e2 \u0890\u0891 \u180e \u{110BD} \u{13430}\u{1343F} \u{1BCA0} \u{1D173} \u{E0001}\u{E0020}',
    // punctuation, quotes, dashes, symbols
    '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~',
    'a!b"c#d$e%f&g\'h(i)j*k+l,m-n.o/p:q;r<s=t>u?v@w[x\\y]z^a_b`c{d|e}f~g',
    '\u201cquoted\u201d \u2018single\u2019 \u00abguillemets\u00bb \u201elow\u201c \u2039angle\u203a \u300cJapanese\u300d \u300e\u300f \u3010\u3011',
    'em\u2014dash en\u2013dash hyphen\u2010nb\u2011fig\u2012bar\u2015 ellipsis\u2026 bullet\u2022 middle\u00b7dot',
    '\u00bfQu\u00e9? \u00a1S\u00ed! \u3001\u3002\uff0c\uff01\uff1f \u061f \u060c \u0964 \u104b \u2e2e \u2e3a \u2e43 \u2e4f \u2e52',
    '\u20ac100 \u00a9 2024 \u00ae \u2122 25\u00b0C \u00b1 \u00d7 \u00f7 \u00a7 \u00b6 \u00a3 \u00a5 \u00a2 \u00ac \u221e \u2248 \u2260 \u221a \u2211',
    '\u2665 \u2603 \u2605 \u2192 \u21d2 \u2200 \u2203 \u2295 \u2302 \u25a0 \u25cf \u266a \u00a4 \u00a6 \u00a8 \u00af \u00b4 \u00b8',
    '\u166d\u166e \u{111C9} \u1734 \u0f3a\u0f3b \u2308\u2309 \u29fc\u29fd \ufe10\ufe19 \uff5f\uff60',
    // numbers
    '3.14159 2.71828 1,000,000 1e-9 0x1F 0b1010 -42 +7 2024-01-01 12:30pm 99.9%',
    '\u00bd \u00bc \u00be \u00b2 \u00b3 \u00b9 \u2460 \u2461 \u216b \u2167 \u0663 \u0664 \u06f5 \u0968 \uff13\uff14 \u{1D7D8}',
    'Call +1 (555) 123-4567 or +44 20 7946 0958; ISBN 978-3-16-148410-0.',
    // URLs, e-mail, code
    'Visit https://huggingface.co/bert-base-uncased?tab=files#readme or http://example.com/a_b-c.html',
    'Mail me at first.last+tag@example.co.uk or <admin@localhost>.',
    'int main(void) { printf("%d\\n", a[i] << 2); return x != y && z >= 0; }',
    'def f(x): return {k: v ** 2 for k, v in x.items() if v is not None}  # comment',
    "SELECT name, COUNT(*) FROM users WHERE age >= 18 AND email LIKE '%@%.com' GROUP BY 1;",
    '{"key": [1, 2.5, null, true], "nested": {"a": "b"}}',
    '/^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]{2,}$/',
    'C:\\Users\\name\\Documents\\file.txt ~/home/user/.bashrc ../../etc/passwd',
    'snake_case camelCase PascalCase kebab-case SCREAMING_SNAKE_CASE __dunder__',
    // words around the 100-character limit
    'a'.repeat(99),
    'a'.repeat(100),
    'a'.repeat(101),
    'x ' + 'b'.repeat(100) + ' y ' + 'c'.repeat(101) + ' z',
    'hello' + 'world'.repeat(19),
    'hello' + 'world'.repeat(20),
    'e\u0301'.repeat(60),
    'e\u0301'.repeat(50),
    'a'.repeat(99) + 'e\u0301',
    'a'.repeat(99) + '\u00e9',
    'a'.repeat(99) + '\u0130',
    'a'.repeat(98) + '\u0130',
    '\u6f22'.repeat(150),
    'antidisestablishmentarianism'.repeat(4),
    'supercalifragilisticexpialidocious'.repeat(3) + '!',
    // words with an unknown character inside
    'hello\u2603world na\u00efve\u2603snow ab\u{10FFFD}cd abc\u0430\u0431\u0432 unknown\u{1F9FF}char',
    'the\u{E0100}selector x\ufe0fy text\u20dd',
    // runs of whitespace
    'a  \t\n  b\r\n\r\nc      d',
    'line\u2028separator paragraph\u2029separator ideographic\u3000space nbsp\u00a0space',
    'em\u2003space thin\u2009space hair\u200aspace ogham\u1680space narrow\u202fnbsp math\u205fspace',
    '\u3000\u3000\u3000indented\u3000\u3000',
    '   leading and trailing   ',
    // special tokens glued to text and punctuation
    '[MASK].',
    'x[CLS]y',
    '[mask] [Mask] [MASK ] [ MASK] [MASK',
    '[CLS][SEP][PAD][UNK][MASK]',
    '[[MASK]] ([MASK]) {[SEP]} "[CLS]"',
    'The [MASK] sat on the [MASK][MASK].',
    '[unused0] [unused1] [unused99]',
    'a[SEP]b[SEP]c',
    '[MASK]\u0301 \u00e9[MASK] [MASK]\u00ad',
    '[CLS]\u3000[SEP]\u200b[MASK]',
    '[MA SK] [CL S] [SEP',
    // dotted and dotless i, sharp s, ligatures, special cases
    '\u0130stanbul D\u0130YARBAKIR \u0130 \u0131 I i \u0130\u0307',
    'ba\u0131\u015f \u0130yi Ak\u0131ll\u0131',
    '\ufb01nance \ufb02ow \ufb00 \ufb03 \ufb04 \ufb05 \ufb06',
    '\u01c4 \u01c5 \u01c6 \u01c7 \u01c8 \u01c9 \u01f1',
    '\u1e9e \u00df \u1e9b \u017f \u0149 \u01f0 \u0587',
    '\u1f88 \u1fbc \u1fcc \u1ffc \u0345',
    '\ua7cb \ua7dc \u1c89 \u{10D50}\u{10D65} \u{16EA0}',
];

// A small deterministic generator (mulberry32).
let seed = 20240607;
function rand() {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (a) => a[Math.floor(rand() * a.length)];
const between = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
const fromRange = (lo, hi) => String.fromCodePoint(between(lo, hi));

const words = ('the of and to in is was for on that with as by at from his her an were are which this be ' +
    'has had not but have its one also first new after who they been other their two more all time into ' +
    'city year world state university school music film team war government national people history ' +
    'running walked jumping unbelievable tokenization embeddings transformer attention network learning ' +
    'Paris London Tokyo Berlin Obama Einstein Shakespeare Google Microsoft Amazon NASA COVID ' +
    "don't can't won't it's we're they've I'm she'd you'll o'clock rock'n'roll").split(' ');

const latinAccented = 'àáâãäåāăąçćĉċčďđèéêëēĕėęěĝğġģĥħìíîïĩīĭįıĵķĺļľŀłñńņňŉòóôõöøōŏőœŕŗřśŝşšţťŧùúûüũūŭůűųŵýÿŷźżžÀÁÂÃÄÅĀÇĆČÈÉÊËĒÌÍÎÏÑÒÓÔÕÖØÙÚÛÜÝŸŽǅǈǋǲǍǎǏǐǑǒǓǔǕǖǗǘǙǚǛǜ';
const punctuation = '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~¡§«¶·»¿‐‑‒–—―‖‗‘’‚‛“”„‟†‡•‣․‥…‧‰′″‹›※‼⁇⁈⁉⁎⁏、。〃〈〉《》「」『』【】〔〕〖〗〘〙〚〛〜〝〞〟・！＂＃％＆＇（）＊，－．／：；？＠［＼］＿｛｝｡｢｣､';
const symbols = '€$£¥¢©®™°±×÷¬∞≈≠√∑∫∂∆∇∈∉∩∪⊂⊃⊕⊗♠♣♥♦♪♫☀☁☂☃★☆✓✔✗✘→←↑↓↔⇒⇔∀∃¤¦¨¯´¸^`|~+<=>';
const whitespace = [' ', ' ', ' ', '  ', '\t', '\n', '\r\n', '\u00a0', '\u2000', '\u2003', '\u2009', '\u200a', '\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\u1680', '\u0085', '\u000b', '\u000c'];
const invisible = ['\u00ad', '\u200b', '\u200c', '\u200d', '\u200e', '\u200f', '\u2060', '\ufeff', '\u202a', '\u202e', '\u2066', '\u0001', '\u001f', '\u007f', '\u0080', '\u009f', '\ue000', '\uf8ff', '\ufffd', '\u{E0041}', '\u{F0000}', '\u0600', '\u08e2', '\u0890', '\u{13430}'];
const marks = () => pick([
    () => fromRange(0x300, 0x36f), () => fromRange(0x483, 0x489), () => fromRange(0x591, 0x5c7),
    () => fromRange(0x610, 0x61a), () => fromRange(0x64b, 0x65f), () => fromRange(0x93c, 0x94d),
    () => fromRange(0xe31, 0xe3a), () => fromRange(0x1ab0, 0x1ace), () => fromRange(0x1dc0, 0x1dff),
    () => fromRange(0x20d0, 0x20f0), () => fromRange(0xfe00, 0xfe0f), () => fromRange(0xfe20, 0xfe2f),
    () => fromRange(0x898, 0x89f), () => fromRange(0x8ca, 0x8e1), () => '\u1734', () => '\u{11930}',
    () => fromRange(0x1d165, 0x1d172), () => fromRange(0x302a, 0x302f), () => '\u0f71\u0f72\u0f80',
])();
const scripts = [
    () => fromRange(0x4e00, 0x9fff), () => fromRange(0x3400, 0x4dbf), () => fromRange(0x20000, 0x2a6df),
    () => fromRange(0x2a700, 0x2ceaf), () => fromRange(0x2ceb0, 0x2ebe0), () => fromRange(0x30000, 0x3134a),
    () => fromRange(0xf900, 0xfaff), () => fromRange(0x2f800, 0x2fa1f),
    () => fromRange(0x3041, 0x3096), () => fromRange(0x30a1, 0x30fa), () => fromRange(0xff66, 0xff9d),
    () => fromRange(0xac00, 0xd7a3), () => fromRange(0x1100, 0x11ff), () => fromRange(0x3131, 0x318e),
    () => fromRange(0x621, 0x64a), () => fromRange(0x5d0, 0x5ea), () => fromRange(0x410, 0x44f),
    () => fromRange(0x391, 0x3a9), () => fromRange(0x3b1, 0x3c9), () => fromRange(0x1f00, 0x1fff),
    () => fromRange(0xe01, 0xe5b), () => fromRange(0x900, 0x97f), () => fromRange(0x980, 0x9ff),
    () => fromRange(0x1e00, 0x1eff), () => fromRange(0x100, 0x24f), () => fromRange(0xc0, 0xff),
    () => fromRange(0x1f300, 0x1faff), () => fromRange(0x2460, 0x24ff), () => fromRange(0xff01, 0xff5e),
    () => fromRange(0x2e00, 0x2e5d), () => fromRange(0x10d00, 0x10d8f), () => fromRange(0x16e40, 0x16ebf),
    () => fromRange(0xa720, 0xa7ff), () => fromRange(0x1c80, 0x1c8a), () => fromRange(0x11000, 0x11fff),
];
// Any code point but surrogates and U+0000.
const anyChar = () => { for (;;) { const c = between(1, 0x10ffff); if (c < 0xd800 || c > 0xdfff) return String.fromCodePoint(c); } };
const bmpChar = () => { for (;;) { const c = between(1, 0xffff); if (c < 0xd800 || c > 0xdfff) return String.fromCodePoint(c); } };

const specials = ['[CLS]', '[SEP]', '[MASK]', '[PAD]', '[UNK]', '[mask]', '[MASK', 'MASK]', '[unused5]'];
const piece = () => {
    const r = rand();
    if (r < 0.30) return pick(words);
    if (r < 0.36) return pick(words).toUpperCase();
    if (r < 0.42) return Array.from({ length: between(1, 6) }, () => pick([...latinAccented])).join('');
    if (r < 0.50) return pick([...punctuation]);
    if (r < 0.54) return pick([...symbols]);
    if (r < 0.62) return Array.from({ length: between(1, 4) }, () => pick(scripts)()).join('');
    if (r < 0.68) return pick(words) + marks() + (rand() < 0.5 ? marks() : '');
    if (r < 0.72) return pick(invisible);
    if (r < 0.76) return String(between(0, 99999));
    if (r < 0.79) return pick(specials);
    if (r < 0.82) return anyChar();
    if (r < 0.85) return bmpChar();
    if (r < 0.87) return pick(words) + pick(scripts)() + pick(words);
    if (r < 0.88) return 'x'.repeat(between(95, 105));
    return pick(whitespace);
};
const sep = () => (rand() < 0.7 ? ' ' : rand() < 0.5 ? '' : pick(whitespace));

const generated = [];
for (let i = 0; i < 1100; i++) {
    const n = between(1, 18);
    let line = '';
    for (let k = 0; k < n; k++) line += (k ? sep() : '') + piece();
    generated.push(line);
}

const lines = [...hand, ...generated];
for (const l of lines) if (l.includes('\u0000')) throw new Error('a corpus line holds U+0000');
// JSON.stringify leaves U+2028/U+2029 raw; escape them so every tool sees one line per text.
const out = lines.map((l) => JSON.stringify(l).replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029'));
writeFileSync('tests/tokenizer/corpus.jsonl', out.join('\n') + '\n');
console.log(`tests/tokenizer/corpus.jsonl: ${lines.length} lines (${hand.length} written by hand)`);

// make_combining_marks.mjs - where the Rust tokenizer's Unicode tables,
// older than utf8proc's, decide otherwise, as C tables of
// ext/base/unicode_text.c: the code points its StripAccents normalizer removes
// (is_combining_mark), and those that Unicode 15 decomposes (NFKD, here
// Node's String.normalize) but its NFKD leaves alone.
//
//   NPM_REF=/path/to/node_modules node tests/tokenizer/make_combining_marks.mjs
//
// Prints the table; paste it between the BEGIN/END lines of
// "combining marks" in ext/base/unicode_text.c.
import { createRequire } from 'module';
import { join } from 'path';

const require = createRequire(join(process.cwd(), 'package.json'));
const resolve = (name) => (process.env.NPM_REF ? join(process.env.NPM_REF, name) : name);
const { stripAccentsNormalizer, nfkdNormalizer } = require(resolve('tokenizers'));

function table(name, keep) {
    const ranges = [];
    for (let cp = 0; cp <= 0x10ffff; cp++) {
        if (cp >= 0xd800 && cp <= 0xdfff) continue;
        if (!keep(String.fromCodePoint(cp))) continue;
        const last = ranges[ranges.length - 1];
        if (last && last[1] === cp - 1) last[1] = cp;
        else ranges.push([cp, cp]);
    }
    const hex = (v) => '0x' + v.toString(16).toUpperCase().padStart(4, '0');
    const cells = ranges.map(([a, b]) => `{${hex(a)}, ${hex(b)}, 1}`);
    const lines = [];
    for (let i = 0; i < cells.length; i += 4) lines.push('    ' + cells.slice(i, i + 4).join(', ') + ',');
    console.log(`static const utext_override ${name}[] = {\n${lines.join('\n')}\n};`);
}

const strip = stripAccentsNormalizer(), nfkd = nfkdNormalizer();
table('strip_accents_marks', (s) => strip.normalizeString(s) === '');
table('nfkd_kept', (s) => s.normalize('NFKD') !== s && nfkd.normalizeString(s) === s);

#!/usr/bin/python3
"""make_family_fixtures.py - small tokenizers of the byte-level BPE and
SentencePiece Unigram families, generated from the tokenizer corpus, for the
committed tests (tests/tokenizer/make_family_golden.mjs computes what the Rust
`tokenizers` library gives with them).

    /usr/bin/python3 tests/tokenizer/make_family_fixtures.py     (from the project root)

Needs Debian's python3-sentencepiece (and python3-protobuf).  Writes:

  tests/fixtures/unigram-xlmr/tokenizer.json   a Unigram model trained by
      SentencePiece on the corpus, with a precompiled_charsmap that
      SentencePiece compiled from the rules below (full-width letters,
      ligatures, a two-character key, a deletion), laid out as transformers
      converts XLM-RoBERTa's sentencepiece.bpe.model: Precompiled + Strip +
      Replace normalizers, Metaspace, <s> A </s></s> B </s>, <mask> lstrip.
  tests/fixtures/unigram-bytes/tokenizer.json  a byte_fallback Unigram with
      NFKD + StripAccents + Lowercase, Metaspace prepend_scheme "first" and
      a Replace/ByteFallback/Fuse/Strip decoder, T5-style A </s> template.
  tests/fixtures/deberta-v3/tokenizer.json     a Unigram trained by SentencePiece
      on the corpus with DeBERTa-v3's pieces [PAD] [CLS] [SEP] [UNK] at ids
      0 to 3, converted as transformers' DebertaV2Converter converts
      deberta-v3's spm.model (see deberta_v3 below), [MASK] after the
      vocabulary; with the tokenizer_config.json of such a checkpoint.
  tests/fixtures/bpe-bytelevel/tokenizer.json  a byte-level BPE trained here
      on the corpus (merges by pair frequency), RoBERTa's layout with
      add_prefix_space, and added tokens that are single_word, rstrip and
      normalized.
"""
import collections
import json
import os
import re
import tempfile

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as model_pb2

ROOT = os.getcwd()
CORPUS = [json.loads(l) for l in open(os.path.join(ROOT, "tests/tokenizer/corpus.jsonl"), encoding="utf-8") if l.strip()]

# Normalization rules compiled into the charsmap (source code points -> target).
RULES = [([0xFF21 + i], [0x41 + i]) for i in range(26)] + [
    ([0xFB01], [0x66, 0x69]),          # ﬁ -> fi (one character becomes two)
    ([0x2026], [0x2E, 0x2E, 0x2E]),    # … -> ...
    ([0x00A0], [0x20]),                # no-break space -> space
    ([0x2460], [0x31]),                # ① -> 1
    ([0x0065, 0x0301], [0x00E9]),      # e + combining acute -> é (two characters become one)
    ([0x2122], [0x54, 0x4D]),          # ™ -> TM
    ([0x3000], [0x20]),                # ideographic space -> space
    ([0x201C], [0x22]), ([0x201D], [0x22]),
]


def train_unigram(tmp, name, vocab_size, byte_fallback, rules, **pieces):
    text = os.path.join(tmp, "corpus.txt")
    with open(text, "w", encoding="utf-8") as f:
        for line in CORPUS:
            f.write(line.replace("\n", " ") + "\n")
    tsv = os.path.join(tmp, "rules.tsv")
    with open(tsv, "w", encoding="utf-8") as f:
        for src, dst in rules:
            f.write(" ".join("%04X" % c for c in src) + "\t" + " ".join("%04X" % c for c in dst) + "\n")
    prefix = os.path.join(tmp, name)
    spm.SentencePieceTrainer.train(input=text, model_prefix=prefix, vocab_size=vocab_size, model_type="unigram",
                                   character_coverage=0.98, byte_fallback=byte_fallback,
                                   normalization_rule_tsv=tsv, hard_vocab_limit=False, seed_sentencepiece_size=20000,
                                   num_threads=1, minloglevel=2, **pieces)
    m = model_pb2.ModelProto()
    m.ParseFromString(open(prefix + ".model", "rb").read())
    return m


def added(content, id, special=True, lstrip=False, rstrip=False, normalized=False, single_word=False):
    return {"id": id, "content": content, "single_word": single_word, "lstrip": lstrip, "rstrip": rstrip,
            "normalized": normalized, "special": special}


def special(name, id, type_id=0):
    return {"SpecialToken": {"id": name, "type_id": type_id}}


def seq(which, type_id=0):
    return {"Sequence": {"id": which, "type_id": type_id}}


def write(name, tokenizer):
    d = os.path.join(ROOT, "tests/fixtures", name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer, f, ensure_ascii=False, indent=None, separators=(",", ":"))
        f.write("\n")


def unigram_xlmr(tmp):
    m = train_unigram(tmp, "xlmr", 3000, False, RULES)
    import base64
    charsmap = base64.b64encode(m.normalizer_spec.precompiled_charsmap).decode()
    vocab = [["<s>", 0.0], ["<pad>", 0.0], ["</s>", 0.0], ["<unk>", 0.0]]
    vocab += [[p.piece, p.score] for p in m.pieces[3:]]
    vocab.append(["<mask>", 0.0])
    n = len(vocab)
    write("unigram-xlmr", {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [added("<s>", 0), added("<pad>", 1), added("</s>", 2), added("<unk>", 3),
                         added("<mask>", n - 1, lstrip=True)],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Precompiled", "precompiled_charsmap": charsmap},
            {"type": "Strip", "strip_left": False, "strip_right": True},
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": "\u2581"}]},
        "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
        "post_processor": {"type": "TemplateProcessing",
                           "single": [special("<s>", 0), seq("A"), special("</s>", 0)],
                           "pair": [special("<s>", 0), seq("A"), special("</s>", 0), special("</s>", 0), seq("B"),
                                    special("</s>", 0)],
                           "special_tokens": {"<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]},
                                              "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}}},
        "decoder": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
        "model": {"type": "Unigram", "unk_id": 3, "vocab": vocab, "byte_fallback": False},
    })


def unigram_bytes(tmp):
    m = train_unigram(tmp, "bytes", 2500, True, RULES[:5])
    import base64
    charsmap = base64.b64encode(m.normalizer_spec.precompiled_charsmap).decode()
    vocab = [[p.piece, p.score] for p in m.pieces]
    unk = next(i for i, p in enumerate(m.pieces) if p.type == 2)
    write("unigram-bytes", {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [added(m.pieces[i].piece, i) for i in range(3)] +
                        [added("[sep]", len(vocab), special=False, normalized=True, single_word=True)],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Replace", "pattern": {"String": "``"}, "content": "\""},
            {"type": "NFKD"}, {"type": "StripAccents"}, {"type": "Lowercase"},
            {"type": "Precompiled", "precompiled_charsmap": charsmap}]},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "WhitespaceSplit"},
            {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": True}]},
        "post_processor": {"type": "TemplateProcessing",
                           "single": [seq("A"), special("</s>", 0)],
                           "pair": [seq("A"), special("</s>", 0), seq("B", 1), special("</s>", 1)],
                           "special_tokens": {"</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "Unigram", "unk_id": unk, "vocab": vocab, "byte_fallback": True},
    })


# Spaces of other widths, which the charsmap turns into " " between the
# converter's Strip and its Replace(" {2,}", " ").
SPACE_RULES = [([0x0009], [0x20]), ([0x00A0], [0x20]), ([0x2003], [0x20]), ([0x3000], [0x20])]


def deberta_v3(tmp):
    """transformers' DebertaV2Converter (src/transformers/convert_slow_tokenizer.py
    of huggingface/transformers, commit 00111b31e6624701fe598078e80d36127ac95241,
    with SpmConverter's tokenizer(), vocab(), unk_id() and converted()), on a
    model with deberta-v3's settings: do_lower_case false, split_by_punct
    false (so the pre-tokenizer Sequence holds Metaspace alone),
    add_prefix_space true and legacy true (prepend_scheme "always")."""
    rules = [r for r in RULES if r[0] not in ([0x00A0], [0x3000])] + SPACE_RULES
    m = train_unigram(tmp, "deberta", 3000, False, rules, pad_id=0, pad_piece="[PAD]", bos_id=1,
                      bos_piece="[CLS]", eos_id=2, eos_piece="[SEP]", unk_id=3, unk_piece="[UNK]")
    import base64
    charsmap = base64.b64encode(m.normalizer_spec.precompiled_charsmap).decode()
    vocab = [[p.piece, p.score] for p in m.pieces]
    assert [v[0] for v in vocab[:4]] == ["[PAD]", "[CLS]", "[SEP]", "[UNK]"] and m.trainer_spec.unk_id == 3
    # The control pieces become special added tokens (SpmConverter.tokenizer);
    # [UNK] and [MASK] come from the tokenizer's special tokens, [MASK] after
    # the vocabulary (128000 in deberta-v3-base's 128000 pieces).
    added_tokens = [added(p.piece, i) for i, p in enumerate(m.pieces) if p.type in (3, 4)]
    added_tokens += [added("[UNK]", 3), added("[MASK]", len(vocab))]
    metaspace = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True}
    write("deberta-v3", {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": added_tokens,
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Strip", "strip_left": True, "strip_right": True},
            {"type": "Precompiled", "precompiled_charsmap": charsmap},
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [metaspace]},
        "post_processor": {"type": "TemplateProcessing",
                           "single": [special("[CLS]", 0), seq("A"), special("[SEP]", 0)],
                           "pair": [special("[CLS]", 0), seq("A"), special("[SEP]", 0), seq("B", 1),
                                    special("[SEP]", 1)],
                           "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [1], "tokens": ["[CLS]"]},
                                              "[SEP]": {"id": "[SEP]", "ids": [2], "tokens": ["[SEP]"]}}},
        "decoder": metaspace,
        "model": {"type": "Unigram", "unk_id": 3, "vocab": vocab, "byte_fallback": False},
    })
    d = os.path.join(ROOT, "tests/fixtures/deberta-v3")
    names = {"bos_token": "[CLS]", "eos_token": "[SEP]", "unk_token": "[UNK]", "sep_token": "[SEP]",
             "pad_token": "[PAD]", "cls_token": "[CLS]", "mask_token": "[MASK]"}
    with open(os.path.join(d, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(dict(names, do_lower_case=False, split_by_punct=False, vocab_type="spm", model_max_length=512,
                       tokenizer_class="DebertaV2Tokenizer"), f, indent=2)
        f.write("\n")
    with open(os.path.join(d, "special_tokens_map.json"), "w", encoding="utf-8") as f:
        json.dump(names, f, indent=2)
        f.write("\n")


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def bpe_bytelevel():
    byte_char = bytes_to_unicode()
    # Words as GPT-2 splits them, near enough for training (the tokenizer
    # itself uses the ByteLevel pre-tokenizer's exact split).
    split = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?[^\s\w]+|\s+(?!\S)|\s+""")
    counts = collections.Counter()
    for line in CORPUS:
        for w in split.findall(" " + line):
            counts[tuple(byte_char[b] for b in w.encode("utf-8"))] += 1
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for b in range(256):
        vocab[byte_char[b]] = len(vocab)
    words = {w: list(w) for w in counts}
    merges = []
    for _ in range(1500):
        pairs = collections.Counter()
        for w, c in counts.items():
            s = words[w]
            for a, b in zip(s, s[1:]):
                pairs[(a, b)] += c
        if not pairs:
            break
        (a, b), freq = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))
        if freq < 2:
            break
        merges.append(a + " " + b)
        vocab.setdefault(a + b, len(vocab))
        for w in words:
            s = words[w]
            i, out = 0, []
            while i < len(s):
                if i + 1 < len(s) and s[i] == a and s[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(s[i])
                    i += 1
            words[w] = out
    n = len(vocab)
    vocab["<mask>"] = n
    vocab["Ġhello world"] = n + 1
    write("bpe-bytelevel", {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [added("<s>", 0), added("<pad>", 1), added("</s>", 2), added("<unk>", 3),
                         added("<mask>", n, lstrip=True),
                         added("Ġhello world", n + 1, special=False, normalized=True),
                         added("[X]", n + 2, special=False, rstrip=True, single_word=True),
                         added("TODO", n + 3, special=False, normalized=True, single_word=True)],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "post_processor": {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0],
                           "trim_offsets": True, "add_prefix_space": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "vocab": vocab,
                  "merges": merges},
    })


def main():
    with tempfile.TemporaryDirectory() as tmp:
        unigram_xlmr(tmp)
        unigram_bytes(tmp)
        deberta_v3(tmp)
    bpe_bytelevel()


if __name__ == "__main__":
    main()

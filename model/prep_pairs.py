#!/usr/bin/python3
"""Build the text pairs of the sentence-embedding stage (train_embed.py)
from the project's own training text and WordNet.

    /usr/bin/python3 model/prep_pairs.py     # after prep_corpus.py; writes model/work/pairs.tsv

Each line is "kind<TAB>text a<TAB>text b", a pair whose two sides should
embed close together:
  define   a headword and its definition: the "headword: definition" units
           of WordNet and GCIDE in the first stage's training text
  example  a WordNet gloss and an example sentence or a further part of
           the same gloss, from the second stage's training text
  next     two consecutive units of one document of running text in the
           second stage's training text (two verses, two sentences of a
           speech or a chapter)
  synonym  two words of one WordNet synset, or a word and a word of a
           related synset: its hypernym ("puppy" and "dog"), its topic
           domain ("goal" and "soccer") or what it is a part of
  topic    the texts (gloss or example sentence) of two different WordNet
           common-noun synsets under one hypernym one to three levels up,
           which is itself at least six levels below the root (so "animal"
           and "device", not "organism" or "artifact"): sentences of one
           topic ("kitten" and "tabby" under "cat", "violin" and "cello"
           under "bowed stringed instrument")
Only training text is used (never the held-out documents); WordNet's words
carry no held-out text.  A fixed seed chooses at most --max-per-kind pairs
of each kind."""
import argparse
import os
import random
import re

HERE = os.path.dirname(os.path.abspath(__file__))
WORK = os.path.join(HERE, "work")
WORDNET_DIR = "/usr/share/wordnet"
HEAD = re.compile(r"^([^:]{1,40}): (.+)$")


def documents(path):
    doc = []
    for line in open(path, encoding="utf-8"):
        line = line.strip()
        if line:
            doc.append(line)
        elif doc:
            yield doc
            doc = []
    if doc:
        yield doc


def short_head(head):
    return len(head.split()) <= 4 and not head.endswith(".")


POS_PREFIX = re.compile(r"^(?:(?:n|v|a|adv|prep|conj|interj|pron|t|i|pl|sing|p\. p|imp)\.\s*)+")


def define_pairs(path):
    for doc in documents(path):
        m = HEAD.match(doc[0])
        if not m or not short_head(m.group(1)):
            continue
        # GCIDE's leftovers of pronunciation and etymology are no definition.
        d = POS_PREFIX.sub("", m.group(2))
        if len(d.split()) >= 2 and not re.search(r"[\[\]\\=]|p\. pr\.|vb\. n\.", d):
            yield m.group(1), d


def wordnet_doc(doc):
    """The gloss of a WordNet document ("headword: gloss" first), or None."""
    m = HEAD.match(doc[0])
    # a gloss starts in lower case; an address's "Gentlemen of the Senate:" does not
    return m.group(2) if m and short_head(m.group(1)) and m.group(2)[:1].islower() else None


def example_pairs(path):
    for doc in documents(path):
        gloss = wordnet_doc(doc)
        if gloss:
            for unit in doc[1:]:
                yield gloss, unit


def next_pairs(path):
    for doc in documents(path):
        if not wordnet_doc(doc):
            for a, b in zip(doc, doc[1:]):
                yield a, b


def wordnet_synsets(pos):
    """{(offset, synset type): (words, pointers, gloss)} of WordNet's
    data.POS file; pointers are (symbol, offset, part of speech)."""
    out = {}
    for line in open(os.path.join(WORDNET_DIR, "data." + pos), encoding="utf-8", errors="replace"):
        if line.startswith("  ") or " | " not in line:
            continue  # licence header
        head, gloss = line.split(" | ", 1)
        f = head.split(" ")
        n = int(f[3], 16)
        words = [re.sub(r"\(.*?\)$", "", w).replace("_", " ") for w in f[4:4 + 2 * n:2]]
        k = 4 + 2 * n
        ptrs = [(f[k + 1 + 4 * i], f[k + 1 + 4 * i + 1], f[k + 1 + 4 * i + 2]) for i in range(int(f[k]))]
        out[(f[0], f[2])] = (words, ptrs, gloss.strip())
    return out


def synonym_pairs(rng):
    words_of = {}
    hypernyms = {}
    for pos in ("noun", "verb", "adj", "adv"):
        for key, (words, ptrs, _) in wordnet_synsets(pos).items():
            words_of[key] = [w for w in words if not any(c.isupper() for c in w)] or words
            # hypernym, topic domain, whole of which it is a part
            hypernyms[key] = [[(off, p) for sym, off, p in ptrs if sym in group][:1]
                              for group in (("@", "@i"), (";c",), ("#p",))]
    for key in sorted(words_of):
        words = words_of[key]
        if len(words) >= 2:
            a, b = rng.sample(words, 2)
            yield a, b
        for group in hypernyms.get(key, []):
            for off, p in group:
                up = words_of.get((off, p)) or words_of.get((off, "s" if p == "a" else p))
                if up:
                    yield rng.choice(words), rng.choice(up)


def topic_pairs(rng, texts):
    """Pairs of texts of two noun synsets with a common hypernym 1-3 levels
    up, at least six levels below the root; texts: {noun synset offset: its
    units in the training text}."""
    ups = {off: [o for sym, o, _ in ptrs if sym in ("@", "@i")]
           for (off, _), (_, ptrs, _) in wordnet_synsets("noun").items()}
    depth = {}

    def depth_of(off, seen=()):
        if off not in depth:
            above = [u for u in ups[off] if u in ups and u not in seen]
            depth[off] = 0 if not above else 1 + min(depth_of(u, seen + (off,)) for u in above)
        return depth[off]

    members = {}
    for off in sorted(o for o in texts if o in ups):
        frontier = {off}
        for level in range(1, 4):
            frontier = {u for f in frontier for u in ups[f] if u in ups}
            for anc in frontier:
                if depth_of(anc) >= 6:
                    members.setdefault((anc, level), []).append(off)
    for (anc, level), offs in sorted(members.items()):
        if len(offs) < 2:
            continue
        # each member once, with a random other member of the group
        for off in offs:
            other = rng.choice(offs)
            if other != off:
                yield rng.choice(texts[off]), rng.choice(texts[other])


def wordnet_train_units(path):
    """{noun synset offset: its units in the training text}: a WordNet
    document's first unit is "headword: gloss.", matched to its synset by
    the gloss's first part."""
    by_gloss = {}
    for (off, _), (_, _, gloss) in wordnet_synsets("noun").items():
        first = re.split(r';\s*(?=")|;\s+', gloss)[0].strip()
        by_gloss.setdefault(first + ".", []).append(off)
    out = {}
    for doc in documents(path):
        gloss = wordnet_doc(doc)
        # proper nouns and genus names (a capital headword) are left out
        if gloss and gloss in by_gloss and len(by_gloss[gloss]) == 1 and not doc[0][:1].isupper():
            out[by_gloss[gloss][0]] = doc
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default=WORK)
    ap.add_argument("--max-per-kind", type=int, default=150000)
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    kinds = {
        "define": list(define_pairs(os.path.join(args.work, "corpus", "train.txt"))),
        "example": list(example_pairs(os.path.join(args.work, "corpus2", "train.txt"))),
        "next": list(next_pairs(os.path.join(args.work, "corpus2", "train.txt"))),
        "synonym": list(synonym_pairs(rng)),
        # its own generator, so that the other kinds' pairs stay as they were
        "topic": list(topic_pairs(random.Random(args.seed + 1),
                                  wordnet_train_units(os.path.join(args.work, "corpus2", "train.txt")))),
    }
    with open(os.path.join(args.work, "pairs.tsv"), "w", encoding="utf-8") as out:
        for kind, pairs in kinds.items():
            pairs = [(a, b) for a, b in pairs if a.lower() != b.lower()]
            total = len(pairs)
            if len(pairs) > args.max_per_kind:
                pairs = rng.sample(pairs, args.max_per_kind)
            for a, b in pairs:
                out.write(f"{kind}\t{a}\t{b}\n")
            print(f"{kind:8s} {total:7d} pairs, kept {len(pairs)}")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Word-swap pairs for the sentence-embedding stage: an everyday sentence,
the same sentence with one noun replaced by a related WordNet noun
("kitten" -> "cat", "rug" -> "carpet", "fiddle" -> "violin"), and, as its
hard negative, the sentence with that noun replaced by an unrelated one.

    /usr/bin/python3 model/prep_swaps.py --everyday model/work/everyday --out model/work/everyday5

The pairs of prepare_everyday.sh teach related words alone ("rug" and
"carpet") and sentences with the same words; the ranking set's misses are
sentences that share a topic through related words.  Here the only
difference between the positive and the hard negative is the swapped word,
so the contrastive loss can only be lowered by placing related words near
each other inside sentences.  Writes pairs.tsv in prepare_everyday.sh's
layout (kind "swap"), from the sentences of its masked-LM training text
(never the held-out parts); related means: another word of the same synset,
of a direct hypernym or hyponym, or the head noun of the gloss ("young
domestic cat"), of the word's first sense, for a word WordNet has more noun than other senses, every word one the
vocabulary holds whole."""
import argparse
import os
import random
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import prep_pairs  # noqa: E402

WORD = re.compile(r"[A-Za-z]+")
STOP = {"will", "thanks", "there", "here", "yes", "okay", "time", "way", "thing", "one", "day", "today",
        "tomorrow", "tonight", "number", "name", "rom", "rue", "please", "sorry", "lot", "kind", "sort",
        "can", "are", "need", "looking", "search", "things", "may", "might", "must", "have", "was", "were",
        "want", "get", "let", "see", "say", "make", "like", "well", "help", "thank", "sure", "right", "place",
        "part", "end", "point", "case", "fact", "matter", "hold", "set", "anything", "something", "nothing",
        "everything", "someone", "anyone", "ones", "yeah", "hello", "bye", "cool", "great", "fine", "book"}
GLOSS_STOP = {"of", "that", "which", "who", "in", "for", "with", "to", "used", "by", "from", "on", "or",
              "and", "especially", "usually", "having", "as", "at"}


def first_senses(n):
    """{lemma: [noun synset offsets of its first n senses]} from index.noun."""
    out = {}
    for line in open(os.path.join(prep_pairs.WORDNET_DIR, "index.noun"), encoding="utf-8"):
        if line.startswith(" "):
            continue
        f = line.split()
        lemma, synset_cnt, p_cnt = f[0], int(f[2]), int(f[3])
        offs = f[4 + p_cnt + 2:4 + p_cnt + 2 + synset_cnt]
        out[lemma] = offs[:n]
    return out


def other_senses():
    """{lemma: sense count} of the verb, adjective and adverb indexes."""
    out = {}
    for pos in ("verb", "adj", "adv"):
        for line in open(os.path.join(prep_pairs.WORDNET_DIR, "index." + pos), encoding="utf-8"):
            if not line.startswith(" "):
                f = line.split()
                out[f[0]] = out.get(f[0], 0) + int(f[2])
    return out


def related_nouns(vocab, senses):
    """{word: sorted related words}, single lower-case words the vocabulary holds whole."""
    syn = prep_pairs.wordnet_synsets("noun")
    ok = lambda w: w.isalpha() and w.islower() and len(w) >= 3 and w in vocab
    words_of = {off: [w for w in ws if ok(w)] for (off, _), (ws, _, _) in syn.items()}
    info = {off: (ptrs, gloss) for (off, _), (_, ptrs, gloss) in syn.items()}
    # nouns first and foremost: not "will", "good" or "there"
    others = other_senses()
    noun_count = {w: int(n) for w, n in (line.split()[0:3:2] for line in open(
        os.path.join(prep_pairs.WORDNET_DIR, "index.noun"), encoding="utf-8") if not line.startswith(" "))}
    related = {}
    for w, offs in senses.items():
        if not ok(w) or w in STOP or w.endswith("ing") or others.get(w, 0) >= noun_count.get(w, 0):
            continue
        r = set()
        for off in offs:
            if off not in info:
                continue
            ptrs, gloss = info[off]
            r.update(words_of.get(off, []))
            r.update(x for sym, o, _ in ptrs if sym in ("@", "~") for x in words_of.get(o, []))
            head = []
            for t in gloss.split(";")[0].split():
                t = t.strip(",.()\"'")
                if t in GLOSS_STOP:
                    break
                head.append(t)
            if head and ok(head[-1]) and head[-1] in senses:
                r.add(head[-1])
        r.discard(w)
        if r:
            related[w] = sorted(r)
    return related


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--everyday", default=os.path.join(HERE, "work", "everyday"))
    ap.add_argument("--vocab", default=os.path.join(HERE, "demo", "vocab.txt"))
    ap.add_argument("--out", default=os.path.join(HERE, "work", "everyday5"))
    ap.add_argument("--pairs", type=int, default=60000)
    ap.add_argument("--senses", type=int, default=1)
    ap.add_argument("--per-word", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    vocab = {t for t in open(args.vocab, encoding="utf-8").read().split("\n") if t}
    related = related_nouns(vocab, first_senses(args.senses))
    pool = sorted(related)
    sentences = sorted({line.strip() for line in open(os.path.join(args.everyday, "train.txt"), encoding="utf-8")
                        if 4 <= len(line.split()) <= 24})
    rng.shuffle(sentences)
    rows, per_word = [], {}
    for s in sentences:
        # at most --per-word pairs of one word, so that "car" and "hotel" do not fill the set
        spans = [m for m in WORD.finditer(s)
                 if m.group().islower() and m.group() in related and per_word.get(m.group().lower(), 0) < args.per_word]
        if not spans:
            continue
        m = rng.choice(spans)
        w = m.group().lower()
        per_word[w] = per_word.get(w, 0) + 1
        near = rng.choice(related[w])
        far = rng.choice(pool)
        while far == w or far in related[w] or w in related.get(far, ()):
            far = rng.choice(pool)
        # lower-case occurrences only: "Turkey" and "Jay" are names
        swap = lambda x: s[:m.start()] + x + s[m.end():]
        rows.append(("swap", f"swap:{w}", s, swap(near), swap(far)))
        if len(rows) == args.pairs:
            break
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "pairs.tsv"), "w", encoding="utf-8") as f:
        for r in rows:
            f.write("\t".join(r) + "\n")
    print(f"swap pairs: {len(rows)} from {len(sentences)} sentences; {len(related)} nouns with related nouns")


if __name__ == "__main__":
    main()

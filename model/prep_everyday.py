#!/usr/bin/python3
"""The fourth stage's data: everyday English, read straight from the public
sets in ../shared/data/everyday-english (see model/README.md for where each
comes from), never copied into the project.

    /usr/bin/python3 model/prep_everyday.py [--data DIR] [--out model/work/everyday]

Writes, into --out:
  train.txt, heldout.txt  text for masked-LM + next sentence, in
      prep_corpus.py's layout (a unit a line, a blank line between
      documents): dialogues of the Schema-Guided Dialogue set (a turn a
      unit), children's stories (a sentence a unit), chit-chat
      conversations, news headlines, intent queries and SNLI / STS
      sentences (a document each).  SGD's test dialogues are the held-out
      part;
  pairs.tsv  kind, group, text a, text b, hard negative ("" if none): the
      sentence-embedding pairs (`nli`: an SNLI premise and a hypothesis it
      entails, its contradiction as hard negative; `intent`: two user
      queries of one intent of CLINC150, BANKING77 or HWU64; `sts`: STS-B
      train and dev pairs scored 4 or more; `qa`: a TREC question and an
      answer sentence; `service`: the first user turns of two SGD dialogues of
      one service; `story`: consecutive sentences of a story; `neutral`: an
      SNLI premise and a neutral hypothesis; `sts3`: STS-B train and dev
      pairs scored 3 to 4; `domain`: two queries of different intents of
      one CLINC150 domain or HWU64 scenario; `wordnet`: two related WordNet
      words; `gloss`: a WordNet noun or verb and its gloss).  Pairs of one
      group are not each other's negatives in a batch;
  eval_sts.tsv, eval_nli.tsv, eval_intent.tsv  the held-out sets that
      eval_everyday.py measures: STS-B test (score, a, b), SNLI premises
      whose hash falls in the lowest 20% (premise, entailed, contradicted),
      and the queries of every tenth CLINC150 intent (query, a query of the
      same intent, four of other held-out intents), none of which is
      trained on.
Deterministic: every random choice comes from --seed."""
import argparse
import csv
import glob
import gzip
import hashlib
import json
import os
import random
import re
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import prep_pairs  # noqa: E402  (WordNet's data files)

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.normpath(os.path.join(HERE, "..", "..", "shared", "data", "everyday-english"))


def held_out(text, share):
    """Whether a text (an SNLI premise) belongs to the held-out part: a
    hash, so the choice does not depend on the order of the files."""
    h = int.from_bytes(hashlib.sha1(text.encode("utf-8")).digest()[:4], "big")
    return h < share * 2 ** 32


def detok(s):
    """SNLI and TrecQA are tokenised ("a dog , running"; "did n't");
    undo the common cases so that they read like the rest."""
    s = s.replace(" n't", "n't").replace("-LRB-", "(").replace("-RRB-", ")")
    s = s.replace("``", '"').replace("''", '"')
    s = re.sub(r" ([.,;:!?')])", r"\1", s)
    s = re.sub(r"([(]) ", r"\1", s)
    s = re.sub(r" ('s|'re|'ve|'m|'ll|'d)\b", r"\1", s)
    return " ".join(s.split())


def clean(s):
    return " ".join(s.replace("\t", " ").split())


def read_snli(d):
    rows = []
    for split in ("dev", "test"):
        cols = [open(os.path.join(d, f"{n}.{split}"), encoding="utf-8").read().split("\n")
                for n in ("s1", "s2", "labels")]
        for p, h, lab in zip(*cols):
            if p.strip() and h.strip():
                rows.append((detok(p.strip()), detok(h.strip()), lab.strip()))
    return rows


def read_sts(d, split):
    rows = []
    for line in open(os.path.join(d, f"sts-{split}.csv"), encoding="utf-8"):
        f = line.rstrip("\n").split("\t")  # no quote handling: see SOURCES.md
        if len(f) >= 7:
            rows.append((float(f[4]), clean(f[5]), clean(f[6])))
    return rows


def read_intents(d):
    """(source, split, intent, text) of the three intent sets."""
    out = []
    clinc = json.load(open(os.path.join(d, "clinc150_oos_eval", "data_full.json"), encoding="utf-8"))
    for split, rows in clinc.items():
        if split.startswith("oos_"):
            continue
        for text, intent in rows:
            out.append(("clinc", split, intent, clean(text)))
    for split in ("train", "test"):
        with open(os.path.join(d, "banking77", f"{split}.csv"), encoding="utf-8", newline="") as f:
            for r in csv.DictReader(f):
                out.append(("banking", split, r["category"], clean(r["text"])))
    for split, sub in (("train", "kfold1_trainset"), ("test", "kfold1_testset")):
        for path in sorted(glob.glob(os.path.join(d, "hwu64_nlu_evaluation_data", sub, "**", "*.csv"),
                                     recursive=True)):
            with open(path, encoding="utf-8", newline="") as f:
                for r in csv.DictReader(f, delimiter=";"):
                    text = clean(r.get("answer_from_user") or r.get("answer_from_anno") or "")
                    if text:
                        out.append(("hwu", split, f"{r['scenario']}_{r['intent']}", text))
    return out


def read_sgd(d, split):
    """Dialogues as lists of (speaker, first service, utterance)."""
    dialogues = {}
    with gzip.open(os.path.join(d, f"{split}_utterances.tsv.gz"), "rt", encoding="utf-8") as f:
        next(f)
        for line in f:
            dia, _, speaker, services, text = line.rstrip("\n").split("\t", 4)
            dialogues.setdefault(dia, []).append((speaker, services.split(",")[0], clean(text)))
    return [dialogues[k] for k in sorted(dialogues)]


def sentences(text):
    return [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z\"'])", text) if s]


def read_stories(d):
    stories = []
    for path in sorted(glob.glob(os.path.join(d, "mctest_stories", "*.statements.tsv"))):
        for line in open(path, encoding="utf-8"):
            f = line.rstrip("\n").split("\t")
            if len(f) >= 3:
                stories.append(sentences(clean(f[2].replace("\\newline", " ").replace("\\tab", " "))))
    return stories


def read_chatter(d):
    convs = []
    for path in sorted(glob.glob(os.path.join(d, "chatterbot_corpus_english", "*.yml"))):
        doc = yaml.safe_load(open(path, encoding="utf-8"))
        for c in doc.get("conversations") or []:
            lines = [clean(str(x)) for x in c if x is not None and clean(str(x))]
            if lines:
                convs.append(lines)
    return convs


def read_headlines(d):
    out = []
    for name in ("non_clickbait_data.gz", "clickbait_data.gz"):
        with gzip.open(os.path.join(d, "clickbait_headlines", name), "rt", encoding="utf-8") as f:
            out += [clean(line) for line in f if line.strip()]
    return out


def read_trecqa(d):
    pairs = []
    for split in ("train", "dev"):
        with open(os.path.join(d, "trecqa_wang_anssel", f"{split}.csv"), encoding="utf-8", newline="") as f:
            for r in csv.DictReader(f):
                if r["label"] == "1":
                    pairs.append((detok(r["qtext"]), detok(r["atext"])))
    return pairs


def write_docs(path, docs):
    with open(path, "w", encoding="utf-8") as f:
        for units in docs:
            units = [u for u in units if u]
            if units:
                f.write("\n".join(units) + "\n\n")
    return sum(1 for u in docs if u), sum(len(u) for u in docs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--out", default=os.path.join(HERE, "work", "everyday"))
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--intent-pairs", type=int, default=2, help="pairs per training query")
    ap.add_argument("--service-pairs", type=int, default=30000)
    ap.add_argument("--domain-pairs", type=int, default=30000)
    ap.add_argument("--wordnet-pairs", type=int, default=40000, help="at most, of each WordNet kind")
    ap.add_argument("--vocab", default=os.path.join(HERE, "demo", "vocab.txt"))
    ap.add_argument("--no-wordnet", dest="wordnet", action="store_false",
                    help="leave out the WordNet kinds (needs Debian's wordnet-base otherwise)")
    args = ap.parse_args()
    if not os.path.isdir(args.data):
        sys.exit(f"prep_everyday: no data at {args.data}; pass --data")
    os.makedirs(args.out, exist_ok=True)
    rng = random.Random(args.seed)
    d = args.data
    pairs = []  # (kind, group, a, b, neg)

    # SNLI: premises split by hash; positives and hard negatives per premise
    snli = read_snli(os.path.join(d, "esnli_snli_dev_test"))
    by_premise = {}
    for p, h, lab in snli:
        by_premise.setdefault(p, {}).setdefault(lab, []).append(h)
    eval_nli = []
    for p in sorted(by_premise):
        hyp = by_premise[p]
        if held_out(p, 0.2):
            if hyp.get("entailment") and hyp.get("contradiction"):
                eval_nli.append((p, hyp["entailment"][0], hyp["contradiction"][0]))
            continue
        for i, e in enumerate(hyp.get("entailment", [])):
            c = hyp.get("contradiction", [])
            pairs.append(("nli", "nli:" + p, p, e, c[i % len(c)] if c else ""))

    # STS-B: train and dev pairs scored >= 4; test held out
    sts_train = read_sts(os.path.join(d, "stsbenchmark"), "train") + read_sts(os.path.join(d, "stsbenchmark"), "dev")
    for s, a, b in sts_train:
        if s >= 4.0:
            pairs.append(("sts", "sts:" + a, a, b, ""))
    eval_sts = read_sts(os.path.join(d, "stsbenchmark"), "test")

    # Intents: every tenth CLINC150 intent (sorted by name) held out whole
    intents = read_intents(d)
    clinc_names = sorted({i for s, _, i, _ in intents if s == "clinc"})
    held_intents = set(clinc_names[::10])
    train_q, eval_q = {}, {}
    for src, split, intent, text in intents:
        key = f"{src}:{intent}"
        if src == "clinc" and intent in held_intents:
            eval_q.setdefault(key, []).append(text)
        else:
            train_q.setdefault(key, []).append(text)
    for key in sorted(train_q):
        qs = sorted(set(train_q[key]))
        for q in qs:
            for _ in range(args.intent_pairs):
                other = rng.choice(qs)
                if other != q:
                    pairs.append(("intent", key, q, other, ""))
    eval_intent = []
    keys = sorted(eval_q)
    for key in keys:
        qs = sorted(set(eval_q[key]))
        for q in qs[:20]:
            pos = rng.choice([x for x in qs if x != q])
            negs = [rng.choice(sorted(set(eval_q[k]))) for k in rng.sample([k for k in keys if k != key], 4)]
            eval_intent.append((q, pos, *negs))

    # TREC question and answer sentences
    for q, a in read_trecqa(d):
        pairs.append(("qa", "qa:" + q, q, a, ""))

    # SGD: train and dev dialogues trained on (test held out for masked-LM);
    # user turns of one service as topical pairs
    sgd_train = read_sgd(os.path.join(d, "sgd_schema_guided_dialogue"), "train") + \
        read_sgd(os.path.join(d, "sgd_schema_guided_dialogue"), "dev")
    sgd_test = read_sgd(os.path.join(d, "sgd_schema_guided_dialogue"), "test")
    by_service = {}
    for dia in sgd_train:
        # a dialogue's first user turn says what it is about ("I want to
        # find a restaurant"); later turns are often "Yes, that works."
        speaker, service, text = dia[0]
        if speaker == "USER" and len(text.split()) >= 5:
            by_service.setdefault(service.split("_")[0], []).append(text)
    services = sorted(by_service)
    for _ in range(args.service_pairs):
        s = rng.choice(services)
        a, b = rng.choice(by_service[s]), rng.choice(by_service[s])
        if a != b:
            pairs.append(("service", "service:" + s, a, b, ""))

    # stories: consecutive sentences
    stories = read_stories(d)
    for n, st in enumerate(stories):
        for a, b in zip(st, st[1:]):
            pairs.append(("story", f"story:{n}", a, b, ""))

    # Coarser, topical positives, drawn after the kinds above so that
    # their pairs stay as they were: an SNLI premise and a neutral
    # hypothesis (the same scene, not implied), STS-B pairs scored 3 to 4,
    # and two queries of one CLINC150 domain or HWU64 scenario
    # ("kitchen_and_dining", "music"), of different intents.
    for p in sorted(by_premise):
        if not held_out(p, 0.2):
            for h in by_premise[p].get("neutral", []):
                pairs.append(("neutral", "nli:" + p, p, h, ""))
    for s, a, b in sts_train:
        if 3.0 <= s < 4.0:
            pairs.append(("sts3", "sts:" + a, a, b, ""))
    domain_of = {i: dom for dom, names in json.load(open(os.path.join(d, "clinc150_oos_eval", "domains.json"),
                                                         encoding="utf-8")).items() for i in names}
    by_domain = {}
    for key in sorted(train_q):
        src, intent = key.split(":", 1)
        dom = domain_of.get(intent) if src == "clinc" else intent.split("_")[0] if src == "hwu" else None
        if dom:
            by_domain.setdefault(f"{src}:{dom}", []).append(key)
    doms = sorted(k for k, v in by_domain.items() if len(v) >= 2)
    for _ in range(args.domain_pairs):
        dom = rng.choice(doms)
        ka, kb = rng.sample(by_domain[dom], 2)
        pairs.append(("domain", "domain:" + dom, rng.choice(sorted(set(train_q[ka]))),
                      rng.choice(sorted(set(train_q[kb]))), ""))

    # Words: WordNet's related words (prep_pairs.py's synonym kind: "gale"
    # and "wind", "fiddle" and "violin") and a common noun or verb with its
    # gloss, so that the everyday pairs meet the words they do not use;
    # with their own generator, so the kinds above stay as they were.
    if args.wordnet:
        # only words the model's vocabulary holds whole (common words, not
        # "Branchiostegidae")
        vocab = {t for t in open(args.vocab, encoding="utf-8").read().split("\n") if t}
        common = lambda w: all(x in vocab for x in w.lower().split())
        wrng = random.Random(args.seed + 1)
        syn = [(a, b) for a, b in prep_pairs.synonym_pairs(wrng) if a != b and common(a) and common(b)]
        for a, b in wrng.sample(syn, min(args.wordnet_pairs, len(syn))):
            pairs.append(("wordnet", "wordnet:" + a, a, b, ""))
        glosses = []
        for pos in ("noun", "verb"):
            for (_, _), (words, _, gloss) in sorted(prep_pairs.wordnet_synsets(pos).items()):
                word = next((w for w in words if w.islower() and w in vocab), None)
                if word:
                    glosses.append((word, gloss.split(";")[0].strip()))
        for w, g in wrng.sample(glosses, min(args.wordnet_pairs, len(glosses))):
            pairs.append(("gloss", "gloss:" + w, w, g, ""))

    # masked-LM text
    chatter = read_chatter(d)
    headlines = read_headlines(d)
    docs = [[t for _, _, t in dia] for dia in sgd_train]
    docs += stories + chatter + [[h] for h in headlines]
    docs += [[q] for key in sorted(train_q) for q in sorted(set(train_q[key]))]
    seen = set()
    for p, h, _ in snli:
        if not held_out(p, 0.2) and p not in seen:
            seen.add(p)
            docs.append([p] + [x for lab in ("entailment", "neutral", "contradiction")
                               for x in by_premise[p].get(lab, [])])
    docs += [[a, b] for _, a, b in sts_train]
    rng.shuffle(docs)
    nd, nu = write_docs(os.path.join(args.out, "train.txt"), docs)
    hd, hu = write_docs(os.path.join(args.out, "heldout.txt"), [[t for _, _, t in dia] for dia in sgd_test])

    with open(os.path.join(args.out, "pairs.tsv"), "w", encoding="utf-8") as f:
        for row in pairs:
            f.write("\t".join(clean(x) for x in row) + "\n")
    with open(os.path.join(args.out, "eval_sts.tsv"), "w", encoding="utf-8") as f:
        for s, a, b in eval_sts:
            f.write(f"{s}\t{a}\t{b}\n")
    for name, rows in (("eval_nli.tsv", eval_nli), ("eval_intent.tsv", eval_intent)):
        with open(os.path.join(args.out, name), "w", encoding="utf-8") as f:
            for r in rows:
                f.write("\t".join(r) + "\n")
    counts = {}
    for k, *_ in pairs:
        counts[k] = counts.get(k, 0) + 1
    print(f"masked-LM text: train {nd} documents, {nu} units; held out {hd} documents, {hu} units")
    print("pairs: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    print(f"held out: STS-B test {len(eval_sts)} pairs, SNLI {len(eval_nli)} premises, "
          f"{len(keys)} CLINC150 intents ({', '.join(sorted(held_intents))}), {len(eval_intent)} queries")


if __name__ == "__main__":
    main()

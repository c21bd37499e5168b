"""check.py MODEL_DIR - what a user of the installed Python package does:
prints bert_version() and a bert_similarity of the model, `version|similarity`."""
import sqlite3
import sys

import sqlite_bert

conn = sqlite3.connect(":memory:")
sqlite_bert.load(conn)
version, name, sim = conn.execute(
    "SELECT bert_version(), bert_load('default', ?), bert_similarity('a dog barked', 'the puppy was noisy')",
    (sys.argv[1],)).fetchone()
assert name == "default", name
print("%s|%.6f" % (version, sim))

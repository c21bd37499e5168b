"""check.py MODEL_DIR [sqlite-utils] - what a user of the installed Python
package does, with the standard library's sqlite3 module or with a
sqlite_utils.Database: prints bert_version() and a bert_similarity of the
model, `version|similarity`."""
import sqlite3
import sys

import sqlite_bert

if sys.argv[2:] == ["sqlite-utils"]:
    import sqlite_utils
    db = sqlite_utils.Database(memory=True)
    sqlite_bert.load(db)
    conn = db.conn
else:
    conn = sqlite3.connect(":memory:")
    sqlite_bert.load(conn)
version, name, sim = conn.execute(
    "SELECT bert_version(), bert_load('default', ?), bert_similarity('a dog barked', 'the puppy was noisy')",
    (sys.argv[1],)).fetchone()
assert name == "default", name
print("%s|%.6f" % (version, sim))

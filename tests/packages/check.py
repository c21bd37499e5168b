"""check.py MODEL_DIR [sqlite-utils] - what a user of the installed Python
package does, with the standard library's sqlite3 module or with a
sqlite_utils.Database: load(conn) registers the bundled demo model; the
user's own bert_load('default', MODEL_DIR) afterwards works and takes over
the calls that name no model; load(conn, default_model=False) registers
none.  Prints bert_version() and a bert_similarity of the user's model,
`version|similarity`."""
import os
import sqlite3
import sys

import sqlite_bert


def connect():
    if sys.argv[2:] == ["sqlite-utils"]:
        import sqlite_utils
        db = sqlite_utils.Database(memory=True)
        return db, db.conn
    conn = sqlite3.connect(":memory:")
    return conn, conn


db, conn = connect()
sqlite_bert.load(db)
models = conn.execute("SELECT name, path FROM bert_models").fetchall()
assert [m[0] for m in models] == [sqlite_bert.BUNDLED_MODEL] == ["default"], models
assert os.path.samefile(models[0][1], sqlite_bert.demo_model_path()), models
# A model of the user's own takes the name over once the demo model is unloaded.
assert conn.execute("SELECT bert_unload('default')").fetchone()[0] == 1
version, name, sim = conn.execute(
    "SELECT bert_version(), bert_load('default', ?), bert_similarity('a dog barked', 'the puppy was noisy')",
    (sys.argv[1],)).fetchone()
assert name == "default", name
models = conn.execute("SELECT name, path, encoder_calls FROM bert_models").fetchall()
assert len(models) == 1 and models[0][0] == "default" and models[0][2] > 0, models
assert not os.path.samefile(models[0][1], sqlite_bert.demo_model_path()), models

db, conn = connect()
sqlite_bert.load(db, default_model=False)
assert conn.execute("SELECT count(*) FROM bert_models").fetchone()[0] == 0
try:
    conn.execute("SELECT bert_embed('hello')").fetchone()
    raise AssertionError("default_model=False: bert_embed found a model")
except sqlite3.OperationalError as err:
    assert "no model is registered" in str(err), err

print("%s|%.6f" % (version, sim))

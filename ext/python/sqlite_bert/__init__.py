"""sqlite-bert: BERT-family models inside SQLite.

    import sqlite3, sqlite_bert
    conn = sqlite3.connect(":memory:")
    sqlite_bert.load(conn)              # the extension, and the demo model it carries
    conn.execute("SELECT bert_similarity('a dog', 'a puppy')")

    sqlite_bert.download("sentence-transformers/all-MiniLM-L6-v2", "models/minilm")
"""
import os
import sys

from .hub import DownloadError, download

__all__ = ["load", "loadable_path", "demo_model_path", "BUNDLED_MODEL", "download", "DownloadError",
           "__version__"]

_HERE = os.path.dirname(os.path.abspath(__file__))

# The name load() registers the package's demo model under.  Not 'default':
# a user's own bert_load('default', ...) must still work afterwards, and then
# takes precedence (a call that names no model uses the model named
# 'default', else the only one registered).
BUNDLED_MODEL = "default"


def loadable_path():
    """The extension's path without its suffix (.so, .dylib), the form
    SQLite's load_extension and `.load` take; the entry point
    sqlite3_bert_init follows from the name."""
    return os.path.join(_HERE, "bert")


def demo_model_path():
    """The directory of the demo model the package carries (a small BERT,
    6 layers x 256, sentence-transformers mean pooling): bert_load's path."""
    return os.path.join(_HERE, "demo_model")


def _version():
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:
        return "unknown"
    try:
        return version("sqlite-bert")
    except PackageNotFoundError:
        return "unknown"


__version__ = _version()


def load(conn, default_model=True):
    """Loads the extension into `conn` (a sqlite3.Connection, or a
    sqlite_utils.Database), turning extension loading on for the call and
    off again afterwards.

    Unless `default_model` is False or the connection already has a model
    registered, it also registers the package's demo model as 'default'
    (bert_load('default', demo_model_path())), so that calls naming no model
    work at once.  To make a model of your own the default, load with
    default_model=False, or SELECT bert_unload('default') first."""
    if not hasattr(conn, "load_extension") and hasattr(conn, "conn"):
        conn = conn.conn                # sqlite_utils.Database
    suffix = ".dylib" if sys.platform == "darwin" else ".so"
    if not os.path.exists(loadable_path() + suffix):
        raise RuntimeError("sqlite-bert: %s is missing; reinstall the package" % (loadable_path() + suffix))
    enable = getattr(conn, "enable_load_extension", None)
    if enable is None:
        raise RuntimeError(
            "sqlite-bert: this Python's sqlite3 module cannot load extensions (it was built without "
            "them, as pyenv's and macOS's system Python are by default). Use a Python whose sqlite3 "
            "allows them (Debian/Ubuntu's /usr/bin/python3, Homebrew's python), or rebuild with "
            "PYTHON_CONFIGURE_OPTS=--enable-loadable-sqlite-extensions")
    enable(True)
    try:
        conn.load_extension(loadable_path())
    finally:
        enable(False)
    if default_model and conn.execute("SELECT count(*) FROM bert_models").fetchone()[0] == 0:
        if not os.path.isfile(os.path.join(demo_model_path(), "config.json")):
            raise RuntimeError("sqlite-bert: the demo model (%s) is missing; reinstall the package, or "
                               "pass default_model=False" % demo_model_path())
        conn.execute("SELECT bert_load(?, ?)", (BUNDLED_MODEL, demo_model_path()))

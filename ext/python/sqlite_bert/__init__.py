"""sqlite-bert: BERT-family models inside SQLite.

    import sqlite3, sqlite_bert
    conn = sqlite3.connect(":memory:")
    sqlite_bert.load(conn)
    conn.execute("SELECT bert_version()")

    sqlite_bert.download("sentence-transformers/all-MiniLM-L6-v2", "models/minilm")
"""
import os
import sys

from .hub import DownloadError, download

__all__ = ["load", "loadable_path", "download", "DownloadError", "__version__"]

_HERE = os.path.dirname(os.path.abspath(__file__))


def loadable_path():
    """The extension's path without its suffix (.so, .dylib), the form
    SQLite's load_extension and `.load` take; the entry point
    sqlite3_bert_init follows from the name."""
    return os.path.join(_HERE, "bert")


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


def load(conn):
    """Loads the extension into `conn` (a sqlite3.Connection, or a
    sqlite_utils.Database), turning extension loading on for the call and
    off again afterwards."""
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

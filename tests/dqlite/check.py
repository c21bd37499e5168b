"""check.py - a three-node dqlite cluster on 127.0.0.1 stores bert_embed's
vectors once and serves the same bytes from another leader.

    python3 tests/dqlite/check.py ADDR1 ADDR2 ADDR3 EXTENSION MODEL_DIR

Nodes 1 and 2 run with the extension registered (tests/dqlite/node.c
--with-bert), node 3 without it.  The check:
  1. forms the cluster (node 1 bootstraps; 2 and 3 join as voters);
  2. on leader node 1, writes rows whose embedding is bert_embed(body), one
     with a generated column, and reads them back;
  3. compares those bytes with bert_embed computed here, by this Python's
     sqlite3 module with EXTENSION loaded (within 1e-6: another build of
     the same code);
  4. hands leadership to node 3, which has no bert_embed at all, and reads
     the rows there: byte for byte what node 1 wrote, so dqlite shipped
     the pages and no node recomputed anything; a statement that calls
     bert_embed on node 3 fails with "no such function".

A minimal client of dqlite's wire protocol (doc/protocol.md in dqlite's
sources): Debian packages no dqlite shell or client library.
"""
import socket
import sqlite3
import struct
import sys
import time

REQ_LEADER, REQ_OPEN, REQ_EXEC_SQL, REQ_QUERY_SQL = 0, 3, 8, 9
REQ_ADD, REQ_ASSIGN, REQ_TRANSFER = 12, 13, 17
RESP_FAILURE, RESP_SERVER, RESP_DB, RESP_RESULT, RESP_ROWS, RESP_EMPTY = 0, 1, 4, 6, 7, 8
ROWS_PART, ROWS_DONE = 0xEEEEEEEEEEEEEEEE, 0xFFFFFFFFFFFFFFFF
T_INTEGER, T_FLOAT, T_TEXT, T_BLOB, T_NULL = 1, 2, 3, 4, 5


class Failure(Exception):
    pass


def u64(v):
    return struct.pack("<Q", v)


def text(s):
    b = s.encode() + b"\0"
    return b + b"\0" * (-len(b) % 8)


NO_PARAMS = b"\0" * 8   # a parameter tuple of zero values


class Reader:
    def __init__(self, body):
        self.b, self.i = body, 0

    def u64(self):
        v = struct.unpack_from("<Q", self.b, self.i)[0]
        self.i += 8
        return v

    def text(self):
        end = self.b.index(b"\0", self.i)
        s = self.b[self.i:end].decode()
        self.i = end + 1 + (-(end + 1 - self.i) % 8)
        return s

    def blob(self):
        n = self.u64()
        v = self.b[self.i:self.i + n]
        self.i += n + (-n % 8)
        return v


class Client:
    def __init__(self, address):
        host, port = address.rsplit(":", 1)
        self.s = socket.create_connection((host, int(port)), timeout=30)
        self.s.sendall(u64(1))   # protocol version

    def close(self):
        self.s.close()

    def _recv(self, n):
        out = b""
        while len(out) < n:
            chunk = self.s.recv(n - len(out))
            if not chunk:
                raise Failure("connection closed by the node")
            out += chunk
        return out

    def request(self, kind, body):
        self.s.sendall(struct.pack("<IBBH", len(body) // 8, kind, 0, 0) + body)
        return self.response()

    def response(self):
        words, kind, _, _ = struct.unpack("<IBBH", self._recv(8))
        r = Reader(self._recv(words * 8))
        if kind == RESP_FAILURE:
            code = r.u64()
            raise Failure("%s (code %d)" % (r.text(), code))
        return kind, r

    def leader(self):
        kind, r = self.request(REQ_LEADER, u64(0))
        assert kind == RESP_SERVER, kind
        return r.u64(), r.text()

    def add_voter(self, node_id, address):
        kind, _ = self.request(REQ_ADD, u64(node_id) + text(address))
        assert kind == RESP_EMPTY, kind
        kind, _ = self.request(REQ_ASSIGN, u64(node_id) + u64(0))   # role 0: voter
        assert kind == RESP_EMPTY, kind

    def transfer(self, node_id):
        kind, _ = self.request(REQ_TRANSFER, u64(node_id))
        assert kind == RESP_EMPTY, kind

    def open(self, name):
        kind, r = self.request(REQ_OPEN, text(name) + u64(0) + text("volatile"))
        assert kind == RESP_DB, kind
        self.db = r.u64() & 0xFFFFFFFF
        return self.db

    def execute(self, sql):
        kind, r = self.request(REQ_EXEC_SQL, u64(self.db) + text(sql) + NO_PARAMS)
        assert kind == RESP_RESULT, kind
        return r.u64(), r.u64()

    def query(self, sql):
        kind, r = self.request(REQ_QUERY_SQL, u64(self.db) + text(sql) + NO_PARAMS)
        rows = []
        while True:
            assert kind == RESP_ROWS, kind
            ncol = r.u64()
            for _ in range(ncol):
                r.text()
            header_words = (ncol + 15) // 16
            while True:
                marker = struct.unpack_from("<Q", r.b, r.i)[0]
                if marker in (ROWS_PART, ROWS_DONE):
                    break
                types = []
                for w in range(header_words):
                    word = r.u64()
                    types += [(word >> (4 * k)) & 0xF for k in range(16)]
                row = []
                for t in types[:ncol]:
                    if t == T_INTEGER:
                        row.append(struct.unpack("<q", u64(r.u64()))[0])
                    elif t == T_FLOAT:
                        row.append(struct.unpack("<d", u64(r.u64()))[0])
                    elif t == T_TEXT:
                        row.append(r.text())
                    elif t == T_BLOB:
                        row.append(r.blob())
                    elif t == T_NULL:
                        r.u64()
                        row.append(None)
                    else:
                        raise Failure("value type %d not handled" % t)
                rows.append(row)
            if marker == ROWS_DONE:
                return rows
            kind, r = self.response()


def connect_when_up(address, seconds=20):
    deadline = time.time() + seconds
    while True:
        try:
            return Client(address)
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.1)


def wait_for_leader(addresses, want, seconds=30):
    deadline = time.time() + seconds
    while time.time() < deadline:
        for a in addresses:
            try:
                c = Client(a)
                node_id, _ = c.leader()
                c.close()
                if node_id == want:
                    return
            except (OSError, Failure):
                pass
        time.sleep(0.2)
    raise Failure("node %d did not become the leader within %d s" % (want, seconds))


def retry(what, seconds=30):
    """Membership changes are refused while a previous one is still being
    committed; try again until the cluster accepts."""
    deadline = time.time() + seconds
    while True:
        try:
            return what()
        except Failure:
            if time.time() > deadline:
                raise
            time.sleep(0.2)


TEXTS = [
    "The cat slept on the warm windowsill all afternoon.",
    "A light rain fell over the city as the shops began to close.",
    "She bought fresh bread, two apples and a jar of honey at the market.",
]

failures = 0


def check(ok, message):
    global failures
    print(("ok    " if ok else "FAIL  ") + message)
    if not ok:
        failures += 1


def main():
    a1, a2, a3, extension, model = sys.argv[1:6]

    c = connect_when_up(a1)
    wait_for_leader([a1], 1)
    for node_id, address in ((2, a2), (3, a3)):
        connect_when_up(address).close()
        retry(lambda: c.add_voter(node_id, address))
    c.open("docs.db")
    c.execute("CREATE TABLE docs(id INTEGER PRIMARY KEY, body TEXT NOT NULL, embedding BLOB)")
    for i, t in enumerate(TEXTS, 1):
        c.execute("INSERT INTO docs VALUES (%d, '%s', bert_embed('%s'))" % (i, t, t))
    c.execute("CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT NOT NULL,"
              " embedding BLOB GENERATED ALWAYS AS (bert_embed(body)) STORED)")
    c.execute("INSERT INTO notes(id, body) VALUES (1, '%s')" % TEXTS[0])
    written = c.query("SELECT id, embedding FROM docs UNION ALL "
                      "SELECT 100 + id, embedding FROM notes ORDER BY 1")
    check(len(written) == 4 and all(isinstance(e, bytes) and len(e) == 1024 for _, e in written),
          "node 1 (leader, with the extension) wrote 4 embeddings of 256 float32")

    local = sqlite3.connect(":memory:")
    local.enable_load_extension(True)
    local.load_extension(extension)
    local.execute("SELECT bert_load('default', ?)", (model,))
    worst = 0.0
    for (row_id, blob) in written:
        ref = local.execute("SELECT bert_embed(?)", (TEXTS[row_id % 100 - 1],)).fetchone()[0]
        a, b = struct.unpack("<256f", blob), struct.unpack("<256f", ref)
        worst = max([worst] + [abs(x - y) for x, y in zip(a, b)])
    check(worst <= 1e-6, "the cluster's vectors are bert_embed's (max |diff| %.1e against %s)" % (worst, extension))

    c.transfer(3)
    c.close()
    wait_for_leader([a1, a2, a3], 3)
    c3 = connect_when_up(a3)
    c3.open("docs.db")
    replicated = c3.query("SELECT id, embedding FROM docs UNION ALL "
                          "SELECT 100 + id, embedding FROM notes ORDER BY 1")
    check(replicated == written, "node 3 (leader now, no extension) serves the very bytes node 1 wrote")
    try:
        c3.query("SELECT bert_embed('a new text')")
        check(False, "node 3 has no bert_embed, yet a statement calling it ran")
    except Failure as e:
        check("bert_embed" in str(e), "a statement calling bert_embed on node 3 fails: %s" % e)
    c3.close()
    print("dqlite: %s" % ("passed" if failures == 0 else "%d checks failed" % failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

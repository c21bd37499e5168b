"""A Hugging Face hub in miniature on 127.0.0.1, for the model fetcher's tests.

Serves local directories as hub repositories, with the hub's shapes:
  GET /api/models/{repo}/revision/{rev}?blobs=true   the file list, sizes and digests
  GET /{repo}/resolve/{rev}/{file}                   a file; Git LFS files (weights)
      are redirected to /cdn/{sha256} on another host name (localhost), as the
      hub redirects to its storage, and Range requests are honoured.

Faults to test against: `interrupt[file] = n` sends the whole Content-Length
but only n bytes on the first transfer of that file, then closes the
connection; `corrupt` lists files served with one byte changed; `gated`
lists repositories that answer 401 without the token.  `requests` records
every request (path, Range, Authorization).
"""
import hashlib
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

LFS_SUFFIXES = (".safetensors", ".bin", ".onnx", ".msgpack", ".h5")


def git_blob_id(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Hub:
    def __init__(self):
        self.repos = {}          # repo id -> {file name: bytes}
        self.commits = {}        # repo id -> 40-hex commit id
        self.interrupt = {}
        self.corrupt = set()
        self.gated = set()
        self.token = None
        self.requests = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.endpoint = "http://127.0.0.1:%d" % self.port
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()

    def add_repo(self, repo_id, directory=None, extra=None):
        """A repository holding the files under `directory` plus `extra`
        ({name: bytes})."""
        files = {}
        if directory:
            for root, _, names in os.walk(directory):
                for name in names:
                    path = os.path.join(root, name)
                    rel = os.path.relpath(path, directory).replace(os.sep, "/")
                    if rel.startswith("."):
                        continue
                    with open(path, "rb") as f:
                        files[rel] = f.read()
        files.update(extra or {})
        self.repos[repo_id] = files
        self.commits[repo_id] = hashlib.sha1(repo_id.encode()).hexdigest()

    def requests_for(self, name):
        with self._lock:
            return [r for r in self.requests if r["path"].endswith("/" + name) or r.get("file") == name]

    def _record(self, entry):
        with self._lock:
            self.requests.append(entry)

    def _handler(self):
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                url = urlsplit(self.path)
                path = unquote(url.path)
                entry = {"path": path, "range": self.headers.get("Range"),
                         "auth": self.headers.get("Authorization"), "host": self.headers.get("Host")}
                hub._record(entry)
                if path.startswith("/api/models/"):
                    return self._info(path[len("/api/models/"):], url.query)
                if path.startswith("/cdn/"):
                    return self._cdn(path[len("/cdn/"):], entry)
                if "/resolve/" in path:
                    repo, _, rest = path[1:].partition("/resolve/")
                    rev, _, name = rest.partition("/")
                    entry["file"] = name
                    return self._resolve(repo, rev, name)
                self._send(404, b"not found")

            def _send(self, code, body, headers=None):
                self.send_response(code)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _allowed(self, repo):
                if repo in hub.gated and self.headers.get("Authorization") != "Bearer %s" % hub.token:
                    self._send(401, b'{"error":"Access to this model is restricted"}')
                    return False
                return True

            def _info(self, rest, query):
                repo, _, rev = rest.partition("/revision/")
                if repo not in hub.repos or rev not in ("main", hub.commits[repo]):
                    return self._send(404, b'{"error":"Repository not found"}')
                if not self._allowed(repo):
                    return
                blobs = "blobs=true" in query
                siblings = []
                for name, data in sorted(hub.repos[repo].items()):
                    s = {"rfilename": name}
                    if blobs:
                        s["size"] = len(data)
                        s["blobId"] = git_blob_id(data)
                        if name.endswith(LFS_SUFFIXES):
                            s["lfs"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data),
                                        "pointerSize": 134}
                    siblings.append(s)
                body = json.dumps({"id": repo, "sha": hub.commits[repo], "siblings": siblings}).encode()
                self._send(200, body, {"Content-Type": "application/json"})

            def _resolve(self, repo, rev, name):
                files = hub.repos.get(repo)
                if files is None or rev not in ("main", hub.commits[repo]) or name not in files:
                    return self._send(404, b"Entry not found")
                if not self._allowed(repo):
                    return
                if name.endswith(LFS_SUFFIXES):
                    digest = hashlib.sha256(files[name]).hexdigest()
                    location = "http://localhost:%d/cdn/%s?file=%s&repo=%s" % (hub.port, digest, name, repo)
                    return self._send(302, b"", {"Location": location})
                self._body(name, files[name])

            def _cdn(self, digest, entry):
                query = dict(p.split("=", 1) for p in urlsplit(self.path).query.split("&") if "=" in p)
                entry["file"] = query.get("file")
                data = hub.repos.get(query.get("repo"), {}).get(entry["file"])
                if data is None or hashlib.sha256(data).hexdigest() != digest:
                    return self._send(404, b"no such blob")
                self._body(entry["file"], data)

            def _body(self, name, data):
                if name in hub.corrupt:
                    data = bytes([data[0] ^ 0xFF]) + data[1:]
                start = 0
                rng = self.headers.get("Range")
                if rng and rng.startswith("bytes=") and rng.endswith("-"):
                    start = int(rng[len("bytes="):-1])
                    if start >= len(data):
                        return self._send(416, b"", {"Content-Range": "bytes */%d" % len(data)})
                    self.send_response(206)
                    self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
                else:
                    self.send_response(200)
                body = data[start:]
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Accept-Ranges", "bytes")
                self.end_headers()
                cut = hub.interrupt.pop(name, None)
                if cut is not None and cut < len(body):
                    self.wfile.write(body[:cut])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(body)

        return Handler

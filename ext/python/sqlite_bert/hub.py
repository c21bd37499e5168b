"""Fetches a model directory from the Hugging Face hub: exactly the files
sqlite-bert reads, verified against the hub's own metadata.

Standard library only.  The hub's HTTP API:
  GET {endpoint}/api/models/{repo}/revision/{rev}?blobs=true
      -> {"sha": commit, "siblings": [{"rfilename", "size", "blobId",
          "lfs": {"sha256", "size"}}]}
  GET {endpoint}/{repo}/resolve/{commit}/{file}   (Range honoured)

Files stored with Git LFS (the weights) are checked against their SHA-256;
files stored in Git itself (configs, vocabularies) against their Git blob id
(a SHA-1 of the content), the only digest the hub gives for them.  Both
checks cover the size too.
"""
import hashlib
import http.client
import json
import os
import posixpath
import re
import urllib.error
import urllib.parse
import urllib.request

DEFAULT_ENDPOINT = "https://huggingface.co"
CHUNK = 1 << 20
ATTEMPTS = 5          # per file: an interrupted transfer resumes this often
TIMEOUT = 60          # seconds without a byte before a transfer counts as interrupted
PART_SUFFIX = ".part"

# What a model directory needs (API.md, "Models"), besides the weights and
# the sentence-transformers modules' own configs (1_Pooling/config.json ...).
MODEL_FILES = {
    "config.json", "vocab.txt", "vocab.json", "merges.txt", "tokenizer.json",
    "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
    "modules.json", "sentence_bert_config.json", "config_sentence_transformers.json",
}
MODULE_CONFIG = re.compile(r"^\d+_[A-Za-z]+/config\.json$")
SHARD = re.compile(r"^model-\d+-of-\d+\.safetensors$")
PICKLE_WEIGHTS = re.compile(r"^pytorch_model(-\d+-of-\d+)?\.bin(\.index\.json)?$")


class DownloadError(Exception):
    """A model could not be fetched; the message says why and what to do."""


def _endpoint():
    return os.environ.get("HF_ENDPOINT", DEFAULT_ENDPOINT).rstrip("/")


def _token():
    return os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN") or None


class _NoAuthAcrossHosts(urllib.request.HTTPRedirectHandler):
    """The hub redirects weights to a storage host with a signed URL: the
    token goes to the hub only, never to another host."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and urllib.parse.urlsplit(newurl).netloc != urllib.parse.urlsplit(req.full_url).netloc:
            new.remove_header("Authorization")
        return new


_opener = urllib.request.build_opener(_NoAuthAcrossHosts)


def _request(url, headers=None):
    req = urllib.request.Request(url, headers={"User-Agent": "sqlite-bert", **(headers or {})})
    token = _token()
    if token:
        req.add_header("Authorization", "Bearer " + token)
    return _opener.open(req, timeout=TIMEOUT)


def _http_error(err, what, repo_id, revision):
    if err.code in (401, 403):
        hint = ("set HF_TOKEN to a token that can read it" if not _token()
                else "the token in HF_TOKEN cannot read it (gated: accept its terms on the hub first)")
        return DownloadError("%s: access denied (HTTP %d) for %s: %s" % (repo_id, err.code, what, hint))
    if err.code == 404:
        return DownloadError("%s: not found (HTTP 404) for %s: check the repository name and the revision %r"
                             % (repo_id, what, revision))
    return DownloadError("%s: HTTP %d for %s" % (repo_id, err.code, what))


def _repo_info(repo_id, revision):
    url = "%s/api/models/%s/revision/%s?blobs=true" % (
        _endpoint(), urllib.parse.quote(repo_id, safe="/"), urllib.parse.quote(revision, safe=""))
    try:
        with _request(url) as resp:
            info = json.loads(resp.read().decode("utf-8"))
    except urllib.error.HTTPError as err:
        raise _http_error(err, "its file list", repo_id, revision) from None
    except (urllib.error.URLError, OSError) as err:
        raise DownloadError("%s: cannot reach %s (%s); set HF_ENDPOINT for a mirror"
                            % (repo_id, _endpoint(), getattr(err, "reason", err))) from None
    except ValueError:
        raise DownloadError("%s: the hub's file list is not JSON" % repo_id) from None
    if not isinstance(info, dict) or not isinstance(info.get("siblings"), list):
        raise DownloadError("%s: the hub's answer has no file list (siblings)" % repo_id)
    return info


def select_files(repo_id, siblings):
    """The siblings a model directory needs: configs, tokenizer files,
    sentence-transformers module configs and the safetensors weights.
    Refuses repositories whose only weights are pickles."""
    names = {s.get("rfilename") for s in siblings}
    if "config.json" not in names:
        raise DownloadError("%s has no config.json: not a transformers model repository" % repo_id)
    weights = ({"model.safetensors"} if "model.safetensors" in names else
               {n for n in names if n and (SHARD.match(n) or n == "model.safetensors.index.json")})
    if not weights:
        pickles = sorted(n for n in names if n and PICKLE_WEIGHTS.match(n))
        if pickles:
            raise DownloadError(
                "%s has only PyTorch pickle weights (%s), which sqlite-bert does not read: loading a "
                "pickle can run arbitrary code. Use a revision with model.safetensors (the hub's "
                "safetensors conversion is often an open pull request: revision=\"refs/pr/N\"), or "
                "convert it once with transformers: AutoModel.from_pretrained(dir)"
                ".save_pretrained(dir, safe_serialization=True)" % (repo_id, ", ".join(pickles)))
        raise DownloadError("%s has no model.safetensors: nothing sqlite-bert can load" % repo_id)
    wanted = [s for s in siblings
              if s.get("rfilename") in MODEL_FILES or s.get("rfilename") in weights
              or MODULE_CONFIG.match(s.get("rfilename") or "")]
    return sorted(wanted, key=lambda s: s["rfilename"])


def _expected(sibling):
    """(size, algorithm, hex digest) the hub vouches for."""
    lfs = sibling.get("lfs")
    if isinstance(lfs, dict) and lfs.get("sha256"):
        return int(lfs.get("size", sibling.get("size"))), "sha256", lfs["sha256"]
    if sibling.get("blobId") and sibling.get("size") is not None:
        return int(sibling["size"]), "git-sha1", sibling["blobId"]
    raise DownloadError("the hub gave no size and digest for %s (ask with ?blobs=true)" % sibling.get("rfilename"))


def _hasher(algorithm, size):
    if algorithm == "sha256":
        return hashlib.sha256()
    h = hashlib.sha1()
    h.update(b"blob %d\0" % size)
    return h


def _digest_of(path, algorithm, size):
    h = _hasher(algorithm, size)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def _is_whole(path, size, algorithm, digest):
    return os.path.isfile(path) and os.path.getsize(path) == size and _digest_of(path, algorithm, size) == digest


def _local_path(directory, rfilename):
    parts = rfilename.split("/")
    if posixpath.isabs(rfilename) or any(p in ("", ".", "..") for p in parts):
        raise DownloadError("refusing the file name %r: it would leave the target directory" % rfilename)
    return os.path.join(directory, *parts)


def _transfer(url, part, size, log):
    """Appends to `part` until it holds `size` bytes, resuming with a Range
    request after an interruption.  Returns when the part is complete."""
    if not os.path.exists(part):
        open(part, "wb").close()       # an empty file needs no transfer but is a file
    for attempt in range(1, ATTEMPTS + 1):
        have = os.path.getsize(part) if os.path.exists(part) else 0
        if have > size:
            os.remove(part)
            have = 0
        if have == size:
            return
        headers = {"Range": "bytes=%d-" % have} if have else {}
        try:
            with _request(url, headers) as resp:
                if have and resp.status != 206:
                    log("  the server ignored the range request: starting again")
                with open(part, "ab" if have and resp.status == 206 else "wb") as out:
                    for block in iter(lambda: resp.read(CHUNK), b""):
                        out.write(block)
                    out.flush()
                    os.fsync(out.fileno())
        except urllib.error.HTTPError as err:
            if err.code != 416:
                raise
            os.remove(part)            # a range past the end: the part is stale
            continue
        except (urllib.error.URLError, OSError, http.client.HTTPException) as err:
            log("  interrupted (%s)" % (getattr(err, "reason", None) or type(err).__name__))
            continue
        got = os.path.getsize(part)
        if got < size:
            log("  interrupted at %d of %d bytes, resuming (attempt %d of %d)" % (got, size, attempt, ATTEMPTS))
    have = os.path.getsize(part) if os.path.exists(part) else 0
    if have != size:
        raise DownloadError("%s: transfer stopped at %d of %d bytes after %d attempts; run the download "
                            "again to resume" % (os.path.basename(part)[:-len(PART_SUFFIX)], have, size, ATTEMPTS))


def _fetch_file(repo_id, commit, sibling, directory, log):
    name = sibling["rfilename"]
    size, algorithm, digest = _expected(sibling)
    dest = _local_path(directory, name)
    if _is_whole(dest, size, algorithm, digest):
        log("%s: already here" % name)
        return dest
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    part = dest + PART_SUFFIX
    url = "%s/%s/resolve/%s/%s" % (_endpoint(), urllib.parse.quote(repo_id, safe="/"),
                                   urllib.parse.quote(commit, safe=""), urllib.parse.quote(name, safe="/"))
    resumed = os.path.exists(part)
    log("%s: %s, %d bytes" % (name, "resuming" if resumed else "downloading", size))
    for _ in range(2):
        try:
            _transfer(url, part, size, log)
        except urllib.error.HTTPError as err:
            raise _http_error(err, name, repo_id, commit) from None
        got = _digest_of(part, algorithm, size)
        if got == digest:
            os.replace(part, dest)
            return dest
        os.remove(part)
        if not resumed:
            break
        # The kept part may have come from another revision or a broken
        # disk: one fresh transfer before giving up.
        log("  %s: the resumed file does not match, downloading it whole" % name)
        resumed = False
    raise DownloadError("%s: downloaded content does not match the hub's %s (expected %s, got %s); "
                        "nothing was kept, run the download again" % (name, algorithm, digest, got))


def download(repo_id, dir, revision="main", log=None):
    """Downloads the files of the model `repo_id` (e.g.
    "sentence-transformers/all-MiniLM-L6-v2") that sqlite-bert reads into
    the directory `dir`, at `revision` (branch, tag or commit).  Returns
    `dir`, ready for bert_load().  Files already there and whole are kept;
    an interrupted download resumes."""
    if log is None:
        def log(msg):
            pass
    if not isinstance(repo_id, str) or not re.match(r"^[\w.-]+(/[\w.-]+)?$", repo_id):
        raise DownloadError("%r is not a hub repository id (like \"sentence-transformers/all-MiniLM-L6-v2\")"
                            % (repo_id,))
    info = _repo_info(repo_id, revision)
    commit = info.get("sha") or revision
    files = select_files(repo_id, info["siblings"])
    os.makedirs(dir, exist_ok=True)
    for sibling in files:
        _fetch_file(repo_id, commit, sibling, dir, log)
    log("%s: %d files at revision %s in %s" % (repo_id, len(files), commit, dir))
    return dir

"""The model fetcher (sqlite_bert.download and its command line) against a
hub served on 127.0.0.1 (hub_server.py) from the generated test models
(build/models, made by `make test`).

    python3 tests/packages/test_download.py     # sqlite_bert importable
"""
import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import sqlite_bert                      # noqa: E402
from sqlite_bert import hub as hubmod   # noqa: E402
from hub_server import Hub               # noqa: E402

MODEL = os.path.join(ROOT, "build", "models", "st-mean-f16")   # a sentence-transformers layout
REPO = "sentence-transformers/all-MiniLM-L6-v2"
# What the fetcher must take from MODEL's files, and what it must leave.
NEEDED = {"config.json", "vocab.txt", "model.safetensors", "tokenizer_config.json", "modules.json",
          "sentence_bert_config.json", "1_Pooling/config.json"}
UNWANTED = {"pytorch_model.bin": os.urandom(4096), "onnx/model.onnx": os.urandom(2048),
            "flax_model.msgpack": os.urandom(1024), "README.md": b"# a model card\n",
            ".gitattributes": b"*.safetensors filter=lfs\n"}


def files_under(directory):
    out = set()
    for root, _, names in os.walk(directory):
        for name in names:
            out.add(os.path.relpath(os.path.join(root, name), directory).replace(os.sep, "/"))
    return out


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def extension_path():
    """The installed package's extension, else the one `make` built."""
    for base in (sqlite_bert.loadable_path(), os.path.join(ROOT, "bert")):
        for suffix in (".so", ".dylib"):
            if os.path.exists(base + suffix):
                return base
    return None


class FetcherTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.isfile(os.path.join(MODEL, "model.safetensors")):
            raise RuntimeError("%s is missing: run `make build/models/.done` (make test builds it)" % MODEL)

    def setUp(self):
        self.hub = Hub()
        self.hub.add_repo(REPO, MODEL, extra=UNWANTED)
        self.hub.__enter__()
        self.addCleanup(self.hub.__exit__)
        self.tmp = tempfile.mkdtemp(prefix="sqlite-bert-fetch-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.dir = os.path.join(self.tmp, "minilm")
        env = {"HF_ENDPOINT": self.hub.endpoint, "HF_TOKEN": "", "HUGGING_FACE_HUB_TOKEN": ""}
        patcher = mock.patch.dict(os.environ, env)
        patcher.start()
        self.addCleanup(patcher.stop)
        self.messages = []

    def fetch(self, repo=REPO, **kw):
        return sqlite_bert.download(repo, self.dir, log=self.messages.append, **kw)

    def assert_same_as_model(self):
        self.assertEqual(files_under(self.dir), NEEDED)
        for name in NEEDED:
            self.assertEqual(digest(os.path.join(self.dir, name)), digest(os.path.join(MODEL, name)), name)

    def test_fetches_exactly_the_files_a_model_directory_needs_and_it_loads(self):
        self.assertEqual(self.fetch(), self.dir)
        self.assert_same_as_model()
        base = extension_path()
        self.assertIsNotNone(base, "no bert.so: run make, or install the package")
        conn = sqlite3.connect(":memory:")
        conn.enable_load_extension(True)
        conn.load_extension(base)
        got = conn.execute("SELECT bert_load('got', ?), bert_load('orig', ?), "
                           "bert_embed('a dog barked', 'got') = bert_embed('a dog barked', 'orig'), "
                           "bert_similarity('a dog barked', 'the puppy was noisy', 'got')",
                           (self.dir, MODEL)).fetchone()
        self.assertEqual(got[:3], ("got", "orig", 1))
        self.assertTrue(-1.0 <= got[3] <= 1.0)

    def test_whole_files_already_there_are_not_fetched_again(self):
        self.fetch()
        before = len(self.hub.requests)
        self.fetch()
        fetched = [r for r in self.hub.requests[before:] if "/resolve/" in r["path"] or r["path"].startswith("/cdn/")]
        self.assertEqual(fetched, [])
        self.assert_same_as_model()

    def test_an_interrupted_transfer_resumes_with_a_range_request(self):
        self.hub.interrupt["model.safetensors"] = 3_000_000
        self.fetch()
        self.assert_same_as_model()
        ranges = [r["range"] for r in self.hub.requests_for("model.safetensors") if r["path"].startswith("/cdn/")]
        self.assertEqual(ranges, [None, "bytes=3000000-"])
        self.assertTrue(any("interrupted" in m for m in self.messages), self.messages)

    def test_a_part_left_by_a_killed_download_is_resumed(self):
        os.makedirs(self.dir)
        with open(os.path.join(MODEL, "model.safetensors"), "rb") as f:
            head = f.read(5_000_000)
        with open(os.path.join(self.dir, "model.safetensors.part"), "wb") as f:
            f.write(head)
        self.fetch()
        self.assert_same_as_model()
        ranges = [r["range"] for r in self.hub.requests_for("model.safetensors") if r["path"].startswith("/cdn/")]
        self.assertEqual(ranges, ["bytes=5000000-"])

    def test_a_part_that_does_not_match_is_downloaded_again_whole(self):
        os.makedirs(self.dir)
        with open(os.path.join(self.dir, "model.safetensors.part"), "wb") as f:
            f.write(b"\0" * 1000)
        self.fetch()
        self.assert_same_as_model()
        ranges = [r["range"] for r in self.hub.requests_for("model.safetensors") if r["path"].startswith("/cdn/")]
        self.assertEqual(ranges, ["bytes=1000-", None])

    def test_corrupted_weights_are_refused_and_nothing_half_is_left(self):
        self.hub.corrupt.add("model.safetensors")
        with self.assertRaises(sqlite_bert.DownloadError) as ctx:
            self.fetch()
        self.assertIn("model.safetensors", str(ctx.exception))
        self.assertIn("sha256", str(ctx.exception))
        names = files_under(self.dir)
        self.assertNotIn("model.safetensors", names)
        self.assertFalse(any(n.endswith(".part") for n in names), names)

    def test_a_corrupted_small_file_is_refused_by_its_git_blob_id(self):
        self.hub.corrupt.add("config.json")
        with self.assertRaises(sqlite_bert.DownloadError) as ctx:
            self.fetch()
        self.assertIn("config.json", str(ctx.exception))
        self.assertFalse(os.path.exists(os.path.join(self.dir, "config.json")))
        self.assertFalse(os.path.exists(os.path.join(self.dir, "config.json.part")))

    def test_an_empty_file_is_written_as_an_empty_file(self):
        self.hub.add_repo("org/empty-added-tokens", MODEL, extra={"added_tokens.json": b""})
        self.fetch("org/empty-added-tokens")
        self.assertEqual(files_under(self.dir), NEEDED | {"added_tokens.json"})
        self.assertEqual(os.path.getsize(os.path.join(self.dir, "added_tokens.json")), 0)

    def test_a_pickle_only_repository_is_refused_before_any_download(self):
        self.hub.add_repo("someone/old-bert", extra={"config.json": b"{}", "vocab.txt": b"[PAD]\n",
                                                     "pytorch_model.bin": os.urandom(1000)})
        with self.assertRaises(sqlite_bert.DownloadError) as ctx:
            self.fetch("someone/old-bert")
        msg = str(ctx.exception)
        for word in ("pytorch_model.bin", "pickle", "safetensors"):
            self.assertIn(word, msg)
        self.assertFalse(os.path.exists(self.dir))

    def test_the_token_goes_to_the_hub_and_not_to_the_storage_host(self):
        self.hub.gated.add(REPO)
        self.hub.token = "hf_secret"
        with self.assertRaises(sqlite_bert.DownloadError) as ctx:
            self.fetch()
        self.assertIn("HF_TOKEN", str(ctx.exception))
        with mock.patch.dict(os.environ, {"HF_TOKEN": "hf_secret"}):
            self.fetch()
        self.assert_same_as_model()
        hub_side = [r for r in self.hub.requests if not r["path"].startswith("/cdn/")]
        cdn_side = [r for r in self.hub.requests if r["path"].startswith("/cdn/")]
        self.assertTrue(cdn_side)
        self.assertEqual({r["auth"] for r in hub_side[1:]}, {"Bearer hf_secret"})
        self.assertEqual({r["auth"] for r in cdn_side}, {None})

    def test_an_unknown_repository_or_revision_says_not_found(self):
        with self.assertRaises(sqlite_bert.DownloadError) as ctx:
            self.fetch("nobody/nothing")
        self.assertIn("not found", str(ctx.exception))
        with self.assertRaises(sqlite_bert.DownloadError) as ctx:
            self.fetch(revision="v9")
        self.assertIn("'v9'", str(ctx.exception))

    def test_the_command_line_downloads_and_reports_errors(self):
        env = dict(os.environ)
        run = [sys.executable, "-m", "sqlite_bert", "download"]
        ok = subprocess.run(run + [REPO, self.dir], env=env, capture_output=True, text=True)
        self.assertEqual(ok.returncode, 0, ok.stderr)
        self.assertEqual(ok.stdout.strip(), self.dir)
        self.assert_same_as_model()
        bad = subprocess.run(run + ["nobody/nothing", self.dir], env=env, capture_output=True, text=True)
        self.assertEqual(bad.returncode, 1)
        self.assertIn("not found", bad.stderr)


class SelectionTest(unittest.TestCase):
    def siblings(self, *names):
        return [{"rfilename": n} for n in names]

    def test_sharded_safetensors_take_the_index_and_every_shard(self):
        got = hubmod.select_files("a/b", self.siblings(
            "config.json", "vocab.txt", "model.safetensors.index.json", "model-00001-of-00002.safetensors",
            "model-00002-of-00002.safetensors", "pytorch_model.bin.index.json",
            "pytorch_model-00001-of-00002.bin", "tf_model.h5"))
        self.assertEqual([s["rfilename"] for s in got], [
            "config.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
            "model.safetensors.index.json", "vocab.txt"])

    def test_a_repository_without_config_is_refused(self):
        with self.assertRaises(sqlite_bert.DownloadError):
            hubmod.select_files("a/b", self.siblings("model.safetensors", "vocab.txt"))

    def test_a_file_name_that_leaves_the_directory_is_refused(self):
        for bad in ("../evil.json", "/etc/passwd", "a//b"):
            with self.assertRaises(sqlite_bert.DownloadError):
                hubmod._local_path("/tmp/x", bad)


class SetupTest(unittest.TestCase):
    """The sdist's build script names the packages to install when a header is missing."""

    def test_a_missing_header_names_the_debian_and_homebrew_packages(self):
        setup_py = os.path.join(ROOT, "ext", "python", "setup.py")
        namespace = {"__name__": "sqlite_bert_setup", "__file__": setup_py}
        with open(setup_py, encoding="utf-8") as f:
            exec(compile(f.read(), setup_py, "exec"), namespace)
        try:
            from setuptools._distutils.ccompiler import new_compiler
            from setuptools._distutils.sysconfig import customize_compiler
        except ImportError:
            from distutils.ccompiler import new_compiler
            from distutils.sysconfig import customize_compiler
        compiler = new_compiler()
        customize_compiler(compiler)
        fake = ("no_such_header_for_sqlite_bert.h", "Fake", "fake", "fake", "libfake-dev", "fake-formula")
        missing = namespace["missing_dependencies"](compiler, [], namespace["DEPENDENCIES"] + [fake])
        self.assertEqual(missing, [fake])
        msg = namespace["missing_message"](missing)
        self.assertIn("sudo apt-get install libfake-dev", msg)
        self.assertIn("brew install fake-formula", msg)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=1).result
    failed = len(result.failures) + len(result.errors)
    print("fetcher: %d passed, %d failed" % (result.testsRun - failed, failed))
    sys.exit(1 if failed else 0)

"""Command line: `python -m sqlite_bert download REPO DIR` (or `sqlite-bert download ...`)
fetches a model from the Hugging Face hub; `python -m sqlite_bert path` prints
the extension's path, for `.load` in the sqlite3 shell or
`sqlite-utils --load-extension`; `python -m sqlite_bert demo-model` prints the
directory of the demo model the package carries, for bert_load."""
import argparse
import sys

from . import DownloadError, demo_model_path, download, loadable_path


def _log(msg):
    print(msg, file=sys.stderr, flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="sqlite-bert", description="sqlite-bert: BERT inside SQLite")
    commands = parser.add_subparsers(dest="command", required=True)
    fetch = commands.add_parser(
        "download", help="fetch a model's files from the Hugging Face hub (HF_ENDPOINT, HF_TOKEN honoured)")
    fetch.add_argument("repo_id", help='e.g. "sentence-transformers/all-MiniLM-L6-v2"')
    fetch.add_argument("dir", help="the model directory to write (created if missing)")
    fetch.add_argument("--revision", default="main", help="branch, tag or commit (default: main)")
    commands.add_parser("path", help="print the extension's path (without .so/.dylib) for .load")
    commands.add_parser("demo-model", help="print the directory of the demo model the package carries")
    args = parser.parse_args(argv)

    if args.command == "path":
        print(loadable_path())
        return 0
    if args.command == "demo-model":
        print(demo_model_path())
        return 0
    try:
        download(args.repo_id, args.dir, revision=args.revision, log=_log)
    except DownloadError as err:
        _log("sqlite-bert: %s" % err)
        return 1
    except KeyboardInterrupt:
        _log("sqlite-bert: interrupted; run the same command again to resume")
        return 130
    print(args.dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""golden_common.py - what the Python golden and cross-check scripts share:
their command line and PyTorch settings, running a node helper on a JSON
request, and the ONNX export of a reference head for transformers.js.
"""
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def script_args(doc, count):
    """The script's `count` arguments (else its docstring as the error), with
    PyTorch set for the reference: no autograd, one thread."""
    import torch
    if len(sys.argv) != count + 1:
        sys.exit(doc)
    torch.set_grad_enabled(False)
    torch.set_num_threads(1)
    return sys.argv[1:]


def node_json(script, argument, request):
    """Runs `node HERE/script argument` with `request` as JSON on stdin and
    returns its JSON answer; exits with its error output when it fails."""
    p = subprocess.run(["node", os.path.join(HERE, script), argument],
                       input=json.dumps(request).encode(), capture_output=True, check=False)
    if p.returncode:
        sys.exit(p.stderr.decode())
    return json.loads(p.stdout)


def onnx_export(module, m, out_dir, tokenizer_json, ids, token_type_ids, outputs, sequence_outputs):
    """A model directory for transformers.js: the reference model m's
    config.json and tokenizer_config.json, bert-base-uncased's
    tokenizer.json and onnx/model.onnx traced from `module` on ids (with
    token_type_ids unless m is a DistilBERT), batch and sequence axes
    dynamic (the outputs' sequence axis too when sequence_outputs)."""
    import torch
    os.makedirs(os.path.join(out_dir, "onnx"))
    for name in ("config.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(m.dir, name), out_dir)
    shutil.copy(tokenizer_json, os.path.join(out_dir, "tokenizer.json"))
    ids = torch.tensor([ids])
    mask = torch.ones_like(ids)
    names = ["input_ids", "attention_mask"]
    args = (ids, mask)
    if not m.distilbert:
        names.append("token_type_ids")
        args = (ids, mask, torch.tensor([token_type_ids]))
    axes = {n: {0: "batch", 1: "sequence"} for n in names}
    for o in outputs:
        axes[o] = {0: "batch", 1: "sequence"} if sequence_outputs else {0: "batch"}
    torch.onnx.export(module, args, os.path.join(out_dir, "onnx", "model.onnx"), input_names=names,
                      output_names=outputs, dynamic_axes=axes, opset_version=14)


def write_goldens(out_dir, manifest_file, manifest, files):
    """Writes the manifest (indented JSON) and each (file name, lines) of
    `files` as JSON Lines, compact, into out_dir."""
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, manifest_file), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1, ensure_ascii=False)
        f.write("\n")
    for fname, lines in files:
        with open(os.path.join(out_dir, fname), "w", encoding="utf-8") as f:
            for line in lines:
                f.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")

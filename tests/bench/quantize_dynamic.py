#!/usr/bin/python3
"""quantize_dynamic.py - writes the int8 graph that onnxruntime's
quantize_dynamic makes of a float32 ONNX file (IntegerOps mode, QOperator
format, weight_type=QInt8, per_channel=False, MatMulConstBOnly=True as in
its dynamic mode), with the onnx package alone (Debian's python3-onnx), so
that `make bench` needs no onnxruntime Python wheel.

    quantize_dynamic.py IN.onnx OUT.onnx

What it follows, in onnxruntime/python/tools/quantization:
  - operators/matmul.py, class MatMulInteger: every MatMul whose B input is
    an initializer becomes DynamicQuantizeLinear on A (one per activation
    tensor, shared by the MatMuls that read it, as quantize_inputs caches
    it), MatMulInteger(A_q, B_q, A_zero_point, B_zero_point), Cast to float,
    and Mul by A_scale * B_scale; MatMuls of two activations (attention's)
    stay float32.
  - quant_utils.py, compute_scale_zp and quantize_data for symmetric int8
    weights: one scale per tensor, scale = 2 max|B| / 255 (the range
    [-max, max] over the 255 steps of [-128, 127]), zero point 0,
    q = clip(round(B / scale), -128, 127).
Prints one line: how many MatMuls it quantized.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: quantize_dynamic.py IN.onnx OUT.onnx")
    model = onnx.load(sys.argv[1])
    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    uses = {}
    for node in graph.node:
        for name in node.input:
            uses[name] = uses.get(name, 0) + 1
    quantized_inputs = {}  # activation name -> (q, scale, zero point)
    new_nodes, new_inits, done = [], [], 0
    for node in graph.node:
        weight = inits.get(node.input[1]) if node.op_type == "MatMul" and len(node.input) == 2 else None
        if weight is None or len(weight.dims) != 2:
            new_nodes.append(node)
            continue
        a, b, out = node.input[0], node.input[1], node.output[0]
        if a not in quantized_inputs:
            names = (f"{a}_quantized", f"{a}_scale", f"{a}_zero_point")
            new_nodes.append(helper.make_node("DynamicQuantizeLinear", [a], list(names), f"{a}_QuantizeLinear"))
            quantized_inputs[a] = names
        aq, ascale, azp = quantized_inputs[a]
        w = numpy_helper.to_array(weight).astype(np.float32)
        top = float(np.abs(w).max())
        scale = np.float32(2 * top / 255 if top > 0 else 1.0)
        q = np.clip(np.rint(w / scale), -128, 127).astype(np.int8)
        bq, bscale, bzp = f"{b}_quantized", f"{b}_scale", f"{b}_zero_point"
        new_inits += [numpy_helper.from_array(q, bq), numpy_helper.from_array(np.array(scale, np.float32), bscale),
                      numpy_helper.from_array(np.array(0, np.int8), bzp)]
        uses[b] -= 1
        prefix = node.name or out
        new_nodes += [
            helper.make_node("MatMulInteger", [aq, bq, azp, bzp], [f"{out}_output_quantized"], f"{prefix}_quant"),
            helper.make_node("Cast", [f"{out}_output_quantized"], [f"{out}_cast_output"], f"{prefix}_cast",
                             to=TensorProto.FLOAT),
            helper.make_node("Mul", [ascale, bscale], [f"{prefix}_scales_mul:0"], f"{prefix}_scales_mul"),
            helper.make_node("Mul", [f"{out}_cast_output", f"{prefix}_scales_mul:0"], [out],
                             f"{prefix}_output_scale_mul"),
        ]
        done += 1
    kept = [i for i in graph.initializer if uses.get(i.name, 0) > 0]
    del graph.node[:]
    graph.node.extend(new_nodes)
    del graph.initializer[:]
    graph.initializer.extend(kept + new_inits)
    onnx.checker.check_model(model)
    onnx.save(model, sys.argv[2])
    print(f"quantize_dynamic.py: {done} MatMuls quantized to int8 (MatMulInteger)")


if __name__ == "__main__":
    main()

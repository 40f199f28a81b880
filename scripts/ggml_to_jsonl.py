#!/usr/bin/env python3
"""Turns the output of the ggml-vulkan anchor's mm_bench (shared/anchors/ggml) into peer lines for
`vk-sgmat bench --peer FILE`: one JSON object per measured case,
{"peer": NAME, "types": "f16:f32", "m": .., "n": .., "k": .., "tflops": .., "layout": "nt", ...}.

mm_bench multiplies A (M x K, row-major) by B stored transposed (N x K): vk-sgmat's layout `nt`;
its f16 and bf16 cases accumulate and store in f32 (types f16:f32, bf16:f32).

Usage: ./mm_bench f16:4096x4096x4096 ... | python3 scripts/ggml_to_jsonl.py [--name ggml-vulkan] [--tokens-first]
(use --name ggml-vulkan-cm1 for a run with GGML_VK_DISABLE_COOPMAT2=1). --tokens-first swaps M and N:
ggml runs a layer with the weights as A (`mm_bench f16:22016x1x4096` is one token through a
22016x4096 weight, its fast orientation); `vk-sgmat bench --model` runs the tokens as A
(1x22016x4096). The work is the same; the swap lets the ratio columns pair them."""
import argparse
import json
import re
import sys

LINE = re.compile(r"^ggml-vulkan\s+(\S+)\s+(\d+)x(\d+)x(\d+)\s+TFLOP/s=([0-9.]+)(.*)$")
TYPES = {"f16": "f16:f32", "bf16": "bf16:f32", "f32": "f32:f32", "f16f32": "f16,f32:f32", "bf16f32": "bf16,f32:f32"}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--name", default="ggml-vulkan")
    p.add_argument("--tokens-first", action="store_true", help="report M and N swapped (weights as B)")
    args = p.parse_args()
    for line in sys.stdin:
        m = LINE.match(line.strip())
        if not m:
            continue
        kind, mm, nn, kk, tflops, rest = m.groups()
        if args.tokens_first:
            mm, nn = nn, mm
        extra = dict(kv.split("=", 1) for kv in rest.split() if "=" in kv)
        print(json.dumps({"peer": args.name, "types": TYPES.get(kind, kind), "m": int(mm), "n": int(nn),
                          "k": int(kk), "tflops": float(tflops), "layout": "nt", "mm_bench": extra}), flush=True)


if __name__ == "__main__":
    main()

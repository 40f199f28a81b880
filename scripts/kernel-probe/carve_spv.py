#!/usr/bin/env python3
"""Carves the SPIR-V modules embedded in a binary (ggml-vulkan's mm_bench embeds its shaders as
byte arrays): every 4-byte-aligned SPIR-V magic starts one; it runs instruction by instruction
(word count in the high half of each instruction's first word) until a word count of zero, the
end of the data, or the next magic. Writes m<index>.spv (index in order of appearance) for
modules that spirv-dis can read.

Usage: carve_spv.py BINARY OUTDIR
"""
import os
import struct
import sys

MAGIC = 0x07230203


def modules(data):
    n = len(data) // 4
    words = struct.unpack("<%dI" % n, data[: n * 4])
    starts = [i for i, w in enumerate(words) if w == MAGIC]
    for s in starts:
        i = s + 5  # the header's five words
        while i < n:
            count = words[i] >> 16
            if count == 0 or words[i] == MAGIC:
                break
            i += count
        yield s, data[s * 4 : min(i, n) * 4]


def main():
    data = open(sys.argv[1], "rb").read()
    os.makedirs(sys.argv[2], exist_ok=True)
    for index, (_, blob) in enumerate(modules(data)):
        with open(os.path.join(sys.argv[2], "m%d.spv" % index), "wb") as f:
            f.write(blob)


if __name__ == "__main__":
    main()

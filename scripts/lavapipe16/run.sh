#!/usr/bin/env bash
# Issue 14 section 3: lavapipe at subgroup size 16 (LP_NATIVE_VECTOR_WIDTH=512) and a cooperative-
# matrix shader vk-sgmat did not generate. shader.comp is a minimal GLSL kernel (one 8x8x8 f16 x
# f16 -> f32 product, a shape lavapipe lists at both widths), compiled by glslang 15.1 (Debian
# trixie's glslang-tools):
#   glslangValidator --target-env vulkan1.3 -o shader.spv shader.comp
# probe/ creates its compute pipeline with plain ash (no vk-sgmat code) and runs it.
# Expected with Mesa 26.1.6: width 256 (subgroup 8) prints C[0][0] = 8; width 512 (subgroup 16)
# dies with SIGSEGV inside vkCreateComputePipelines, with or without a required subgroup size and
# full subgroups. That is why vk-sgmat's device filter refuses lavapipe above subgroup 8.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
CARGO_TARGET_DIR=$root/target/lavapipe16 cargo build --quiet --release --manifest-path "$here/probe/Cargo.toml" || exit 1
probe=$root/target/lavapipe16/release/probe
for width in 256 512; do
    size=$((width / 32))
    for args in "" "$size full"; do
        echo "== LP_NATIVE_VECTOR_WIDTH=$width probe shader.spv $args"
        LP_NATIVE_VECTOR_WIDTH=$width "$root/scripts/cargo-runner.sh" "$probe" "$here/shader.spv" $args
        echo "exit status $?"
    done
done

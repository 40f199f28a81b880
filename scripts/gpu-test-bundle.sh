#!/usr/bin/env bash
# Packs the test suite for a GPU machine that has no Rust (the `device` tool's): every test
# binary, built here in release and stripped, plus a Khronos validation layer and Vulkan loader
# new enough for NVIDIA's driver 580 (Debian forky's; the lavapipe sysroot's layer, 1.4.309,
# does not know VK_KHR_shader_bfloat16, and an older loader asks the layer for a function newer
# headers made instance-level, which it reports). docs/perf/gpu-tests.sh runs them there.
#
# Usage: scripts/gpu-test-bundle.sh [DIR]   (default: carry/tests, which `run` can carry)
#
# The mirror is the one the host's apt already uses (scripts/private-apt.sh).
set -euo pipefail

root_dir=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root_dir/carry/tests}
mkdir -p "$out/bin" "$out/layer" "$out/loader"

cd "$root_dir"
cargo test --release --no-run --message-format=json 2>/dev/null \
    | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' \
    | sort -u | while read -r exe; do
        name=$(basename "$exe" | sed 's/-[0-9a-f]*$//')
        [[ $exe == */deps/* ]] || continue
        # The library's own unit tests need no GPU; the rest are what a GPU run is for.
        [[ $name == vk_sgmat ]] && continue
        strip -o "$out/bin/$name" "$exe"
    done

work=$(mktemp -d "${TMPDIR:-/tmp}/vk-sgmat-apt.XXXXXX")
trap 'rm -rf "$work"' EXIT
source "$root_dir/scripts/private-apt.sh"
private_apt "$work" forky || { echo "gpu-test-bundle: no mirror to fetch from" >&2; exit 1; }
apt-get "${apt_opts[@]}" -qq update >&2
(cd "$work/archives" && apt-get "${apt_opts[@]}" -qq download vulkan-validationlayers libvulkan1 >&2)
for deb in "$work"/archives/*.deb; do
    dpkg -x "$deb" "$work/root"
done
lib=$work/root/usr/lib/x86_64-linux-gnu
# Compressed: the layer is 35 MB of the 64 MiB `run` carries; gpu-tests.sh unpacks it.
xz -T0 -c "$lib/libVkLayer_khronos_validation.so" > "$out/layer/libVkLayer_khronos_validation.so.xz"
sed 's#"library_path": *"[^"]*"#"library_path": "./libVkLayer_khronos_validation.so"#' \
    "$work/root/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json" \
    > "$out/layer/VkLayer_khronos_validation.json"
cp -L "$lib/libvulkan.so.1" "$out/loader/libvulkan.so.1"
du -sh "$out" >&2

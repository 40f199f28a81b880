#!/usr/bin/env bash
# Provisions a private sysroot with Mesa's lavapipe (>= 26.1, from Debian trixie-backports), the Vulkan
# loader, the Khronos validation layer and spirv-tools, without root and without touching the host's
# apt state. Prints the sysroot path on success.
#
# Usage: scripts/provision-lavapipe.sh [SYSROOT]   (default: target/lavapipe-sysroot)
#
# The mirror is the one the host's apt already uses (read from its sources), so no registry host name
# lives in this repository.
set -euo pipefail

root_dir=$(cd "$(dirname "$0")/.." && pwd)
sysroot=${1:-$root_dir/target/lavapipe-sysroot}
stamp=$sysroot/.provisioned-v2
if [[ -f $stamp ]]; then
    echo "$sysroot"
    exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/vk-sgmat-apt.XXXXXX")
trap 'rm -rf "$work"' EXIT

source "$root_dir/scripts/private-apt.sh"
private_apt "$work" trixie trixie-backports || { echo "provision-lavapipe: no mirror to fetch from" >&2; exit 1; }
echo "provision-lavapipe: fetching Mesa (trixie-backports), validation layers and spirv-tools" >&2
apt-get "${apt_opts[@]}" -qq update >&2
apt-get "${apt_opts[@]}" -qq -y install --download-only -t trixie-backports \
    mesa-vulkan-drivers libvulkan1 vulkan-validationlayers spirv-tools >&2

rm -rf "$sysroot"
mkdir -p "$sysroot"
for deb in "$work"/archives/*.deb; do
    dpkg -x "$deb" "$sysroot"
done

lib=$sysroot/usr/lib/x86_64-linux-gnu
icd_dir=$sysroot/icd
mkdir -p "$icd_dir"
sed "s#\"library_path\": *\"[^\"]*\"#\"library_path\": \"$lib/libvulkan_lvp.so\"#" \
    "$sysroot/usr/share/vulkan/icd.d/lvp_icd.json" > "$icd_dir/lvp_icd.json"
layer_dir=$sysroot/layers
mkdir -p "$layer_dir"
sed "s#\"library_path\": *\"[^\"]*\"#\"library_path\": \"$lib/libVkLayer_khronos_validation.so\"#" \
    "$sysroot/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json" \
    > "$layer_dir/VkLayer_khronos_validation.json"

# spirv-val is a trixie binary: run it with the sysroot's loader and libraries.
mkdir -p "$sysroot/bin"
cat > "$sysroot/bin/spirv-val" <<WRAP
#!/bin/sh
exec "$sysroot/usr/lib64/ld-linux-x86-64.so.2" --library-path "$lib" "$sysroot/usr/bin/spirv-val" "\$@"
WRAP
chmod +x "$sysroot/bin/spirv-val"
cp "$sysroot/bin/spirv-val" "$sysroot/bin/spirv-dis"
sed -i 's#usr/bin/spirv-val#usr/bin/spirv-dis#' "$sysroot/bin/spirv-dis"

touch "$stamp"
echo "$sysroot"

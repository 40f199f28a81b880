#!/usr/bin/env bash
# Cargo runner (see .cargo/config.toml): runs test, bench and example binaries on the machine's GPU
# driver when one is installed, else on Mesa's lavapipe from a private sysroot provisioned into
# target/ by scripts/provision-lavapipe.sh. spirv-tools always come from that sysroot.
#
# VK_SGMAT_DRIVER=auto|native|lavapipe overrides the choice (default auto).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
sysroot=${VK_SGMAT_SYSROOT:-$root/target/lavapipe-sysroot}

native_driver() {
    [[ -n ${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-} ]] && return 0
    local d f
    for d in /etc/vulkan/icd.d /usr/share/vulkan/icd.d /usr/local/share/vulkan/icd.d /usr/local/nvidia/share/vulkan/icd.d; do
        for f in "$d"/*.json; do
            [[ -f $f ]] || continue
            case $(basename "$f") in lvp_icd*) continue ;; esac
            # A GPU ICD is only usable with the system's loader.
            ldconfig -p 2>/dev/null | grep -q 'libvulkan\.so\.1' && return 0
        done
    done
    return 1
}

mode=${VK_SGMAT_DRIVER:-auto}
if [[ $mode == auto ]]; then
    if native_driver; then mode=native; else mode=lavapipe; fi
fi

if ! "$root/scripts/provision-lavapipe.sh" "$sysroot" >/dev/null; then
    echo "vk-sgmat runner: could not provision lavapipe/spirv-tools into $sysroot (see messages above)." >&2
    echo "  Install a Vulkan GPU driver, or give this machine access to Debian's package mirror." >&2
    exit 1
fi
export VK_SGMAT_SPIRV_VAL=$sysroot/bin/spirv-val
export VK_SGMAT_SPIRV_DIS=$sysroot/bin/spirv-dis
export MESA_SHADER_CACHE_DIR=${MESA_SHADER_CACHE_DIR:-$root/target/mesa-shader-cache}

case $mode in
native)
    exec "$@"
    ;;
lavapipe)
    export VK_DRIVER_FILES=$sysroot/icd/lvp_icd.json
    export VK_LAYER_PATH=$sysroot/layers
    export VK_SGMAT_DRIVER_IN_USE=lavapipe
    exec "$sysroot/usr/lib64/ld-linux-x86-64.so.2" --library-path "$sysroot/usr/lib/x86_64-linux-gnu" "$@"
    ;;
*)
    echo "vk-sgmat runner: VK_SGMAT_DRIVER must be auto, native or lavapipe (got $mode)" >&2
    exit 2
    ;;
esac

# Sourced by provision-lavapipe.sh and gpu-test-bundle.sh: `debian_mirror` prints the Debian mirror
# the host's apt already uses (from its sources), so no registry host name lives in this
# repository; it fails, saying so, where there is none.
debian_mirror() {
    local uri="" f
    for f in /etc/apt/sources.list.d/*.sources; do
        [[ -f $f ]] || continue
        uri=$(awk '/^URIs:/ {print $2; exit}' "$f")
        [[ -n $uri ]] && break
    done
    if [[ -z $uri && -f /etc/apt/sources.list ]]; then
        uri=$(awk '$1 == "deb" {for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; exit}}' /etc/apt/sources.list)
    fi
    if [[ -z $uri ]]; then
        echo "no Debian mirror found in the host's apt sources" >&2
        return 1
    fi
    echo "$uri"
}

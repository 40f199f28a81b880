# Sourced by provision-lavapipe.sh and gpu-test-bundle.sh: apt state of their own, fetching from
# the Debian mirror the host's apt already uses (read from its sources), so no registry host name
# lives in this repository and the host's apt state is left alone.

# Prints the host's Debian mirror; fails, saying so, where there is none.
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

# private_apt WORK SUITE...: apt state under WORK whose sources are SUITE... (main) of the host's
# mirror; sets the array `apt_opts` that makes apt-get use it (downloads go to WORK/archives).
private_apt() {
    local work=$1 uri suite
    shift
    uri=$(debian_mirror) || return 1
    mkdir -p "$work/lists/partial" "$work/archives/partial"
    : > "$work/status"
    : > "$work/sources.list"
    for suite in "$@"; do
        echo "deb [trusted=yes] $uri $suite main" >> "$work/sources.list"
    done
    apt_opts=(
        -o "Dir::Etc::SourceList=$work/sources.list"
        -o "Dir::Etc::SourceParts=/dev/null"
        -o "Dir::State::Lists=$work/lists"
        -o "Dir::State::status=$work/status"
        -o "Dir::Cache::archives=$work/archives"
        -o "Dir::Cache=$work"
        -o "Debug::NoLocking=1"
        -o "APT::Sandbox::User=root"
        -o "Acquire::Languages=none"
    )
}

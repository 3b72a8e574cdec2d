#!/usr/bin/env bash
# Runs a command beside a one-node Ray cluster (`ray start --head`) inside new PID, mount and
# network namespaces: only loopback exists there, so Ray binds nothing but 127.0.0.1, and every
# Ray process ends with the namespace. The command finds the cluster through RAY_ADDRESS.
#   scripts/ray/in-namespace.sh python3 scripts/ray/transcode.py IN OUT --chunks 2 -- --preset veryfast
# Root or unprivileged (then a user namespace maps the caller to root inside).
set -euo pipefail
if [ "${H264KIT_RAY_NAMESPACE:-}" != 1 ]; then
    user=()
    [ "$(id -u)" -eq 0 ] || user=(--user --map-root-user)
    exec env H264KIT_RAY_NAMESPACE=1 unshare "${user[@]}" --pid --fork --mount-proc --net "$0" "$@"
fi
PATH="$PATH:/usr/sbin:/sbin"
ip link set lo up
temp="$(mktemp -d /tmp/ray-XXXXXX)"   # short: Ray's socket paths must fit 107 bytes
trap 'ray stop --force >/dev/null 2>&1 || true; rm -rf "$temp"' EXIT
ray start --head --node-ip-address 127.0.0.1 --port 6379 --num-cpus "$(nproc)" --include-dashboard=false \
    --disable-usage-stats --temp-dir "$temp" >"$temp/start.log" 2>&1 || { cat "$temp/start.log" >&2; exit 1; }
export RAY_ADDRESS=127.0.0.1:6379
"$@"

#!/usr/bin/env bash
# Scores `netcheck analyze` against a folder of labelled NCCL logs (a labels.json beside the
# *.log files, as in the shared public-log corpus) and prints one row per log and the score
# per field. The logs are read where they are; nothing is copied.
#
# Usage: scripts/score-public-logs.sh FOLDER [NETCHECK_BINARY]
#   NETCHECK_BINARY defaults to target/release/netcheck, else target/debug/netcheck.
#
# Field mapping (label → Analysis JSON):
#   inter_node_transport → inter_node_transport  (the labels' `single-node` is the contract's `none`)
#   socket_fallback      → socket_fallback       (true / false / null)
#   provider             → ofi_provider          (null ↔ null)
#   nccl_version         → nccl_versions         (null ↔ [], else exactly [version])
#   network_selected     → networks              (null ↔ [], else exactly [name])
set -euo pipefail

dir=${1:?usage: $0 FOLDER [NETCHECK_BINARY]}
bin=${2:-}
if [[ -z $bin ]]; then
  for candidate in target/release/netcheck target/debug/netcheck; do
    [[ -x $candidate ]] && bin=$candidate && break
  done
fi
[[ -x ${bin:-} ]] || { echo "error: no netcheck binary; run cargo build or pass one" >&2; exit 2; }
command -v jq >/dev/null || { echo "error: jq is required" >&2; exit 3; }
[[ -r $dir/labels.json ]] || { echo "error: $dir/labels.json not found" >&2; exit 2; }

fields=(inter_node_transport socket_fallback provider nccl_version network)
declare -A right
for f in "${fields[@]}"; do right[$f]=0; done
total=0

printf '%-8s %-22s %-22s %-14s %-20s %-26s\n' file transport fallback provider nccl_version network
while IFS= read -r label; do
  file=$(jq -r .file <<<"$label")
  out=$("$bin" analyze --format json "$dir/$file" || true)
  total=$((total + 1))
  row=()
  for f in "${fields[@]}"; do
    case $f in
      inter_node_transport)
        want=$(jq -r '.inter_node_transport | if . == "single-node" then "none" else . end' <<<"$label")
        got=$(jq -r .inter_node_transport <<<"$out") ;;
      socket_fallback)
        want=$(jq -c .socket_fallback <<<"$label"); got=$(jq -c .socket_fallback <<<"$out") ;;
      provider)
        want=$(jq -c .provider <<<"$label"); got=$(jq -c .ofi_provider <<<"$out") ;;
      nccl_version)
        want=$(jq -c '[.nccl_version | select(. != null)]' <<<"$label"); got=$(jq -c .nccl_versions <<<"$out") ;;
      network)
        want=$(jq -c '[.network_selected | select(. != null)]' <<<"$label"); got=$(jq -c .networks <<<"$out") ;;
    esac
    if [[ $want == "$got" ]]; then
      right[$f]=$((right[$f] + 1)); row+=("ok $got")
    else
      row+=("MISS $got≠$want")
    fi
  done
  printf '%-8s %-22s %-22s %-14s %-20s %-26s\n' "$file" "${row[@]}"
done < <(jq -c '.[]' "$dir/labels.json")

echo
for f in "${fields[@]}"; do
  printf '%-22s %d/%d\n' "$f" "${right[$f]}" "$total"
done

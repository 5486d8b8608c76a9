#!/usr/bin/env bash
# Our FIB against DPDK's rte_fib (DIR24_8) and rte_fib6 (TRIE) on exactly
# the same data, alternating, in one run: dpdk-test-fib generates a table
# of the given size and prefix-length mix and lookup addresses inside its
# routes, dumps both (-w, -u; routes shuffled with -s, so the addresses
# come in random order: unshuffled, they ascend with the routes and the
# lookups walk the table sequentially), times its lookups on the dumped
# files (-f, -t), and routecache's fibprobe example times ours on the
# same files, in the same order, in bursts of 32 (DPDK's are 64).
# Needs Debian's dpdk-dev (dpdk-test-fib); runs with --no-huge --no-pci.
# Usage: bench/scripts/fib-vs-dpdk.sh [rounds]
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-3}
command -v dpdk-test-fib >/dev/null || { echo "dpdk-test-fib not found: apt-get install dpdk-dev" >&2; exit 1; }
cargo build --release -q -p routecache --example fibprobe
tsc_mhz=$(grep -m1 'cpu MHz' /proc/cpuinfo | awk '{print $4}')
echo "TSC ${tsc_mhz} MHz (dpdk-test-fib reports TSC cycles per lookup)"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
eal=(--no-huge --no-pci -l 0)
# family, EAL memory, test-fib arguments
cases=(
  "ipv4 3000 -n 1000000 -g 65536 -d 16:5%,18:5%,19:6%,20:7%,21:8%,22:12%,23:10%,24:46%,25:1%"
  "ipv6 6000 -6 -n 200000 -g 1000000 -d 32:15%,36:5%,40:8%,44:12%,46:5%,47:5%,48:48%,64:2%"
)
for c in "${cases[@]}"; do
  read -r fam mem args <<<"$c"
  # shellcheck disable=SC2086
  dpdk-test-fib "${eal[@]}" -m "$mem" -- $args -l 10000000 -s \
    -w "$dir/$fam.routes" -u "$dir/$fam.ips" >/dev/null 2>&1
  for i in $(seq "$rounds"); do
    # The FIB's shape comes from the arguments; routes and addresses from the files.
    # shellcheck disable=SC2086
    cy=$(dpdk-test-fib "${eal[@]}" -m "$mem" -- $(sed 's/-n [0-9]*//; s/-d [^ ]*//' <<<"$args") \
      -f "$dir/$fam.routes" -t "$dir/$fam.ips" 2>&1 | awk '/AVG FIB lookup/{print $4}')
    echo "rte_fib $fam: ${cy} cycles = $(awk -v c="$cy" -v f="$tsc_mhz" 'BEGIN{printf "%.1f", f/c}') M lookups/s"
    echo "ours    $fam: $(./target/release/examples/fibprobe --routes "$dir/$fam.routes" --ips "$dir/$fam.ips" | grep 'burst   32')"
  done
done

#!/usr/bin/env bash
# Our FIB against DPDK's rte_fib (DIR24_8) and rte_fib6 (TRIE) on tables of
# the same size and prefix-length mix, alternating, in one run.
# Needs Debian's dpdk-dev (dpdk-test-fib); runs with --no-huge --no-pci.
# Usage: bench/scripts/fib-vs-dpdk.sh [rounds]
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-3}
command -v dpdk-test-fib >/dev/null || { echo "dpdk-test-fib not found: apt-get install dpdk-dev" >&2; exit 1; }
cargo build --release -q -p routecache --example fibprobe
tsc_mhz=$(grep -m1 'cpu MHz' /proc/cpuinfo | awk '{print $4}')
echo "TSC ${tsc_mhz} MHz (dpdk-test-fib reports TSC cycles per lookup)"
v4_mix="16:5%,18:5%,19:6%,20:7%,21:8%,22:12%,23:10%,24:46%,25:1%"
v6_mix="32:15%,36:5%,40:8%,44:12%,46:5%,47:5%,48:48%,64:2%"
for i in $(seq "$rounds"); do
  c=$(dpdk-test-fib --no-huge --no-pci -m 3000 -l 0 -- -n 1000000 -l 10000000 -g 65536 -d "$v4_mix" 2>&1 | awk '/AVG FIB lookup/{print $4}')
  echo "rte_fib  ipv4 1M: ${c} cycles = $(awk -v c="$c" -v f="$tsc_mhz" 'BEGIN{printf "%.1f", f/c}') M lookups/s"
  echo "ours     ipv4 1M: $(./target/release/examples/fibprobe 1000000 v4 | grep 'burst   32')"
  c=$(dpdk-test-fib --no-huge --no-pci -m 6000 -l 0 -- -6 -n 200000 -l 10000000 -g 1000000 -d "$v6_mix" 2>&1 | awk '/AVG FIB lookup/{print $4}')
  echo "rte_fib6 ipv6 200k: ${c} cycles = $(awk -v c="$c" -v f="$tsc_mhz" 'BEGIN{printf "%.1f", f/c}') M lookups/s"
  echo "ours     ipv6 200k: $(./target/release/examples/fibprobe 200000 v6 | grep 'burst   32')"
done

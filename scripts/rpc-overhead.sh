#!/usr/bin/env bash
# What the small-RPC goal of rpcbench (rpc rate >= 90 % of the raw datapath's
# request-response rate) asks of the RPC layer on this machine
# (docs/PERFORMANCE.md §4, "What small_rate's goal asks for").
#
# It measures, on loopback UDP:
#
#   R_udp     the RPC layer's CPU per RPC, both ends together: rpc's
#             BenchmarkSmallRPC/udp minus BenchmarkRawEcho/udp (cpu-ns/op,
#             both endpoints driven by one goroutine, 32 in flight, the
#             median of REPS alternations)
#   R_memnet  the same over memnet (no system calls: warm caches)
#   D         the raw datapath's time per request on each side in
#             rpcbench's small_rate (1e9 / the raw rate: both sides busy)
#
# and prints the ratio a layer costing R per RPC allows when each side
# carries half of it, D / (D + R/2), next to the ratio rpcbench measured in
# the same run, and the R that 90 % allows: 2 D (1/0.9 - 1) = 0.22 D. The
# allowed ratio is an upper bound: the side that limits the rate carries at
# least half of R.
#
#   scripts/rpc-overhead.sh
#   REPS=5 scripts/rpc-overhead.sh
#
# Run it on an idle machine; it takes about a minute.
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-3}
OUT=${OUT:-$(mktemp -d)}
go test -c -o "$OUT/rpc.test" ./rpc
go build -o "$OUT/cornflakes" ./cmd/cornflakes
# cpu runs one benchmark and prints its cpu-ns/op.
cpu() {
	(cd rpc && "$OUT/rpc.test" -test.run '^$' -test.bench "$1" -test.benchtime 1s) |
		awk '{for (i = 1; i < NF; i++) if ($(i+1) == "cpu-ns/op") print $i}'
}
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
: >"$OUT/r"
for i in $(seq "$REPS"); do
	for dp in udp memnet; do
		rpc=$(cpu "^BenchmarkSmallRPC\$/^$dp\$")
		raw=$(cpu "^BenchmarkRawEcho\$/^$dp\$")
		echo "$dp $rpc $raw" | tee -a "$OUT/r" >&2
	done
done
r_udp=$(awk '$1 == "udp" {print $2 - $3}' "$OUT/r" | median)
r_mem=$(awk '$1 == "memnet" {print $2 - $3}' "$OUT/r" | median)
"$OUT/cornflakes" rpcbench --quick --tests small_rate --json --out "$OUT/rpcbench" 2>/dev/null >"$OUT/small_rate.json"
read -r rpc_rps raw_rps < <(python3 -c '
import json, sys
r = {x["variant"]: x["value"] for x in json.load(open(sys.argv[1])) if x["test"] == "small_rate"}
print(r["rpc"], r["raw"])' "$OUT/small_rate.json")
awk -v ru="$r_udp" -v rm="$r_mem" -v rpc="$rpc_rps" -v raw="$raw_rps" 'BEGIN {
	d = 1e9 / raw
	printf "R_udp %.0f ns per RPC (both ends), R_memnet %.0f ns; D %.0f ns per request per side (raw %.0f rps)\n", ru, rm, d, raw
	printf "ratio allowed by R_udp: %.2f; measured small_rate rpc/raw: %.2f (rpc %.0f rps)\n", d / (d + ru / 2), rpc / raw, rpc
	printf "90 %% needs R <= %.0f ns per RPC (both ends): %.1fx less than R_udp\n", 0.2222 * d, ru / (0.2222 * d)
}'
echo "results in $OUT" >&2

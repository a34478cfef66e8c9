#!/usr/bin/env bash
# Bounds what any serializer can gain over kernel UDP (docs/PERFORMANCE.md
# §5, "why the speedup goals cannot be met on kernel UDP"). For each
# workload and baseline it runs kv's BenchmarkEndToEnd (a busy-polling server
# endpoint, one client connection with 32 requests in flight, loopback UDP)
# under the CPU profiler and prints:
#
#   server_ns   the server's busy ns per request (server-ns/op)
#   ser_ns      the server's serialization per request: profile time under the
#               codec's decodeRequest, encodeResponse and done
#   copy_ns     the runtime.memmove inside it (copying the values)
#   bound_free  server_ns / (server_ns - ser_ns): the speedup of a serializer
#               that cost nothing at all
#   bound_copy  server_ns / (server_ns - ser_ns + copy_ns): the same when the
#               values must still be read (on kernel UDP the kernel copies
#               every byte it sends, zero-copy entries included)
#
# ser_ns divides by the measured requests plus the warm-up (preloads are
# not counted), so it errs high and the bounds err generous.
#
#   scripts/serialization-bound.sh
#   WORKLOADS="twitter ycsb" SERIALIZERS=vtprotobuf N=200000 scripts/serialization-bound.sh
#
# Run it on an idle machine; it takes about 10 s per pair.
set -euo pipefail
cd "$(dirname "$0")/.."
WORKLOADS=${WORKLOADS:-"twitter ycsb cdn google"}
SERIALIZERS=${SERIALIZERS:-"vtprotobuf flatbuffers"}
N=${N:-400000}
OUT=${OUT:-$(mktemp -d)}
go test -c -o "$OUT/kv.test" ./kv
# BenchmarkEndToEnd runs 10000 warm-up requests before each of its two
# runs (b.N = 1, then N).
total=$((N + 20001))
focus='Codec\).(encodeResponse|decodeRequest|done)$'
# sec converts pprof's durations ("1.23s", "450ms") to seconds.
sec() { awk '{v = $1; if (v ~ /ms$/) { sub(/ms$/, "", v); v /= 1000 } else sub(/s$/, "", v); print v + 0}'; }
printf '%-8s %-12s %10s %8s %8s %10s %10s\n' workload serializer server_ns ser_ns copy_ns bound_free bound_copy
for w in $WORKLOADS; do
	for s in $SERIALIZERS; do
		prof="$OUT/$w-$s.prof"
		server_ns=$("$OUT/kv.test" -test.run '^$' -test.bench "EndToEnd/udp/$w/$s\$" -test.benchtime "${N}x" \
			-test.cpuprofile "$prof" | awk '/server-ns\/op/ {for (i = 1; i < NF; i++) if ($(i+1) == "server-ns/op") print $i}')
		if [[ -z "$server_ns" ]]; then
			echo "serialization-bound: no server-ns/op for $w/$s" >&2
			exit 1
		fi
		# Seconds under the codec's server-side functions, and the memmove
		# among them (nothing dropped from the listing).
		top=$(go tool pprof -top -nodefraction=0 -edgefraction=0 -focus "$focus" "$OUT/kv.test" "$prof" 2>/dev/null)
		ser=$(awk '/^Showing nodes accounting for/ {print $5}' <<<"$top" | sed 's/,$//' | sec)
		copy=$(awk '$NF == "runtime.memmove" {print $1}' <<<"$top" | sec)
		awk -v w="$w" -v s="$s" -v t="$server_ns" -v ser="$ser" -v cp="${copy:-0}" -v n="$total" 'BEGIN {
			sn = ser * 1e9 / n; cn = cp * 1e9 / n
			printf "%-8s %-12s %10.0f %8.0f %8.0f %9.2fx %9.2fx\n", w, s, t, sn, cn, t / (t - sn), t / (t - sn + cn)
		}'
	done
done
echo "profiles in $OUT" >&2

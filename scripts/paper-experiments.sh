#!/usr/bin/env bash
# Runs the paper's key-value experiments (cornflakes bench --experiment ...)
# one after the other and writes, per experiment, results.json, results.csv,
# the PNG plots and table.md (the Markdown tables recorded in
# docs/PERFORMANCE.md) into $OUT/<experiment>/.
#
#   scripts/paper-experiments.sh                      # every preset, kernel UDP
#   EXPERIMENTS="table1 fig7" scripts/paper-experiments.sh
#   DATAPATH=xdp QUICK=1 scripts/paper-experiments.sh # AF_XDP (root), quick sweeps
#
# Each preset takes about 3-5 minutes (--quick: 2-3); run it on an idle
# machine: the comparison is only as good as the cores are quiet.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out/paper}
DATAPATH=${DATAPATH:-udp}
EXPERIMENTS=${EXPERIMENTS:-"table1 table2 fig7 table3 table4 table5 fig12"}
args=(--datapath "$DATAPATH" --markdown)
[[ -n "${QUICK:-}" ]] && args+=(--quick)
mkdir -p "$OUT"
go build -o "$OUT/cornflakes" ./cmd/cornflakes
for e in $EXPERIMENTS; do
	dir="$OUT/$e"
	mkdir -p "$dir"
	echo "== $e ($(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
	start=$(date +%s)
	"$OUT/cornflakes" bench --experiment "$e" --out "$dir" "${args[@]}" > "$dir/table.md"
	{
		echo
		echo "_\`cornflakes bench --experiment $e ${args[*]}\`, $(date -u +%F), $(($(date +%s) - start)) s, load at end $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs, $(uname -r)._"
	} >> "$dir/table.md"
	cat "$dir/table.md"
done

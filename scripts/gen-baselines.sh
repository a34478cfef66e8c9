#!/usr/bin/env bash
# gen-baselines.sh regenerates the baseline serializers' code for the
# microbenchmark schemas in internal/benchschema (see docs/BASELINES.md).
#
# Tools (Debian packages + go install):
#   apt-get install protobuf-compiler flatbuffers-compiler capnproto
#   go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
#   go install github.com/planetscale/vtprotobuf/cmd/protoc-gen-go-vtproto@v0.6.1-0.20240319094008-0393e58bdf10
#   go install capnproto.org/go/capnp/v3/capnpc-go@v3.1.0-alpha.1
# The go-installed plugins must be on PATH (default $(go env GOPATH)/bin is added below).
#
# Output (committed):
#   internal/baselines/pb/bench.pb.go          protoc-gen-go       (package pb)
#   internal/baselines/pb/bench_vtproto.pb.go  protoc-gen-go-vtproto (same package: VT methods on the pb types)
#   internal/baselines/fb/*.go                 flatc --go          (package fb)
#   internal/baselines/capnpb/bench.capnp.go   capnp compile -ogo  (package capnpb)
#
# Usage: scripts/gen-baselines.sh [outdir]
#   outdir defaults to the repository root; the staleness test
#   (internal/baselines TestGeneratedUpToDate) passes a temporary directory and
#   compares the result with the committed files.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$root}"
out="$(mkdir -p "$out" && cd "$out" && pwd)"
schema="$root/internal/benchschema"
export PATH="$PATH:$(go env GOPATH)/bin"

for t in protoc protoc-gen-go protoc-gen-go-vtproto flatc capnp capnpc-go; do
  command -v "$t" >/dev/null || { echo "gen-baselines: $t not found on PATH (see the header of $0)" >&2; exit 2; }
done

capnp_mod="$(cd "$root" && go list -m -f '{{.Dir}}' capnproto.org/go/capnp/v3)"
if [ -z "$capnp_mod" ] || [ ! -f "$capnp_mod/std/go.capnp" ]; then
  echo "gen-baselines: cannot find go.capnp in the capnproto.org/go/capnp/v3 module (go mod download?)" >&2
  exit 2
fi

pbpkg="github.com/cornflakes-go/cornflakes/internal/baselines/pb"

# protobuf-go + vtprotobuf. bench.proto's go_package names the Cornflakes
# package; the M option redirects the baselines to internal/baselines/pb.
mkdir -p "$out/internal/baselines/pb"
protoc --proto_path="$schema" \
  --go_out="$out/internal/baselines/pb" --go_opt=paths=source_relative \
  --go_opt="Mbench.proto=$pbpkg;pb" \
  --go-vtproto_out="$out/internal/baselines/pb" --go-vtproto_opt=paths=source_relative \
  --go-vtproto_opt="Mbench.proto=$pbpkg;pb" \
  --go-vtproto_opt=features=marshal+unmarshal+unmarshal_unsafe+size+equal \
  "$schema/bench.proto"

# FlatBuffers: flatc writes one file per table under <namespace>/ = fb/.
rm -rf "$out/internal/baselines/fb"
mkdir -p "$out/internal/baselines"
flatc --go --go-namespace fb -o "$out/internal/baselines" "$schema/bench.fbs"

# Cap'n Proto: the go plugin writes bench.capnp.go next to the output dir.
mkdir -p "$out/internal/baselines/capnpb"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cp "$schema/bench.capnp" "$tmp/"
(cd "$tmp" && capnp compile -I "$capnp_mod/std" -ogo bench.capnp)
mv "$tmp/bench.capnp.go" "$out/internal/baselines/capnpb/bench.capnp.go"

gofmt -w "$out/internal/baselines/pb" "$out/internal/baselines/fb" "$out/internal/baselines/capnpb"
echo "gen-baselines: wrote $out/internal/baselines/{pb,fb,capnpb}" >&2

#!/usr/bin/env bash
# gen-kv.sh regenerates the key-value store's baseline serializer code from
# kv/kvpb/kv.{proto,fbs,capnp} (see docs/KV.md). The Cornflakes code
# (kv/kvpb/kv.cornflakes.go) comes from our generator through
# internal/gen/generated.txt:
#   go run ./cmd/cornflakes gen --manifest internal/gen/generated.txt
#
# Tools: the same as scripts/gen-baselines.sh (protoc, protoc-gen-go,
# protoc-gen-go-vtproto, flatc, capnp, capnpc-go).
#
# Output (committed):
#   kv/internal/kvpbgo/kv.pb.go, kv_vtproto.pb.go   protobuf-go + vtprotobuf
#   kv/internal/kvfb/*.go                           flatc --go
#   kv/internal/kvcapnp/kv.capnp.go                 capnp compile -ogo
#
# Usage: scripts/gen-kv.sh [outdir]   (default: the repository root)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$root}"
out="$(mkdir -p "$out" && cd "$out" && pwd)"
schema="$root/kv/kvpb"
export PATH="$PATH:$(go env GOPATH)/bin"

for t in protoc protoc-gen-go protoc-gen-go-vtproto flatc capnp capnpc-go; do
  command -v "$t" >/dev/null || { echo "gen-kv: $t not found on PATH (see scripts/gen-baselines.sh)" >&2; exit 2; }
done
capnp_mod="$(cd "$root" && go list -m -f '{{.Dir}}' capnproto.org/go/capnp/v3)"

pbpkg="github.com/cornflakes-go/cornflakes/kv/internal/kvpbgo"
mkdir -p "$out/kv/internal/kvpbgo"
protoc --proto_path="$schema" \
  --go_out="$out/kv/internal/kvpbgo" --go_opt=paths=source_relative \
  --go_opt="Mkv.proto=$pbpkg;kvpbgo" \
  --go-vtproto_out="$out/kv/internal/kvpbgo" --go-vtproto_opt=paths=source_relative \
  --go-vtproto_opt="Mkv.proto=$pbpkg;kvpbgo" \
  --go-vtproto_opt=features=marshal+unmarshal+unmarshal_unsafe+size \
  "$schema/kv.proto"

rm -rf "$out/kv/internal/kvfb"
mkdir -p "$out/kv/internal"
flatc --go --go-namespace kvfb -o "$out/kv/internal" "$schema/kv.fbs"

mkdir -p "$out/kv/internal/kvcapnp"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cp "$schema/kv.capnp" "$tmp/"
(cd "$tmp" && capnp compile -I "$capnp_mod/std" -ogo kv.capnp)
mv "$tmp/kv.capnp.go" "$out/kv/internal/kvcapnp/kv.capnp.go"

gofmt -w "$out/kv/internal/kvpbgo" "$out/kv/internal/kvfb" "$out/kv/internal/kvcapnp"
echo "gen-kv: wrote $out/kv/internal/{kvpbgo,kvfb,kvcapnp}" >&2

#!/usr/bin/env bash
# gen.sh regenerates the baseline serializers of naosbench from
# internal/schema/naosbench.proto and internal/nbmsgp/types.go.
#
# Tools: protoc (apt-get install protobuf-compiler) and
#   go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
#   go install github.com/planetscale/vtprotobuf/cmd/protoc-gen-go-vtproto@v0.6.1-0.20240319094008-0393e58bdf10
#   go install github.com/tinylib/msgp@v1.6.5
# The Cornflakes messages (internal/nbcf) come from the repository's
# generator, through internal/gen/generated.txt:
#   go run ./cmd/cornflakes gen --manifest internal/gen/generated.txt
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export PATH="$PATH:$(go env GOPATH)/bin"
pbpkg="github.com/cornflakes-go/cornflakes/naos/naosbench/internal/nbpb"
protoc --proto_path="$here/internal/schema" \
  --go_out="$here/internal/nbpb" --go_opt=paths=source_relative \
  --go_opt="Mnaosbench.proto=$pbpkg;nbpb" \
  --go-vtproto_out="$here/internal/nbpb" --go-vtproto_opt=paths=source_relative \
  --go-vtproto_opt="Mnaosbench.proto=$pbpkg;nbpb" \
  --go-vtproto_opt=features=marshal+unmarshal+size \
  "$here/internal/schema/naosbench.proto"
(cd "$here/internal/nbmsgp" && msgp -file types.go -o types_gen.go -tests=false)
gofmt -w "$here/internal/nbpb" "$here/internal/nbmsgp"

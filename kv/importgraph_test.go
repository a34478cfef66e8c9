package kv

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestImportGraph pins kv's import graph (issue 24 point 7): a program
// importing kv builds none of the baseline serializers (they live in
// kv/kvbench and register with RegisterCodec). pending lists what kv still
// pulls in through its load-generator client (cornflakes/bench, gonum) and
// its AF_XDP datapath (ebpf); the test fails when one of them disappears,
// so that it is removed from pending and pinned from then on.
func TestImportGraph(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: not running go list")
	}
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	banned := []string{"capnproto.org", "github.com/google/flatbuffers", "google.golang.org/grpc",
		"github.com/planetscale/vtprotobuf", "github.com/tinylib/msgp", "google.golang.org/protobuf",
		"kv/kvbench", "kv/internal/kvpbgo", "kv/internal/kvfb", "kv/internal/kvcapnp"}
	pending := map[string]bool{"gonum.org/v1/plot": false, "github.com/cilium/ebpf": false,
		"github.com/cornflakes-go/cornflakes/bench": false}
	for _, d := range deps {
		for _, b := range banned {
			if strings.Contains(d, b) {
				t.Errorf("kv imports %s (%s belongs to kv/kvbench)", d, b)
			}
		}
		for p := range pending {
			if d == p || strings.HasPrefix(d, p+"/") {
				pending[p] = true
			}
		}
	}
	for p, seen := range pending {
		if !seen {
			t.Errorf("%s is no longer in kv's import graph: move it from pending to banned", p)
		}
	}
}

// TestUnlinkedCodec: without kv/kvbench a baseline codec is a clear error
// naming the missing import, for a server and a client alike.
func TestUnlinkedCodec(t *testing.T) {
	if n := len(AllCodecs()); n != int(numCodecs)-1 {
		t.Fatalf("AllCodecs = %v: the test binary links kv/kvbench (baselines_test.go), every codec should be there", AllCodecs())
	}
	f := registered(CodecFlatBuffers)
	codecReg.Lock()
	codecReg.f[CodecFlatBuffers] = nil
	codecReg.Unlock()
	defer func() {
		codecReg.Lock()
		codecReg.f[CodecFlatBuffers] = f
		codecReg.Unlock()
	}()
	for _, c := range AllCodecs() {
		if c == CodecFlatBuffers {
			t.Errorf("AllCodecs lists an unregistered codec: %v", AllCodecs())
		}
	}
	_, err := newCodec(CodecFlatBuffers)
	if !errors.Is(err, ErrUnknownSerializer) || !strings.Contains(err.Error(), "kv/kvbench") {
		t.Fatalf("newCodec(flatbuffers) unregistered: %v, want ErrUnknownSerializer naming kv/kvbench", err)
	}
	if _, err := NewServer(ServerConfig{Datapath: DatapathMemnet, PoolBytes: 1 << 20, Codecs: []Codec{CodecFlatBuffers}}); !errors.Is(err, ErrUnknownSerializer) {
		t.Fatalf("NewServer with an unregistered codec: %v, want ErrUnknownSerializer", err)
	}
}

// TestRegisterCodecMisuse: registering a Cornflakes codec, an invalid one
// or a codec twice panics.
func TestRegisterCodecMisuse(t *testing.T) {
	mk := func() WireCodec { return nil }
	for _, c := range []Codec{CodecCFHybrid, codecInvalid, numCodecs, CodecProtobuf} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("RegisterCodec(%s) did not panic", c)
				}
			}()
			RegisterCodec(c, mk)
		}()
	}
}

package kv

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestImportGraph pins kv's import graph (issue 24 point 7): a program
// importing kv (store, server, typed and load clients) builds none of the
// baseline serializers (kv/kvbench registers them with RegisterCodec),
// neither the load generator (cornflakes/bench: RunBench lives in
// kv/kvbench) with its histograms, plots and progress bars, nor the
// AF_XDP datapath with its eBPF loader and network namespaces (kvbench
// registers the automatic topology, RegisterXDP). The one benchmark-side
// package left is workload, the Op/Status/Request vocabulary of the store
// and its codecs; the test pins that it stays standard-library only.
func TestImportGraph(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: not running go list")
	}
	deps := goListDeps(t, ".")
	const mod = "github.com/cornflakes-go/cornflakes/"
	banned := []string{"capnproto.org", "github.com/google/flatbuffers", "google.golang.org/grpc",
		"github.com/planetscale/vtprotobuf", "github.com/tinylib/msgp", "google.golang.org/protobuf",
		"gonum.org/", "github.com/cilium/ebpf", "github.com/HdrHistogram/", "github.com/schollz/progressbar",
		mod + "bench", mod + "datapath/xdp", mod + "internal/netns", mod + "internal/report",
		mod + "kv/kvbench", mod + "kv/internal/kvpbgo", mod + "kv/internal/kvfb", mod + "kv/internal/kvcapnp"}
	for _, d := range deps {
		for _, b := range banned {
			if d == b || strings.HasPrefix(d, strings.TrimSuffix(b, "/")+"/") || (strings.HasSuffix(b, "/") && strings.HasPrefix(d, b)) {
				t.Errorf("kv imports %s (%s belongs to kv/kvbench or the load generator)", d, b)
			}
		}
	}
	for _, d := range goListDeps(t, "../workload") {
		if strings.Contains(strings.SplitN(d, "/", 2)[0], ".") && d != mod+"workload" {
			t.Errorf("workload imports %s: kv links workload, which must stay standard-library only", d)
		}
	}
}

// goListDeps lists the packages pkg builds (go list -deps, without tests).
func goListDeps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	return strings.Fields(string(out))
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

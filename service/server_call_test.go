package service

import (
	"testing"
	"unsafe"

	"github.com/cornflakes-go/cornflakes/rpc"
)

// TestServerCallOneObject: a serverCall's arena, context and first
// DirectKeeps are its own fields (one object), and keepFor beyond keep0
// grows keep keeping every method's kept messages.
func TestServerCallOneObject(t *testing.T) {
	nx, err := rpc.NewNexus(rpc.NexusConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nx.Close() })
	s, err := NewServer(nx)
	if err != nil {
		t.Fatal(err)
	}
	sc := s.calls.Get().(*serverCall)
	if sc.a != &sc.arena || sc.ctx != &sc.ctx0 || unsafe.SliceData(sc.keep) != &sc.keep0[0] {
		t.Fatal("a, ctx or keep is not the serverCall's own")
	}
	if sc.a.Threshold <= 0 || sc.a.Limit <= 0 {
		t.Fatalf("arena not set up as by wire.NewArena: threshold %d, limit %d", sc.a.Threshold, sc.a.Limit)
	}
	var tag [12]byte
	for h := range tag {
		k := sc.keepFor(&method{handle: uint32(h)})
		k.Req = unsafe.Pointer(&tag[h])
	}
	if len(sc.keep) != len(tag) {
		t.Fatalf("keep has %d entries, want %d", len(sc.keep), len(tag))
	}
	for h := range tag {
		if sc.keep[h].Req != unsafe.Pointer(&tag[h]) {
			t.Fatalf("handle %d's DirectKeep lost when keep grew", h)
		}
	}
}

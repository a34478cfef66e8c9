package shm_test

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"testing"
	"time"
	"unsafe"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/shm"
	"github.com/cornflakes-go/cornflakes/mem"
)

// TestRecvAlignsLargeSegment: a copying Recv places a packet's large
// segment at an address congruent to its source modulo a cache line
// (rxalign.go: memmove's slow misaligned case), and the gathered bytes are
// those sent, for payloads that do and do not get the alignment.
func TestRecvAlignsLargeSegment(t *testing.T) {
	space, err := mem.NewSpace(mem.SpaceConfig{Size: 16 << 20, Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	defer space.Close()
	values, err := mem.NewPool(mem.PoolConfig{Name: "values", Space: space})
	if err != nil {
		t.Fatal(err)
	}
	defer values.Close()
	opts := shm.Options{Namespace: fmt.Sprint("rxalign-", os.Getpid()), Spaces: []*mem.Space{space}}
	server, err := datapath.Open("shm", datapath.Config{Local: netip.MustParseAddrPort("127.0.0.1:7100"), Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	client, err := datapath.Open("shm", datapath.Config{Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	head := []byte("0123456789abcdef") // 16 bytes: the misaligning header
	for _, n := range []int{100, 1024, 2048, 4096, 8000} {
		payload := make([]byte, n)
		for i := range payload {
			payload[i] = byte(i*7 + n)
		}
		v, err := values.AllocCopy(payload)
		if err != nil {
			t.Fatal(err)
		}
		if err := client.SendSegments(server.LocalAddr(), head, []mem.Buf{v}); err != nil {
			t.Fatal(err)
		}
		src := uintptr(unsafe.Pointer(&v.Bytes()[0]))
		_ = v.Release()
		if err := client.Flush(); err != nil {
			t.Fatal(err)
		}
		pkts := make([]datapath.Packet, 1)
		deadline := time.Now().Add(10 * time.Second)
		for k := 0; k == 0; k, _ = server.Recv(pkts) {
			if time.Now().After(deadline) {
				t.Fatalf("n=%d: nothing received in 10 s", n)
			}
			_ = server.Wait(10e6)
		}
		got := pkts[0].Buf.Bytes()
		if !bytes.Equal(got[:16], head) || !bytes.Equal(got[16:], payload) {
			t.Fatalf("n=%d: received bytes differ from those sent", n)
		}
		dst := uintptr(unsafe.Pointer(&got[16]))
		if n >= 1024 && (src-dst)%64 != 0 { // every size here leaves its class the slack
			t.Errorf("n=%d: payload at %#x, source at %#x: not congruent mod 64", n, dst, src)
		}
		_ = pkts[0].Buf.Release()
	}
}

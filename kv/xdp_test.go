package kv

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/bench"
	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/xdp"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/workload"
)

// TestXDP runs the key-value store over AF_XDP: a server and a client on
// their own topology (two namespaces and a bridge), the request script with
// two serializers, a checked load run, the store's values living in the
// topology's UMEM, and the namespaces gone afterwards. It skips (with the
// reason) when not root or the kernel has no AF_XDP.
func TestXDP(t *testing.T) {
	if err := xdp.Available(); err != nil {
		t.Skipf("AF_XDP unavailable: %v", err)
	}
	const prefix = "cfxkvtest"
	topo, err := xdp.NewTopology(xdp.TopologyConfig{Prefix: prefix, SpaceSize: 256 << 20})
	if err != nil {
		t.Skipf("AF_XDP topology unavailable: %v", err)
	}
	defer func() {
		if err := topo.Close(); err != nil {
			t.Errorf("topology close: %v", err)
		}
		if out, err := exec.Command("ip", "netns", "list").Output(); err == nil && strings.Contains(string(out), prefix) {
			t.Errorf("namespaces left behind:\n%s", out)
		}
	}()
	srv, err := NewServer(ServerConfig{Datapath: DatapathXDP, XDP: xdpTopo{topo}, PoolBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := srv.Close(); err != nil {
			t.Errorf("server close: %v", err)
		}
	}()
	cl, err := NewClient(ClientConfig{Server: srv.Addr(), Datapath: DatapathXDP, XDP: xdpTopo{topo}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cl.Close(); err != nil {
			t.Error(err)
		}
	}()
	for _, c := range []Codec{CodecCFHybrid, CodecProtobuf} {
		cn, err := cl.Dial(c)
		if err != nil {
			t.Fatal(err)
		}
		runScript(t, cn)
		if err := cn.Close(); err != nil {
			t.Fatal(err)
		}
		if err := srv.Clear(); err != nil {
			t.Fatal(err)
		}
	}
	w, err := workload.Parse("cdn:objects=20,maxobject=60000")
	if err != nil {
		t.Fatal(err)
	}
	pc, err := cl.Dial(CodecCFHybrid)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Preload(context.Background(), w, pc, 16); err != nil {
		t.Fatal(err)
	}
	_ = pc.Close()
	// The preloaded values are in the UMEM: the datapath can send them
	// without a copy.
	var inUMEM, total int
	for i := range srv.store.shards {
		sh := &srv.store.shards[i]
		sh.mu.Lock()
		for _, e := range sh.m {
			for n := e.head; n != nil; n = n.next {
				total++
				if _, ok := topo.Space().Offset(n.buf.Bytes()); ok {
					inUMEM++
				}
			}
		}
		sh.mu.Unlock()
	}
	if total == 0 || inUMEM != total {
		t.Fatalf("%d of %d stored values in the UMEM", inUMEM, total)
	}
	res, err := bench.Run(context.Background(), bench.Config{
		Workload: w, Target: cl.Target(CodecCFHybrid), Rate: 1000,
		Duration: 300 * time.Millisecond, Check: true, Seed: 5, Drain: 3 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Received == 0 || res.Mismatches != 0 || res.Errors != 0 {
		t.Fatalf("%d received, %d mismatches (%s), %d errors", res.Received, res.Mismatches, res.FirstMismatch, res.Errors)
	}
}

// xdpTopo is kvbench.XDP for the package's own tests (kvbench imports kv).
type xdpTopo struct{ t *xdp.Topology }

func (x xdpTopo) Space() *mem.Space { return x.t.Space() }

func (x xdpTopo) OpenEndpoint(c datapath.Config) (datapath.Endpoint, error) {
	ep, err := x.t.Open(c)
	if err != nil {
		return nil, err
	}
	return ep, nil
}

package echo

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/xdp"
	"github.com/cornflakes-go/cornflakes/internal/netns"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/microbench"
)

// TestEcho runs every approach on every default shape over memnet, udp and shm
// with byte-for-byte verification of every response. RunOne fails when a
// response differs or a pool still has items in use at the end.
func TestEcho(t *testing.T) {
	dps := []string{"memnet", "udp", "shm"}
	shapes := DefaultShapes()
	if testing.Short() {
		shapes = []string{"2x2048", "tree5"}
	}
	for _, dp := range dps {
		for _, a := range Approaches() {
			for _, s := range shapes {
				t.Run(dp+"/"+a+"/"+s, func(t *testing.T) {
					cfg := Config{Datapath: dp, Clients: 4, Duration: 40 * time.Millisecond, Warmup: 10 * time.Millisecond, Verify: true, MinResponses: 20}
					r, err := RunOne(cfg, a, s)
					if err != nil {
						t.Fatal(err)
					}
					if r.Requests == 0 || r.Bad != 0 || r.ServerErrs != 0 {
						t.Fatalf("requests %d, bad %d, server errors %d", r.Requests, r.Bad, r.ServerErrs)
					}
					if r.ThroughputRPS <= 0 || r.P50us <= 0 || r.P99us < r.P50us {
						t.Fatalf("implausible result %+v", r)
					}
					// Every response counted was received by a client poll
					// of the window; the server received requests in it.
					if r.Client.Packets < r.Requests || r.Client.Batch() < 1 || r.Client.Polls < r.Client.Empty ||
						r.Server.Packets == 0 || r.Server.Batch() < 1 || r.ClientNsPerReq <= 0 {
						t.Fatalf("implausible poll statistics: server %+v, client %+v, client %v ns/req, %d requests",
							r.Server, r.Client, r.ClientNsPerReq, r.Requests)
					}
					st := r.ServerTx
					switch a {
					case "raw", "cornflakes-zerocopy":
						if st.ZeroCopyEntries == 0 {
							t.Fatalf("%s sent no zero-copy entries: %+v", a, st)
						}
					case "onecopy", "twocopy", "cornflakes-copy", "protobuf", "flatbuffers", "capnp":
						if st.ZeroCopyEntries != 0 {
							t.Fatalf("%s sent zero-copy entries: %+v", a, st)
						}
					case "cornflakes-hybrid":
						// memnet's threshold is 512 B, shm's 256 B: 128-byte tree
						// leaves are copied, the 512-4096-byte values are not.
						// On udp (16 KB) every value is copied.
						if wantZC := (dp == "memnet" || dp == "shm") && s != "tree5"; wantZC != (st.ZeroCopyEntries > 0) {
							t.Fatalf("hybrid on %s %s: %+v", dp, s, st)
						}
					}
				})
			}
		}
	}
}

func TestOpenLoop(t *testing.T) {
	r, err := RunOne(Config{Datapath: "udp", Rate: 2000, Duration: 100 * time.Millisecond, Warmup: 20 * time.Millisecond, Verify: true, MinResponses: 20}, "raw", "1x1024")
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests == 0 || r.Bad != 0 {
		t.Fatalf("%+v", r)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []Config{
		{Approaches: []string{"nope"}},
		{Shapes: []string{"3x"}},
		{Shapes: []string{"2x40000"}},
		{Datapath: "tcp"},
		{Clients: -1},
		{Rate: -5},
	} {
		if _, err := Run(c); err == nil {
			t.Errorf("Run(%+v) succeeded", c)
		}
	}
	if _, err := Run(Config{Approaches: []string{"nope"}}); !errors.Is(err, ErrUnknownApproach) {
		t.Errorf("unknown approach: %v", err)
	}
	if _, err := RunOne(Config{}, "nope", "1x1024"); !errors.Is(err, ErrUnknownApproach) || !strings.Contains(err.Error(), "known: raw") {
		t.Errorf("RunOne with an unknown approach: %v", err)
	}
}

// TestServerRejectsGarbage feeds malformed requests to every approach's
// handler: each is an error (counted by the server loop), never a panic
// or a reply.
func TestServerRejectsGarbage(t *testing.T) {
	s, err := openSide("memnet", "garbage", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.close(); err != nil {
			t.Error(err)
		}
	}()
	inputs := [][]byte{
		{},
		[]byte("short"),
		append(hdrFor(0), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 2, 3),
		append(hdrFor(0), make([]byte, 64)...),
	}
	for _, a := range Approaches() {
		if kindOf(a) != apLib && kindOf(a) != apCornflakes {
			continue
		}
		for _, shape := range []string{"1x1024", "8x512", "tree5"} {
			sh, _ := microbench.ShapeByName(shape)
			srv, err := newServer(s, a, sh)
			if err != nil {
				t.Fatal(err)
			}
			for i, in := range inputs {
				b, err := s.pool.AllocCopy(in)
				if err != nil {
					t.Fatal(err)
				}
				// An all-zero body is a valid empty message for some
				// formats; the others must be rejected.
				if err := srv.handle(&datapath.Packet{Buf: b, From: s.ep.LocalAddr()}); err == nil && i < 3 {
					t.Errorf("%s %s input %d: accepted", a, shape, i)
				}
				b.Release()
				if srv.cf != nil {
					srv.cf.reset()
				}
			}
			if err := srv.close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.ep.Flush(); err != nil {
		t.Fatal(err)
	}
}

func hdrFor(slot uint32) []byte {
	h := make([]byte, hdrLen)
	h[0] = byte(slot)
	h[12], h[13], h[14], h[15] = 0x43, 0x45, 0x46, 0x43
	return h
}

// FuzzDecode feeds arbitrary bytes to every library decoder and to the
// Cornflakes decoders for every message kind: errors are fine, panics and
// leaks are not.
func FuzzDecode(f *testing.F) {
	for _, a := range []string{"protobuf", "flatbuffers", "capnp", "cornflakes-hybrid"} {
		for _, s := range []string{"2x2048", "tree5"} {
			sh, _ := microbench.ShapeByName(s)
			vals := sh.Values()[0]
			if a == "cornflakes-hybrid" {
				b, err := cfRequest(a, sh, vals)
				if err != nil {
					f.Fatal(err)
				}
				f.Add(b[:min(len(b), 300)])
				continue
			}
			c, _ := newCodec(a, sh.Kind)
			parts, _ := c.encode(vals)
			b := append(append([]byte{}, parts[0]...), parts[1]...)
			f.Add(b[:min(len(b), 300)])
		}
	}
	pool, err := mem.NewPool(mem.PoolConfig{Name: "fuzz"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, k := range []Kind{KindSingle, KindList, KindTree} {
			for _, lib := range []string{"protobuf", "flatbuffers", "capnp"} {
				c, _ := newCodec(lib, k)
				c.decode(in)
			}
			srv, _ := newCFServer("cornflakes-hybrid", microbench.Shape{Kind: k}, nil)
			b, err := pool.AllocCopy(append(hdrFor(0), in...))
			if err != nil {
				t.Fatal(err)
			}
			// A nil endpoint: decoding must fail before any send, or the
			// message is well-formed and the send panics on purpose-less
			// nil; so only decode here.
			srv.decodeOnly(b.Slice(hdrLen, len(in)))
			// The arena borrows b: reset it first.
			if err := srv.close(); err != nil {
				t.Fatal(err)
			}
			b.Release()
		}
		if pool.InUse() != 0 {
			t.Fatalf("%d items leaked", pool.InUse())
		}
	})
}

// TestEchoXDP runs a few approaches over AF_XDP (each run in its own
// namespaces joined by a bridge) with byte-for-byte verification: values
// allocated on the UMEM go out zero-copy, pools return to zero, and no
// namespace is left behind. It needs root and AF_XDP.
func TestEchoXDP(t *testing.T) {
	if err := xdp.Available(); err != nil {
		t.Skipf("xdp datapath unavailable: %v", err)
	}
	for _, tc := range []struct{ approach, shape string }{
		{"raw", "1x1024"},
		{"cornflakes-hybrid", "2x2048"}, // 4 KB requests: multi-buffer RX, copied into a UMEM buffer
		{"cornflakes-copy", "tree5"},
		{"protobuf", "8x512"},
	} {
		t.Run(tc.approach+"/"+tc.shape, func(t *testing.T) {
			cfg := Config{Datapath: "xdp", Clients: 4, Duration: 40 * time.Millisecond, Warmup: 10 * time.Millisecond, Verify: true, MinResponses: 20}
			r, err := RunOne(cfg, tc.approach, tc.shape)
			if err != nil {
				t.Fatal(err)
			}
			if r.Requests == 0 || r.Bad != 0 || r.ServerErrs != 0 || r.Datapath != "xdp" || (r.XDPMode != "copy" && r.XDPMode != "zerocopy") {
				t.Fatalf("requests %d, bad %d, server errors %d, datapath %q, xdp mode %q", r.Requests, r.Bad, r.ServerErrs, r.Datapath, r.XDPMode)
			}
			st := r.ServerTx
			switch tc.approach {
			case "raw", "cornflakes-hybrid":
				if st.ZeroCopyEntries == 0 {
					t.Fatalf("%s sent no zero-copy entries on xdp: %+v", tc.approach, st)
				}
			default:
				if st.ZeroCopyEntries != 0 {
					t.Fatalf("%s sent zero-copy entries: %+v", tc.approach, st)
				}
			}
			if left, err := netns.List(fmt.Sprintf("%s-%d", xdp.AutoPrefix, os.Getpid())); err != nil || len(left) != 0 {
				t.Fatalf("namespaces left behind: %v (%v)", left, err)
			}
		})
	}
}

// TestRunXDPUnavailable: without root the xdp datapath fails up front with
// the datapath's explanation.
func TestRunXDPUnavailable(t *testing.T) {
	if xdp.Available() == nil {
		t.Skip("xdp is available here (running as root)")
	}
	_, err := Run(Config{Datapath: "xdp", Approaches: []string{"raw"}, Shapes: []string{"1x1024"}, Duration: time.Millisecond})
	if !errors.Is(err, xdp.ErrUnavailable) || !strings.Contains(err.Error(), "root") {
		t.Fatalf("Run on xdp without root: %v", err)
	}
}

// Compare relates every result to the raw echo of its datapath and shape
// (the median of raw's repetitions); without a raw result it sets nothing.
func TestCompare(t *testing.T) {
	res := []Result{
		{Approach: "raw", Datapath: "udp", Shape: "2x2048", ThroughputRPS: 100, ServerNsPerReq: 1000},
		{Approach: "raw", Datapath: "udp", Shape: "2x2048", ThroughputRPS: 300, ServerNsPerReq: 3000},
		{Approach: "raw", Datapath: "udp", Shape: "2x2048", ThroughputRPS: 200, ServerNsPerReq: 2000},
		{Approach: "cornflakes-hybrid", Datapath: "udp", Shape: "2x2048", ThroughputRPS: 150, ServerNsPerReq: 4000},
		{Approach: "cornflakes-hybrid", Datapath: "udp", Shape: "1x1024", ThroughputRPS: 150, ServerNsPerReq: 4000},
	}
	Compare(res)
	if r := res[3]; r.VsRawThroughput != 0.75 || r.VsRawServerCPU != 0.5 {
		t.Errorf("cornflakes 2x2048 against raw: throughput %v, CPU %v; want 0.75, 0.5", r.VsRawThroughput, r.VsRawServerCPU)
	}
	if r := res[2]; r.VsRawThroughput != 1 || r.VsRawServerCPU != 1 {
		t.Errorf("raw's median repetition: %v, %v; want 1, 1", r.VsRawThroughput, r.VsRawServerCPU)
	}
	if r := res[4]; r.VsRawThroughput != 0 || r.VsRawServerCPU != 0 {
		t.Errorf("a shape without raw: %v, %v; want none", r.VsRawThroughput, r.VsRawServerCPU)
	}
}

func TestPollStats(t *testing.T) {
	var p PollStats
	if p.Batch() != 0 || p.EmptyFraction() != 0 {
		t.Fatalf("zero PollStats: batch %v, empty %v", p.Batch(), p.EmptyFraction())
	}
	for _, n := range []int{0, 0, 3, 0, 5} {
		p.add(n)
	}
	if p != (PollStats{Polls: 5, Empty: 3, Packets: 8}) || p.Batch() != 4 || p.EmptyFraction() != 0.6 {
		t.Fatalf("got %+v, batch %v, empty %v", p, p.Batch(), p.EmptyFraction())
	}
	if s := p.String(); s != "4.0 pkts/batch, 60% of 5 polls empty" {
		t.Fatalf("String() = %q", s)
	}
}

package echo

import (
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/internal/cpuclock"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/wire"
)

// nullEP is a datapath.Endpoint that does the user-space part of a send
// (TX head buffer, serialize, clone and release every entry) but no I/O, to
// measure what each approach costs on top of the network stack.
type nullEP struct {
	pool *mem.Pool
	refs []mem.Buf
}

func (n *nullEP) LocalAddr() netip.AddrPort { return netip.AddrPort{} }
func (n *nullEP) MaxPayload() int           { return 65507 }
func (n *nullEP) MaxSegments() int          { return 64 }
func (n *nullEP) head(p []byte, extra int) ([]byte, error) {
	b, err := n.pool.Alloc(len(p) + extra)
	if err != nil {
		return nil, err
	}
	copy(b.Bytes(), p)
	n.refs = append(n.refs, b)
	return b.Bytes(), nil
}
func (n *nullEP) Send(_ netip.AddrPort, p []byte) error { _, err := n.head(p, 0); return err }
func (n *nullEP) SendSegments(_ netip.AddrPort, h []byte, segs []mem.Buf) error {
	if _, err := n.head(h, 0); err != nil {
		return err
	}
	for _, s := range segs {
		n.refs = append(n.refs, s.Clone())
	}
	return nil
}
func (n *nullEP) ZeroCopyEntry(b mem.Buf) error { n.refs = append(n.refs, b.Clone()); return nil }
func (n *nullEP) SendObject(_ netip.AddrPort, h []byte, obj wire.Object) error {
	sz := obj.Sizes()
	hb, err := n.head(h, sz.Head())
	if err != nil {
		return err
	}
	return obj.Serialize(hb[len(h):], n)
}
func (n *nullEP) Flush() error {
	for i, r := range n.refs {
		r.Release()
		n.refs[i] = mem.Buf{}
	}
	n.refs = n.refs[:0]
	return nil
}
func (n *nullEP) Recv([]datapath.Packet) (int, error) { return 0, nil }
func (n *nullEP) Wait(time.Duration) error            { return nil }
func (n *nullEP) Stats() datapath.Stats               { return datapath.Stats{} }
func (n *nullEP) Close() error                        { return n.Flush() }

// BenchmarkHandleNoIO measures each approach's server work per 2x2048
// request without the network: decode, build, serialize, clone/release.
func BenchmarkHandleNoIO(b *testing.B) {
	for _, a := range Approaches() {
		b.Run(a, func(b *testing.B) {
			shape, _ := shapeByName("2x2048")
			pool, err := mem.NewPool(mem.PoolConfig{Name: "noio"})
			if err != nil {
				b.Fatal(err)
			}
			ep := &nullEP{pool: pool}
			s := &side{ep: ep, pool: pool, app: pool}
			srv, err := newServer(s, a, shape)
			if err != nil {
				b.Fatal(err)
			}
			reqs, err := requestPayloads(a, shape, pool)
			if err != nil {
				b.Fatal(err)
			}
			pkt, err := pool.AllocCopy(append(hdrFor(0), reqs[0].Bytes()...))
			if err != nil {
				b.Fatal(err)
			}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuclock.Thread()
			for i := 0; i < b.N; i++ {
				if err := srv.handle(&datapath.Packet{Buf: pkt}); err != nil {
					b.Fatal(err)
				}
				if i%16 == 15 {
					ep.Flush()
					if srv.cf != nil {
						srv.cf.reset()
					}
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuclock.Thread()-cpu0)/float64(b.N), "cpu-ns/op")
			ep.Flush()
			srv.close()
			pkt.Release()
			for _, r := range reqs {
				r.Release()
			}
			if pool.InUse() != 0 {
				b.Fatalf("%d items leaked", pool.InUse())
			}
			pool.Close()
		})
	}
}

package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/workload"
)

// A test-only key-value protocol over real UDP sockets on loopback, to run
// the generator against a server in another goroutine through the kernel.
//
// request:  id u64 | op u8 | index u32 | nkeys u16 | nvals u16 | (len u16, key)* | (len u32, value)*
// response: id u64 | status u8 | nvals u16 | (len u32, value)*

var errShort = errors.New("short datagram")

func encodeRequest(b []byte, id uint64, r *workload.Request) []byte {
	b = binary.LittleEndian.AppendUint64(b[:0], id)
	b = append(b, byte(r.Op))
	b = binary.LittleEndian.AppendUint32(b, uint32(r.Index))
	b = binary.LittleEndian.AppendUint16(b, uint16(len(r.Keys)))
	b = binary.LittleEndian.AppendUint16(b, uint16(len(r.Values)))
	for _, k := range r.Keys {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(k)))
		b = append(b, k...)
	}
	for _, v := range r.Values {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(v)))
		b = append(b, v...)
	}
	return b
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) n(k int) []byte {
	if r.err != nil || len(r.b) < k {
		r.err = errShort
		return nil
	}
	out := r.b[:k]
	r.b = r.b[k:]
	return out
}
func (r *reader) u16() int {
	if b := r.n(2); b != nil {
		return int(binary.LittleEndian.Uint16(b))
	}
	return 0
}
func (r *reader) u32() int {
	if b := r.n(4); b != nil {
		return int(binary.LittleEndian.Uint32(b))
	}
	return 0
}

func decodeRequest(b []byte, req *workload.Request) (uint64, error) {
	r := reader{b: b}
	idb := r.n(8)
	op := r.n(1)
	req.Index = r.u32()
	nk, nv := r.u16(), r.u16()
	if r.err != nil {
		return 0, r.err
	}
	req.Op = workload.Op(op[0])
	req.Keys, req.Values = req.Keys[:0], req.Values[:0]
	for range nk {
		req.Keys = append(req.Keys, r.n(r.u16()))
	}
	for range nv {
		req.Values = append(req.Values, r.n(r.u32()))
	}
	return binary.LittleEndian.Uint64(idb), r.err
}

func encodeResponse(b []byte, id uint64, resp *workload.Response) []byte {
	b = binary.LittleEndian.AppendUint64(b[:0], id)
	b = append(b, byte(resp.Status))
	b = binary.LittleEndian.AppendUint16(b, uint16(len(resp.Values)))
	for _, v := range resp.Values {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(v)))
		b = append(b, v...)
	}
	return b
}

// udpServer answers the protocol from a MemStore until closed.
type udpServer struct {
	conn  *net.UDPConn
	store *workload.MemStore
	done  chan struct{}
}

func startUDPServer(t *testing.T) *udpServer {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Skipf("no loopback UDP: %v", err)
	}
	_ = c.SetReadBuffer(4 << 20)
	_ = c.SetWriteBuffer(4 << 20)
	s := &udpServer{conn: c, store: workload.NewMemStore(), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		buf := make([]byte, 65536)
		var out []byte
		var req workload.Request
		var resp workload.Response
		for {
			n, from, err := c.ReadFromUDP(buf)
			if err != nil {
				return // closed
			}
			id, err := decodeRequest(buf[:n], &req)
			if err != nil {
				continue
			}
			s.store.Apply(&req, &resp)
			out = encodeResponse(out, id, &resp)
			_, _ = c.WriteToUDP(out, from)
		}
	}()
	t.Cleanup(func() { c.Close(); <-s.done })
	return s
}

// udpConn is a Conn over a connected UDP socket; a reader goroutine decodes
// responses into a channel that Poll drains without blocking.
type udpConn struct {
	c    *net.UDPConn
	out  []byte
	ch   chan udpResp
	wg   sync.WaitGroup
	resp workload.Response
}

type udpResp struct {
	id     uint64
	status workload.Status
	values [][]byte
}

func (s *udpServer) Dial(int) (Conn, error) {
	c, err := net.DialUDP("udp", nil, s.conn.LocalAddr().(*net.UDPAddr))
	if err != nil {
		return nil, err
	}
	_ = c.SetReadBuffer(4 << 20)
	u := &udpConn{c: c, ch: make(chan udpResp, 1<<14)}
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		buf := make([]byte, 65536)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			r := reader{b: buf[:n]}
			idb, st, nv := r.n(8), r.n(1), r.u16()
			if r.err != nil {
				continue
			}
			resp := udpResp{id: binary.LittleEndian.Uint64(idb), status: workload.Status(st[0])}
			for range nv {
				resp.values = append(resp.values, append([]byte(nil), r.n(r.u32())...))
			}
			if r.err == nil {
				u.ch <- resp
			}
		}
	}()
	return u, nil
}

func (u *udpConn) Send(id uint64, req *workload.Request) error {
	u.out = encodeRequest(u.out, id, req)
	_, err := u.c.Write(u.out)
	return err
}

func (u *udpConn) Poll(deliver func(uint64, *workload.Response)) (int, error) {
	n := 0
	for {
		select {
		case r := <-u.ch:
			u.resp.Status, u.resp.Values = r.status, r.values
			deliver(r.id, &u.resp)
			n++
		default:
			return n, nil
		}
	}
}

func (u *udpConn) Close() error {
	err := u.c.Close()
	u.wg.Wait()
	return err
}

// TestOverLoopbackUDP runs preload, a checked open-loop point and a short
// sweep against a server behind real kernel sockets.
func TestOverLoopbackUDP(t *testing.T) {
	for _, spec := range []string{"ycsb:records=500,shape=2x1024,update=0.1", "google:keys=300", "twitter:keys=500"} {
		t.Run(spec, func(t *testing.T) {
			w := mustParse(t, spec)
			srv := startUDPServer(t)
			conn, err := srv.Dial(0)
			if err != nil {
				t.Fatal(err)
			}
			n, err := Preload(context.Background(), w, conn, 8, 5*time.Second)
			conn.Close()
			if err != nil {
				t.Fatalf("preload after %d: %v", n, err)
			}
			if srv.store.Len() == 0 {
				t.Fatal("nothing preloaded")
			}
			r, err := Run(context.Background(), Config{Workload: w, Target: srv, Clients: 2, Rate: 1000, Duration: 300 * time.Millisecond, Check: true})
			if err != nil {
				t.Fatal(err)
			}
			if r.Received == 0 || r.Mismatches != 0 || r.Errors != 0 || r.Unexpected != 0 {
				t.Fatalf("result %+v", r)
			}
			// loopback UDP may drop under a loaded machine; the accounting must hold anyway
			if r.Received+r.Lost != r.Sent {
				t.Fatalf("sent %d != received %d + lost %d", r.Sent, r.Received, r.Lost)
			}
		})
	}
}

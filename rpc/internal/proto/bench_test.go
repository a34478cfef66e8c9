package proto

import "testing"

// BenchmarkCoreSmallRPC measures the protocol core alone: one 32-byte
// request and response through a client and a server core.
func BenchmarkCoreSmallRPC(b *testing.B) {
	cli, _ := New(Config{DataPerPkt: 1000}, &testAlloc{})
	srv, _ := New(Config{DataPerPkt: 1000}, &testAlloc{})
	_ = cli.AddSession(SessionConfig{Num: 0, Client: true, Peer: srvAddr})
	_ = srv.AddSession(SessionConfig{Num: 0, Peer: cliAddr})
	released := 0
	req := &testMsg{b: make([]byte, 32), released: &released}
	resp := &testMsg{b: make([]byte, 32), released: &released}
	buf := make([]byte, 2048)
	move := func(from, to *Core) {
		rd := from.Ready()
		for i := range rd.Packets {
			p := &rd.Packets[i]
			_ = p.Hdr.Encode(buf)
			to.Step(buf[:HeaderSize+p.Len], 0)
		}
		from.Advance(rd)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		req.freed, resp.freed = false, false
		_ = cli.Enqueue(0, 1, req, 1)
		move(cli, srv)
		rd := srv.Ready()
		h := rd.Events[0].Handle
		srv.Advance(rd)
		_ = srv.Respond(h, resp)
		move(srv, cli)
		cli.Advance(cli.Ready())
	}
}

// BenchmarkCoreLargeRPC: an 8 MiB request (8956-byte packets), 32-byte response.
func BenchmarkCoreLargeRPC(b *testing.B) {
	const dpp = 8956
	cli, _ := New(Config{DataPerPkt: dpp}, &testAlloc{})
	a := &testAlloc{}
	srv, _ := New(Config{DataPerPkt: dpp}, a)
	_ = cli.AddSession(SessionConfig{Num: 0, Client: true, Peer: srvAddr})
	_ = srv.AddSession(SessionConfig{Num: 0, Peer: cliAddr})
	released := 0
	req := &testMsg{b: make([]byte, 8<<20), released: &released}
	resp := &testMsg{b: make([]byte, 32), released: &released}
	buf := make([]byte, HeaderSize+dpp)
	move := func(from, to *Core) int {
		rd := from.Ready()
		n := len(rd.Packets)
		for i := range rd.Packets {
			p := &rd.Packets[i]
			_ = p.Hdr.Encode(buf)
			if p.Msg != nil {
				copy(buf[HeaderSize:], p.Msg.Flat()[p.Off:p.Off+p.Len])
			}
			to.Step(buf[:HeaderSize+p.Len], 0)
		}
		for _, e := range rd.Events {
			if e.Buf != nil {
				e.Buf.Release()
			}
		}
		from.Advance(rd)
		return n
	}
	b.SetBytes(8 << 20)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		req.freed, resp.freed = false, false
		_ = cli.Enqueue(0, 1, req, 1)
		var h ReqHandle
		for {
			n := move(cli, srv)
			rd := srv.Ready()
			got := false
			for _, e := range rd.Events {
				h, got = e.Handle, true
				if e.Buf != nil {
					e.Buf.Release()
				}
			}
			for j := range rd.Packets {
				p := &rd.Packets[j]
				_ = p.Hdr.Encode(buf)
				cli.Step(buf[:HeaderSize], 0)
			}
			srv.Advance(rd)
			if got {
				break
			}
			if n == 0 && !cli.HasReady() {
				b.Fatal("stalled")
			}
		}
		_ = srv.Respond(h, resp)
		move(srv, cli)
		cli.Advance(cli.Ready())
	}
}

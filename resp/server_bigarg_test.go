package resp

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"
)

func (s *Server) giftedCount() uint64 {
	s.kmu.Lock()
	defer s.kmu.Unlock()
	return s.ks.gifted
}

// TestBigArgs sends large arguments (received into pool buffers of their
// own) in pieces and pipelined, over both serving modes: the values are
// stored without a copy, replies are exact, and every pool reference is
// returned (newTestServer's memtest pool) after FLUSHALL, after a
// protocol error in the middle of a large command, and after a client
// that goes away in the middle of a body.
func TestBigArgs(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{{"loops", Config{EventLoops: 1}}, {"noring", Config{EventLoops: 1, NoIOUring: true}}, {"goroutines", Config{GoroutinePerConn: true}}} {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestServer(t, tc.cfg)
			val := func(n int, c byte) string { return strings.Repeat(string(c), n) }
			v64, v40, v33 := val(64<<10, 'a'), val(40<<10, 'b'), val(33<<10, 'c')
			rc := dialRaw(t, ts.addr)
			_ = rc.c.SetDeadline(time.Now().Add(20 * time.Second))

			// A SET whose value arrives in pieces.
			cmd := encodeCommand([]string{"SET", "k", v64})
			for off := 0; off < len(cmd); off += 7000 {
				if _, err := rc.c.Write(cmd[off:min(off+7000, len(cmd))]); err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Millisecond) // separate reads (not a timing assertion)
			}
			if r, err := readReply(rc.r); r != "+OK\r\n" || err != nil {
				t.Fatalf("SET: %q %v", r, err)
			}
			if n, st := ts.srv.giftedCount(), ts.srv.Stats(); n != 1 || st.BigArgs != 1 {
				t.Fatalf("%d values kept without a copy, %d large arguments received, want 1 and 1", n, st.BigArgs)
			}

			// Pipelined: MSET of large values, a large key, ECHO (not
			// stored), RPUSH and HSET of large values, GETs.
			var in bytes.Buffer
			var want strings.Builder
			in.Write(encodeCommand([]string{"MSET", "a", v40, "b", v33, "c", "small"}))
			want.WriteString("+OK\r\n")
			in.Write(encodeCommand([]string{"SET", v33, "x"}))
			want.WriteString("+OK\r\n")
			in.Write(encodeCommand([]string{"ECHO", v40}))
			want.WriteString("$40960\r\n" + v40 + "\r\n")
			in.Write(encodeCommand([]string{"RPUSH", "l", v33, v40}))
			want.WriteString(":2\r\n")
			in.Write(encodeCommand([]string{"HSET", "h", "f", v64}))
			want.WriteString(":1\r\n")
			for _, k := range []string{"a", "b", "c", v33, "k"} {
				in.Write(encodeCommand([]string{"GET", k}))
			}
			want.WriteString("$40960\r\n" + v40 + "\r\n$33792\r\n" + v33 + "\r\n$5\r\nsmall\r\n$1\r\nx\r\n$65536\r\n" + v64 + "\r\n")
			in.Write(encodeCommand([]string{"LRANGE", "l", "0", "-1"}))
			want.WriteString("*2\r\n$33792\r\n" + v33 + "\r\n$40960\r\n" + v40 + "\r\n")
			in.Write(encodeCommand([]string{"HGET", "h", "f"}))
			want.WriteString("$65536\r\n" + v64 + "\r\n")
			go func() { _, _ = rc.c.Write(in.Bytes()) }()
			got := make([]byte, want.Len())
			if _, err := io.ReadFull(rc.r, got); err != nil || string(got) != want.String() {
				t.Fatalf("pipelined replies differ (%v): got %d bytes, want %d", err, len(got), want.Len())
			}
			if r, err := rc.do("FLUSHALL"); r != "+OK\r\n" || err != nil {
				t.Fatalf("FLUSHALL: %q %v", r, err)
			}
			ts.waitInUse(t, 0)

			// A large body not followed by CRLF: a protocol error.
			bad := dialRaw(t, ts.addr)
			_ = bad.c.SetDeadline(time.Now().Add(10 * time.Second))
			hdr := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$40000\r\n"
			_, _ = bad.c.Write([]byte(hdr))
			time.Sleep(time.Millisecond)
			_, _ = bad.c.Write([]byte(val(40000, 'z') + "XX"))
			if r, err := readReply(bad.r); !strings.HasPrefix(r, "-ERR Protocol error: bulk string not terminated") {
				t.Fatalf("bad terminator: %q %v", r, err)
			}
			ts.waitInUse(t, 0)

			// A client that leaves in the middle of a large body.
			gone := dialRaw(t, ts.addr)
			_, _ = gone.c.Write([]byte(hdr + val(10000, 'y')))
			for deadline := time.Now().Add(5 * time.Second); ts.srv.bigPending.Load() != 40000; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("no large body being received: %d bytes pending", ts.srv.bigPending.Load())
				}
			}
			if r, err := rc.do("PING"); r != "+PONG\r\n" || err != nil {
				t.Fatalf("PING: %q %v", r, err)
			}
			_ = gone.c.Close()
			ts.waitInUse(t, 0)
			if r, err := rc.do("DBSIZE"); r != ":0\r\n" || err != nil {
				t.Fatalf("DBSIZE: %q %v", r, err)
			}
		})
	}
}

// TestDifferentialBigArgs compares with redis-server the commands that
// take large arguments (received into buffers of their own here, into
// their string objects by Redis): string, list and hash writes of 32-200
// KiB values and keys, and what reads them back.
func TestDifferentialBigArgs(t *testing.T) {
	p, ts, _ := newDiffPair(t)
	v := func(n int, c byte) string { return strings.Repeat(string(c), n) }
	a, b, c, key := v(32<<10, 'a'), v(64<<10+3, 'b'), v(200<<10, 'c'), v(40<<10, 'k')
	for _, args := range [][]string{
		{"SET", "s", b}, {"GET", "s"}, {"STRLEN", "s"}, {"SET", "s", a, "GET"}, {"GETRANGE", "s", "32760", "32770"},
		{"MSET", "m1", a, "m2", c, key, b}, {"MGET", "m1", "m2", key, "nosuch"}, {"APPEND", "m1", b}, {"STRLEN", "m1"},
		{"SETNX", "m2", b}, {"GETSET", "m2", b}, {"GET", "m2"}, {"SETEX", "e", "100", c}, {"TTL", "e"}, {"GET", "e"},
		{"RPUSH", "l", a, b}, {"LPUSH", "l", c}, {"LRANGE", "l", "0", "-1"}, {"LSET", "l", "1", b}, {"LINSERT", "l", "BEFORE", b, a},
		{"LRANGE", "l", "0", "-1"}, {"LPOS", "l", b}, {"LREM", "l", "0", b}, {"LLEN", "l"},
		{"HSET", "h", key, a, "f", c}, {"HGET", "h", key}, {"HGET", "h", "f"}, {"HSTRLEN", "h", "f"},
		{"ECHO", c}, {"SET", "s", b, "XX", "PX", "100000"}, {"GET", "s"}, {"RPUSH", "s", a}, {"DEL", key, "s", "m1"},
		{"EXISTS", "m2", "l", "h"}, {"FLUSHALL"},
	} {
		p.check(t, "big", args...)
	}
	ts.waitInUse(t, 0)
	if ts.srv.Stats().BigArgs == 0 {
		t.Fatal("no argument was received into a buffer of its own")
	}
}

// TestBigArgsBounded: clients that declare large arguments and send one
// byte of them hold at most maxBigPending of pool memory between them;
// the others' bodies wait in their read buffers, which grow only with
// bytes received.
func TestBigArgsBounded(t *testing.T) {
	ts := newTestServer(t, Config{EventLoops: 1})
	const n, size = 80, 1 << 20 // 80 MiB declared
	var conns []*rawConn
	for range n {
		rc := dialRaw(t, ts.addr)
		if _, err := rc.c.Write([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048576\r\nx")); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, rc)
	}
	// A body's buffer is taken at the read after its header: a second byte.
	time.Sleep(50 * time.Millisecond) // (the headers are read first; not a timing assertion)
	for _, rc := range conns {
		if _, err := rc.c.Write([]byte("y")); err != nil {
			t.Fatal(err)
		}
	}
	probe := dialRaw(t, ts.addr)
	// 64 of the 80 bodies get a pool buffer (maxBigPending), never more.
	deadline := time.Now().Add(10 * time.Second)
	for cur := int64(0); cur != maxBigPending; time.Sleep(5 * time.Millisecond) {
		if cur = ts.srv.bigPending.Load(); cur > maxBigPending || time.Now().After(deadline) {
			t.Fatalf("%d bytes pending for large arguments, want the bound %d", cur, maxBigPending)
		}
	}
	time.Sleep(50 * time.Millisecond) // the other 16 have been read too (not a timing assertion)
	if cur := ts.srv.bigPending.Load(); cur != maxBigPending {
		t.Fatalf("%d bytes pending for large arguments, want the bound %d", cur, maxBigPending)
	}
	if r, err := probe.do("PING"); r != "+PONG\r\n" || err != nil {
		t.Fatalf("PING: %q %v", r, err)
	}
}

package naosbench

import (
	"net"
	"runtime"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Every library sends every structure intact (each receiver checks the
// element count and a checksum of the values) over both transports.
func TestRunAll(t *testing.T) {
	recs, err := Run(Config{Sizes: []int{33}, Budget: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	want := 2 * 3 * (4*7 + 2) // transports x ops (latency, throughput, cpu) x (structures x libraries + naosit twice)
	if len(recs) != want {
		t.Fatalf("%d records, want %d", len(recs), want)
	}
	for _, r := range recs {
		if !(r.Value > 0 || r.Op == "cpu" && r.Value == 0) || r.Size != 33 {
			t.Fatalf("bad record %+v", r)
		}
	}
}

func TestCodecsDetectCorruption(t *testing.T) {
	for _, st := range Structures {
		d, err := newDataset(st, 10)
		if err != nil {
			t.Fatal(err)
		}
		other, _ := newDataset(st, 11)
		for _, lib := range Libraries {
			enc, _ := newCodec(lib, other, false)
			dec, _ := newCodec(lib, d, false)
			f, err := enc.encode(nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := dec.decode(f); err == nil {
				t.Errorf("%s %s: 11 elements accepted as 10", st, lib)
			}
		}
	}
}

func TestUnknownNames(t *testing.T) {
	for _, c := range []Config{{Structures: []string{"x"}}, {Libraries: []string{"x"}}, {Transports: []string{"x"}, Sizes: []int{1}}} {
		if _, err := Run(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

// Receivers that decode every array into a new value deliver them intact
// too (TestRunAll covers the default, reused values).
func TestRunFresh(t *testing.T) {
	recs, err := Run(Config{Sizes: []int{33}, Budget: time.Millisecond, Transports: []string{"tcp"}, Fresh: true, Rounds: 1})
	if err != nil {
		t.Fatal(err)
	}
	if want := 3 * (4*7 + 2); len(recs) != want {
		t.Fatalf("%d records, want %d", len(recs), want)
	}
}

func TestMedianResult(t *testing.T) {
	for _, c := range []struct {
		in   []result
		want result
	}{
		{[]result{{1, 2, 3}}, result{1, 2, 3}},
		{[]result{{5, 1, 9}, {1, 7, 2}, {3, 4, 4}}, result{3, 4, 4}},
		{[]result{{1, 10, 2}, {3, 20, 4}}, result{2, 15, 3}},
	} {
		if got := medianResult(c.in); got != c.want {
			t.Errorf("medianResult(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

// TestFloorReadsValues: the floor's check of the flat arrays reads every
// value, so a changed last element is refused and the message as sent is
// accepted.
func TestFloorReadsValues(t *testing.T) {
	for _, st := range []string{"float32", "point-val"} {
		for _, n := range []int{1, 7, 64} {
			d, err := newDataset(st, n)
			if err != nil {
				t.Fatal(err)
			}
			cd, err := newCodec("floor", d, false)
			if err != nil {
				t.Fatal(err)
			}
			f, err := cd.encode(nil)
			if err != nil {
				t.Fatal(err)
			}
			// As sent, and in a frame whose end is 8-byte aligned (as
			// serveTCP's; checked in place).
			buf := make([]byte, len(f)+8)
			off := (8 - len(f)%8) % 8
			g := buf[off : off+len(f)]
			copy(g, f)
			for _, h := range [][]byte{f, g} {
				if err := cd.decode(h); err != nil {
					t.Errorf("%s %d: %v", st, n, err)
				}
				h[len(h)-2] ^= 0x40 // in the last value's high bytes
				if err := cd.decode(h); err == nil {
					t.Errorf("%s %d: a changed value accepted", st, n)
				}
			}
		}
	}
}

// TestTCPPairSockBuf checks that tcpPair sets both buffers of both ends
// (Linux reports twice the requested size) and leaves them alone when
// sockBuf is not positive.
func TestTCPPairSockBuf(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("SO_RCVBUF doubling is Linux's")
	}
	get := func(c net.Conn, opt int) int {
		rc, err := c.(*net.TCPConn).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var v int
		var gerr error
		if err := rc.Control(func(fd uintptr) { v, gerr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, opt) }); err != nil {
			t.Fatal(err)
		}
		if gerr != nil {
			t.Fatal(gerr)
		}
		return v
	}
	const want = 96 << 10 // under any sane rmem_max/wmem_max
	for _, buf := range []int{want, -1} {
		cli, srv, err := tcpPair(buf)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []net.Conn{cli, srv} {
			for _, opt := range []int{syscall.SO_RCVBUF, syscall.SO_SNDBUF} {
				got := get(c, opt)
				if buf > 0 && got != 2*want {
					t.Errorf("sockBuf %d: option %d is %d, want %d", buf, opt, got, 2*want)
				}
				if buf <= 0 && got == 2*want {
					t.Errorf("sockBuf %d: option %d was set to %d", buf, opt, got)
				}
			}
		}
		_, _ = cli.Close(), srv.Close()
	}
}

func TestInFlight(t *testing.T) {
	for _, c := range []struct {
		rtt      time.Duration
		msgBytes int
		want     int
	}{
		{time.Microsecond, 0, 64},             // no size known: the time bound only
		{10 * time.Microsecond, 64, 64},       // small arrays: at most 64
		{100 * time.Microsecond, 64, 20},      // 2 ms of round trips
		{10 * time.Millisecond, 64, 2},        // at least 2
		{10 * time.Microsecond, 16 << 10, 32}, // 512 KiB of 16 KiB arrays
		{50 * time.Microsecond, 256 << 10, 2}, // 2^16 float32
		{time.Microsecond, 4 << 20, 2},        // larger than the byte bound: still 2
	} {
		if got := inFlight(c.rtt, c.msgBytes); got != c.want {
			t.Errorf("inFlight(%v, %d) = %d, want %d", c.rtt, c.msgBytes, got, c.want)
		}
	}
}

package echo

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/mem"
)

// TestClientReceivesInPlace checks that the client receives in place
// (RecvSegments) on shm and contiguously elsewhere, and that an in-place
// response is checked like a contiguous one: size always, bytes with
// Verify, garbage counted bad.
func TestClientReceivesInPlace(t *testing.T) {
	shape, err := shapeByName("2x2048")
	if err != nil {
		t.Fatal(err)
	}
	for _, dp := range []string{"shm", "udp"} {
		t.Run(dp, func(t *testing.T) {
			cs, err := openSide(dp, "client", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := cs.close(); err != nil {
					t.Error(err)
				}
			}()
			c, err := newClient(cs, cs.ep.LocalAddr(), "raw", shape, Config{Clients: 2, Verify: true})
			if err != nil {
				t.Fatal(err)
			}
			defer c.close()
			if got := c.segRx != nil; got != (dp == "shm") {
				t.Fatalf("in-place receive on %s: %v", dp, got)
			}
			if dp != "shm" {
				return
			}
			want := c.reqs[0].Bytes()
			hdr := func(slot, seq, variant uint32) []byte {
				h := hdrFor(0)
				binary.LittleEndian.PutUint32(h[0:], slot)
				binary.LittleEndian.PutUint32(h[4:], seq)
				binary.LittleEndian.PutUint32(h[8:], variant)
				return h
			}
			c.slots[0] = slot{busy: true, seq: 7, variant: 0}
			c.slots[1] = slot{busy: true, seq: 3, variant: 0}
			// A good response split as header | first half | second half.
			if i := c.check(hdr(0, 7, 0), [][]byte{want[:1000], want[1000:]}, 1); i != 0 || c.bad != 0 {
				t.Fatalf("good response: slot %d, bad %d", i, c.bad)
			}
			// One byte differs in the last part: counted bad (Verify).
			bad := append([]byte(nil), want[1000:]...)
			bad[len(bad)-1] ^= 1
			if i := c.check(hdr(1, 3, 0), [][]byte{want[:1000], bad}, 1); i != 1 || c.bad != 1 {
				t.Fatalf("corrupt response: slot %d, bad %d", i, c.bad)
			}
			// Short head, unknown slot, stale sequence.
			c.slots[0] = slot{busy: true, seq: 8, variant: 0}
			for _, tc := range []struct {
				name    string
				head    []byte
				rest    [][]byte
				wantBad uint64
			}{
				{"short head", []byte{1, 2, 3}, [][]byte{want}, 2},
				{"unknown slot", hdr(9, 8, 0), [][]byte{want}, 3},
				{"stale", hdr(0, 7, 0), [][]byte{want}, 3},
				{"wrong size", hdr(0, 8, 0), [][]byte{want[:10]}, 4},
			} {
				if i := c.check(tc.head, tc.rest, 1); (i >= 0) != (tc.name == "wrong size") || c.bad != tc.wantBad {
					t.Fatalf("%s: slot %d, bad %d (want %d)", tc.name, i, c.bad, tc.wantBad)
				}
			}
			// Nothing to receive: no error, no completions.
			n, err := c.receive(c.now)
			if err != nil || n != 0 || len(c.completed) != 0 {
				t.Fatalf("empty receive: %d, %v, %v", n, err, c.completed)
			}
		})
	}
}

func TestEqualParts(t *testing.T) {
	w := []byte("abcdefgh")
	for _, tc := range []struct {
		first []byte
		rest  [][]byte
		want  bool
	}{
		{w, nil, true},
		{w[:0], [][]byte{w}, true},
		{w[:3], [][]byte{w[3:5], w[5:]}, true},
		{w[:3], [][]byte{[]byte("dXf"), w[6:]}, false},
		{[]byte("X"), [][]byte{w[1:]}, false},
	} {
		if got := equalParts(w, tc.first, tc.rest); got != tc.want {
			t.Errorf("equalParts(%q, %q) = %v", tc.first, tc.rest, got)
		}
	}
}

// TestSpinner checks the idle policy's decisions (not its timing): no
// block before SpinTime has passed since the SpinPolls-th empty poll, a
// block at the next SpinPolls boundary after it, and a fresh count after
// a reset.
func TestSpinner(t *testing.T) {
	var s spinner
	for i := 1; i <= SpinPolls; i++ {
		if s.idle() {
			t.Fatalf("blocked after %d empty polls", i)
		}
	}
	time.Sleep(SpinTime)
	for i := 1; i < SpinPolls; i++ {
		if s.idle() {
			t.Fatalf("blocked between yields (poll %d)", SpinPolls+i)
		}
	}
	if !s.idle() {
		t.Fatal("not blocked after SpinTime idle")
	}
	s.reset()
	if s.polls != 0 || s.idle() {
		t.Fatal("reset did not restart the count")
	}
}

// TestClientServerNoAllocs checks that one request's round trip on shm
// (client send, server receive and answer, client in-place receive and
// check) allocates nothing, for raw and cornflakes-hybrid.
func TestClientServerNoAllocs(t *testing.T) {
	shape, err := shapeByName("2x2048")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"raw", "cornflakes-hybrid"} {
		t.Run(a, func(t *testing.T) {
			ss, err := openSide("shm", "server", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			cs, err := openSide("shm", "client", nil, nil)
			if err != nil {
				ss.close()
				t.Fatal(err)
			}
			srv, err := newServer(ss, a, shape)
			if err != nil {
				t.Fatal(err)
			}
			c, err := newClient(cs, ss.ep.LocalAddr(), a, shape, Config{Clients: 1, Verify: true})
			if err != nil {
				t.Fatal(err)
			}
			c.start = time.Now()
			roundTrip := func() {
				if err := c.send(0, c.now()); err != nil {
					t.Fatal(err)
				}
				if err := c.ep.Flush(); err != nil {
					t.Fatal(err)
				}
				for served := false; ; { // bounded by the deadline below
					if !served {
						n, err := srv.ep.Recv(srv.pkts)
						if err != nil {
							t.Fatal(err)
						}
						for _, p := range srv.pkts[:n] {
							if err := srv.handle(&p); err != nil {
								t.Fatal(err)
							}
							p.Buf.Release()
							served = true
						}
						if err := srv.ep.Flush(); err != nil {
							t.Fatal(err)
						}
					}
					if _, err := c.receive(c.now); err != nil {
						t.Fatal(err)
					}
					if len(c.completed) > 0 {
						return
					}
					if c.now() > int64(5*time.Second) {
						t.Fatal("no response within 5 s")
					}
				}
			}
			roundTrip() // connects (allocates once); AllocsPerRun adds one more warm-up run
			// The race detector and the checked build allocate on their
			// own: the round trips still run, uncounted.
			if allocs := testing.AllocsPerRun(50, roundTrip); allocs != 0 && !raceEnabled && !mem.Checked {
				t.Errorf("%v allocations per round trip", allocs)
			}
			if c.bad != 0 || c.done != 52 {
				t.Errorf("done %d, bad %d", c.done, c.bad)
			}
			if err := c.drain(); err != nil {
				t.Error(err)
			}
			if err := srv.ep.Flush(); err != nil {
				t.Error(err)
			}
			for _, err := range []error{c.close(), srv.close(), cs.close(), ss.close()} {
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
}

package calibrate

import (
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/benchschema/cf"
	"github.com/cornflakes-go/cornflakes/wire"
)

// TestClientCheck: the client's verification accepts the response the
// server builds for a key and rejects one with a changed byte, another
// key's values, or a different entry count.
func TestClientCheck(t *testing.T) {
	w := &workingSet{}
	if err := w.fill(64, 64*1024); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := w.release(); err != nil {
			t.Fatal(err)
		}
	}()
	w.setSize(40)
	build := func(key uint64, entries int) []byte {
		a := wire.NewArena()
		defer a.Reset()
		m := cf.NewListBuffers(a)
		l := m.InitMessages(entries)
		n := uint64(len(w.vals))
		for range entries {
			key = splitmix(key)
			l.Append(w.vals[key%n])
		}
		b, err := wire.Flatten(m, nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	c := &client{verify: true, entries: 3, ws: w, arena: wire.NewArena()}
	good := build(7, 3)
	if !c.check(good, 7) {
		t.Fatal("the server's response for the key was rejected")
	}
	bad := append([]byte(nil), good...)
	bad[len(bad)-1] ^= 1
	for name, tc := range map[string]struct {
		p   []byte
		key uint64
	}{"changed byte": {bad, 7}, "other key": {build(8, 3), 7}, "fewer entries": {build(7, 2), 7}, "garbage": {[]byte{1, 2, 3}, 7}} {
		if c.check(tc.p, tc.key) {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := c.arena.Reset(); err != nil {
		t.Fatal(err)
	}
}

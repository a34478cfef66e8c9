package wire_test

import (
	"testing"

	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
	"github.com/cornflakes-go/cornflakes/wire/internal/testmsg"
)

// TestSilentCopies: a value of at least the threshold outside registered
// memory is copied and counted (arena and process); a registered one and
// a short one are not.
func TestSilentCopies(t *testing.T) {
	pool := memtest.NewPool(t)
	v := memtest.Alloc(t, pool, make([]byte, 1024))
	defer memtest.Release(t, v)
	a := wire.NewArena()
	defer a.Reset()
	n0, b0 := wire.SilentCopies()
	for _, tc := range []struct {
		name  string
		val   []byte
		count bool
	}{
		{"registered", v.Bytes(), false},
		{"short heap", make([]byte, wire.DefaultThreshold-1), false},
		{"large heap", make([]byte, 4096), true},
	} {
		want := uint64(0)
		if tc.count {
			want = 1
		}
		// The setter and a list's Append (which decides on its own,
		// without calling the setter) follow the same rule.
		for _, set := range []struct {
			how string
			do  func(m *testmsg.AllTypes) bool // reports whether the value is zero-copy
		}{
			{"set", func(m *testmsg.AllTypes) bool { m.SetData(tc.val); return m.Sizes().Entries == 1 }},
			{"append", func(m *testmsg.AllTypes) bool { l := m.InitBlobs(1); l.Append(tc.val); return l.IsZeroCopy(0) }},
		} {
			n1, b1 := a.SilentCopies()
			m := testmsg.NewAllTypes(a)
			zc := set.do(m)
			n2, b2 := a.SilentCopies()
			if n2-n1 != want || (want == 1 && b2-b1 != uint64(len(tc.val))) || (want == 0 && b2 != b1) {
				t.Errorf("%s, %s: arena counted %d values, %d bytes", tc.name, set.how, n2-n1, b2-b1)
			}
			if wantZC := tc.name == "registered"; zc != wantZC {
				t.Errorf("%s, %s: zero-copy %v, want %v", tc.name, set.how, zc, wantZC)
			}
		}
	}
	if n, b := wire.SilentCopies(); n-n0 < 1 || b-b0 < 4096 {
		t.Errorf("process-wide: %d values, %d bytes", n-n0, b-b0)
	}
}

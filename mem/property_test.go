package mem_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// opsModel drives a pool with a sequence of operations and checks every
// result against a simple model: per item, its reference count and the
// bytes the test wrote into it.
type opsModel struct {
	t       testing.TB
	p       *mem.Pool
	live    []handle       // references the model owns
	dead    []deadHandle   // released handles (for double-release checks)
	gens    map[*byte]int  // item start -> times freed
	refs    map[*byte]int  // item start address -> count
	content map[*byte]byte // item start address -> fill byte
	sizes   map[*byte]int  // item start -> allocated length
}

type deadHandle struct {
	b    mem.Buf
	item *byte
	gen  int // the model generation of the allocation it belonged to
}

type handle struct {
	b    mem.Buf
	item *byte // start of the item's allocated window
}

func newOpsModel(t testing.TB, p *mem.Pool) *opsModel {
	return &opsModel{t: t, p: p, refs: map[*byte]int{}, gens: map[*byte]int{}, content: map[*byte]byte{}, sizes: map[*byte]int{}}
}

func addr(b []byte) *byte { return unsafe.SliceData(b) }

// step performs operation op (0..7) with parameters x, y.
func (m *opsModel) step(op byte, x, y uint32) {
	t := m.t
	switch op % 8 {
	case 0, 1: // alloc
		n := 1 + int(x%5000)
		if op%8 == 1 {
			n = 1 + int(x%(300<<10))
		}
		b, err := m.p.Alloc(n)
		if errors.Is(err, mem.ErrExhausted) {
			return
		}
		if err != nil {
			t.Fatalf("Alloc(%d): %v", n, err)
		}
		a := addr(b.Bytes())
		if m.refs[a] != 0 {
			t.Fatalf("Alloc returned item %p that has %d references", a, m.refs[a])
		}
		fillByte := byte(y)
		bs := b.Bytes()
		for i := range bs {
			bs[i] = fillByte
		}
		m.refs[a] = 1
		m.content[a] = fillByte
		m.sizes[a] = n
		m.live = append(m.live, handle{b: b, item: a})
	case 2: // clone
		if len(m.live) == 0 {
			return
		}
		h := m.live[int(x)%len(m.live)]
		c := h.b.Clone()
		m.refs[h.item]++
		m.live = append(m.live, handle{b: c, item: h.item})
	case 3, 4: // release
		if len(m.live) == 0 {
			return
		}
		i := int(x) % len(m.live)
		h := m.live[i]
		m.live[i] = m.live[len(m.live)-1]
		m.live = m.live[:len(m.live)-1]
		m.check(h)
		gen := m.gens[h.item]
		m.refs[h.item]--
		if m.refs[h.item] == 0 {
			delete(m.refs, h.item)
			m.gens[h.item]++
		}
		if err := h.b.Release(); err != nil {
			t.Fatalf("Release: %v", err)
		}
		m.dead = append(m.dead, deadHandle{b: h.b, item: h.item, gen: gen})
	case 5: // recover a sub-window of a live handle's allocated bytes
		if len(m.live) == 0 {
			return
		}
		h := m.live[int(x)%len(m.live)]
		n := m.sizes[h.item]
		off := int(y) % n
		l := 1 + int(y>>16)%(n-off)
		win := unsafe.Slice(h.item, n)[off : off+l]
		r, ok := mem.Recover(win)
		if !ok {
			t.Fatalf("Recover of a live item's window [%d:%d] of %d failed", off, off+l, n)
		}
		if r.Len() != l || addr(r.Bytes()) != addr(win) {
			t.Fatalf("Recover window: len %d", r.Len())
		}
		m.refs[h.item]++
		m.live = append(m.live, handle{b: r, item: h.item})
	case 6: // release a dead handle again: must fail and change nothing
		if len(m.dead) == 0 {
			return
		}
		d := m.dead[int(x)%len(m.dead)]
		if m.gens[d.item] == d.gen {
			// The allocation is still referenced by other handles: a
			// refcount cannot tell which reference is being released,
			// so an over-release is only detectable once the item is freed.
			return
		}
		err := d.b.Release()
		if err == nil {
			t.Fatalf("release of a released handle succeeded")
		}
		if !errors.Is(err, mem.ErrDoubleRelease) && !errors.Is(err, mem.ErrUseAfterRelease) {
			t.Fatalf("release of a released handle: %v", err)
		}
	case 7: // recover memory of a free item: must fail
		for a := range m.sizes {
			if m.refs[a] == 0 {
				if _, ok := mem.Recover(unsafe.Slice(a, 1)); ok {
					t.Fatalf("Recover of a free item %p succeeded", a)
				}
				delete(m.sizes, a)
				delete(m.content, a)
			}
			break
		}
	}
	if len(m.dead) > 64 {
		m.dead = m.dead[32:]
	}
	m.verify()
}

// check verifies the data behind a live handle.
func (m *opsModel) check(h handle) {
	want := m.content[h.item]
	if bs := h.b.Bytes(); bytes.Count(bs, []byte{want}) != len(bs) {
		m.t.Fatalf("item %p: bytes other than %#x (overwritten while referenced)", h.item, want)
	}
	if got := h.b.Refs(); got != m.refs[h.item] {
		m.t.Fatalf("item %p Refs() = %d, model %d", h.item, got, m.refs[h.item])
	}
}

func (m *opsModel) verify() {
	if got, want := m.p.InUse(), len(m.refs); got != want {
		m.t.Fatalf("InUse() = %d, model %d", got, want)
	}
	st := m.p.Stats()
	var inUse, items, regions int
	var bytes int64
	for _, c := range st.Classes {
		if c.Items != c.Free+c.InUse || c.Bytes != int64(c.Items)*int64(c.Size) {
			m.t.Fatalf("class %d: items %d != free %d + in use %d (bytes %d)", c.Size, c.Items, c.Free, c.InUse, c.Bytes)
		}
		inUse += c.InUse
		items += c.Items
		regions += c.Regions
		bytes += c.Bytes
	}
	if inUse != st.InUse || items != st.Items || regions != st.Regions || bytes != st.Bytes || bytes > st.MaxBytes {
		m.t.Fatalf("pool totals disagree with classes: %+v", st)
	}
}

func (m *opsModel) drain() {
	for len(m.live) > 0 {
		m.step(3, 0, 0)
	}
	if n := m.p.InUse(); n != 0 {
		m.t.Fatalf("InUse() = %d after releasing everything", n)
	}
}

// runOps interprets data as a sequence of 9-byte operations.
func runOps(t testing.TB, p *mem.Pool, data []byte) {
	m := newOpsModel(t, p)
	for len(data) >= 9 {
		x := uint32(data[1]) | uint32(data[2])<<8 | uint32(data[3])<<16 | uint32(data[4])<<24
		y := uint32(data[5]) | uint32(data[6])<<8 | uint32(data[7])<<16 | uint32(data[8])<<24
		m.step(data[0], x, y)
		data = data[9:]
	}
	m.drain()
}

func TestPoolOpsRandom(t *testing.T) {
	for _, conc := range []bool{false, true} {
		for seed := uint64(1); seed <= 4; seed++ {
			p := memtest.NewPool(t, mem.PoolConfig{Name: "ops", MaxBytes: 24 << 20, Concurrent: conc})
			rng := rand.New(rand.NewPCG(seed, 42))
			ops := make([]byte, 9*4000)
			for i := range ops {
				ops[i] = byte(rng.Uint32())
			}
			runOps(t, p, ops)
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// FuzzPoolOps runs random operation sequences against the model; any
// mismatch in counts, contents, Recover results or release errors fails.
func FuzzPoolOps(f *testing.F) {
	f.Add([]byte{0, 100, 0, 0, 0, 7, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{1, 255, 255, 3, 0, 9, 0, 0, 0, 5, 0, 0, 0, 0, 10, 0, 20, 0, 4, 1, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0})
	p := memtest.NewPool(f, mem.PoolConfig{Name: "fuzz", MaxBytes: 16 << 20})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 9*2000 {
			data = data[:9*2000]
		}
		runOps(t, p, data)
	})
}

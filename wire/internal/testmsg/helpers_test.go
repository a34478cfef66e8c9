package testmsg

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

// values hands out byte values for test messages: from the Go heap or from
// registered memory (a pool), and releases the pool ones at the end.
type values struct {
	t    testing.TB
	pool *mem.Pool
	held []mem.Buf
}

func newValues(t testing.TB) *values {
	v := &values{t: t, pool: memtest.NewPool(t)}
	t.Cleanup(v.release) // runs before memtest's pool check (LIFO)
	return v
}

func (v *values) release() {
	for _, b := range v.held {
		if err := b.Release(); err != nil {
			v.t.Errorf("release: %v", err)
		}
	}
	v.held = nil
}

// registered returns a registered copy of p (the caller must not release it).
func (v *values) registered(p []byte) []byte {
	if len(p) == 0 {
		return nil
	}
	b := memtest.Alloc(v.t, v.pool, p)
	v.held = append(v.held, b)
	return b.Bytes()
}

func (v *values) registeredBuf(p []byte) mem.Buf {
	b := memtest.Alloc(v.t, v.pool, p)
	v.held = append(v.held, b)
	return b
}

// randBytes returns random bytes of a random length (biased to interesting
// sizes around the threshold), from the heap or registered memory.
func (v *values) randBytes(r *rand.Rand) []byte {
	var n int
	switch r.IntN(6) {
	case 0:
		n = 0
	case 1:
		n = r.IntN(16)
	case 2:
		n = 500 + r.IntN(24)
	case 3:
		n = r.IntN(3000)
	default:
		n = r.IntN(200)
	}
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(r.Uint32())
	}
	if r.IntN(2) == 0 {
		return v.registered(p)
	}
	return p
}

func (v *values) randString(r *rand.Rand) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzé€😀 "
	runes := []rune(alphabet)
	n := r.IntN(20)
	if r.IntN(5) == 0 {
		n = 500 + r.IntN(100)
	}
	var sb strings.Builder
	for range n {
		sb.WriteRune(runes[r.IntN(len(runes))])
	}
	s := sb.String()
	if r.IntN(2) == 0 && len(s) > 0 {
		return string(v.registered([]byte(s))) // a heap copy: keep it simple
	}
	return s
}

func randFloat32(r *rand.Rand) float32 {
	switch r.IntN(4) {
	case 0:
		return 0
	case 1:
		return float32(math.NaN())
	case 2:
		return float32(math.Copysign(0, -1))
	}
	return r.Float32()*1e6 - 5e5
}

func randFloat64(r *rand.Rand) float64 {
	switch r.IntN(4) {
	case 0:
		return 0
	case 1:
		return math.Inf(-1)
	case 2:
		return math.Copysign(0, -1)
	}
	return r.NormFloat64() * 1e9
}

func randInner(r *rand.Rand, a *wire.Arena, v *values, depth int) *Inner {
	m := NewInner(a)
	if r.IntN(2) == 0 {
		m.SetId(r.Int64() - r.Int64())
	}
	if r.IntN(2) == 0 {
		m.SetData(v.randBytes(r))
	}
	if r.IntN(2) == 0 {
		l := m.InitTags(r.IntN(3))
		for range r.IntN(5) {
			l.Append(v.randString(r))
		}
	}
	if depth > 0 && r.IntN(3) == 0 {
		m.SetChild(randInner(r, a, v, depth-1))
	}
	return m
}

// randAllTypes makes a random AllTypes using every kind of field.
func randAllTypes(r *rand.Rand, a *wire.Arena, v *values) *AllTypes {
	m := NewAllTypes(a)
	p := func() bool { return r.IntN(3) != 0 }
	if p() {
		m.SetI32(int32(r.Uint32()))
	}
	if p() {
		m.SetI64(int64(r.Uint64()))
	}
	if p() {
		m.SetU32(r.Uint32())
	}
	if p() {
		m.SetU64(r.Uint64())
	}
	if p() {
		m.SetS32(-int32(r.IntN(1000)))
	}
	if p() {
		m.SetS64(-r.Int64())
	}
	if p() {
		m.SetFx32(r.Uint32())
	}
	if p() {
		m.SetFx64(r.Uint64())
	}
	if p() {
		m.SetSfx32(int32(r.Uint32()))
	}
	if p() {
		m.SetSfx64(int64(r.Uint64()))
	}
	if p() {
		m.SetFlag(r.IntN(2) == 0)
	}
	if p() {
		m.SetFl(randFloat32(r))
	}
	if p() {
		m.SetDb(randFloat64(r))
	}
	if p() {
		m.SetColor(Color(r.IntN(5)))
	}
	if p() {
		m.SetData(v.randBytes(r))
	}
	if p() {
		m.SetName(v.randString(r))
	}
	if p() {
		m.SetOptI32(int32(r.IntN(3)))
	}
	if p() {
		m.SetOptData(v.randBytes(r))
	}
	if p() {
		m.SetOptName(v.randString(r))
	}
	if p() {
		m.SetOptFlag(r.IntN(2) == 0)
	}
	if p() {
		m.SetOptDb(randFloat64(r))
	}
	if p() {
		l := m.InitBlobs(r.IntN(4))
		for range r.IntN(6) {
			if r.IntN(3) == 0 {
				l.AppendBuf(v.registeredBuf(v.randBytes(r)))
			} else {
				l.Append(v.randBytes(r))
			}
		}
	}
	if p() {
		l := m.InitNames(0)
		for range r.IntN(6) {
			l.Append(v.randString(r))
		}
	}
	if p() {
		l := m.InitRI32(1)
		for range r.IntN(9) {
			l.Append(int32(r.Uint32()))
		}
	}
	if p() {
		l := m.InitRI64(0)
		for range r.IntN(9) {
			l.Append(int64(r.Uint64()))
		}
	}
	if p() {
		l := m.InitRU32(0)
		for range r.IntN(9) {
			l.Append(r.Uint32())
		}
	}
	if p() {
		l := m.InitRU64(0)
		for range r.IntN(9) {
			l.Append(r.Uint64())
		}
	}
	if p() {
		l := m.InitRBool(0)
		for range r.IntN(9) {
			l.Append(r.IntN(2) == 0)
		}
	}
	if p() {
		l := m.InitRFl(0)
		for range r.IntN(9) {
			l.Append(randFloat32(r))
		}
	}
	if p() {
		l := m.InitRDb(0)
		for range r.IntN(9) {
			l.Append(randFloat64(r))
		}
	}
	if p() {
		l := m.InitRColor(0)
		for range r.IntN(9) {
			l.Append(int32(r.IntN(4)))
		}
	}
	if p() {
		l := m.InitKids(2)
		for range r.IntN(4) {
			l.Append(randInner(r, a, v, 2))
		}
	}
	if p() {
		m.SetChild(randInner(r, a, v, 3))
	}
	if p() {
		m.SetFar(v.randBytes(r))
	}
	return m
}

// walk reads every field of a decoded AllTypes (decoding lists and nested
// messages), and returns the first error.
func walk(m *AllTypes) error {
	var errs []error
	_ = m.GetI32() + int32(m.GetS32()) + m.GetSfx32() + int32(m.GetColor()) + m.GetOptI32()
	_ = m.GetI64() + m.GetS64() + m.GetSfx64()
	_ = m.GetU32() + m.GetFx32()
	_ = m.GetU64() + m.GetFx64()
	_ = m.GetFlag() || m.GetOptFlag()
	_ = float64(m.GetFl()) + m.GetDb() + m.GetOptDb()
	_ = len(m.GetData()) + len(m.GetOptData()) + len(m.GetFar())
	_, err := m.GetName()
	errs = append(errs, err)
	_, err = m.GetOptName()
	errs = append(errs, err)
	if l, err := m.GetBlobs(); err != nil {
		errs = append(errs, err)
	} else {
		for i := range l.Len() {
			_ = l.At(i)
		}
	}
	if l, err := m.GetNames(); err != nil {
		errs = append(errs, err)
	} else {
		for i := range l.Len() {
			_, err := l.At(i)
			errs = append(errs, err)
		}
	}
	for _, g := range []func() error{
		func() error { l, err := m.GetRI32(); sumList(l, err); return err },
		func() error { l, err := m.GetRI64(); sumList(l, err); return err },
		func() error { l, err := m.GetRU32(); sumList(l, err); return err },
		func() error { l, err := m.GetRU64(); sumList(l, err); return err },
		func() error { l, err := m.GetRBool(); sumList(l, err); return err },
		func() error { l, err := m.GetRFl(); sumList(l, err); return err },
		func() error { l, err := m.GetRDb(); sumList(l, err); return err },
		func() error { l, err := m.GetRColor(); sumList(l, err); return err },
	} {
		errs = append(errs, g())
	}
	if l, err := m.GetKids(); err != nil {
		errs = append(errs, err)
	} else {
		for i := range l.Len() {
			errs = append(errs, walkInner(l.At(i)))
		}
	}
	if c, err := m.GetChild(); err != nil {
		errs = append(errs, err)
	} else if c != nil {
		errs = append(errs, walkInner(c))
	}
	return errors.Join(errs...)
}

func sumList[T wire.Scalar](l *wire.ScalarList[T], err error) {
	if err != nil {
		return
	}
	for i := range l.Len() {
		_ = l.At(i)
	}
}

func walkInner(m *Inner) error {
	var errs []error
	_ = m.GetId()
	_ = m.GetData()
	if l, err := m.GetTags(); err != nil {
		errs = append(errs, err)
	} else {
		for i := range l.Len() {
			_, err := l.At(i)
			errs = append(errs, err)
		}
	}
	if c, err := m.GetChild(); err != nil {
		errs = append(errs, err)
	} else if c != nil {
		errs = append(errs, walkInner(c))
	}
	return errors.Join(errs...)
}

// sink counts zero-copy entries and checks they are live.
type sink struct {
	n     int
	bytes int
}

func (s *sink) ZeroCopyEntry(b mem.Buf) error {
	if err := b.Check(); err != nil {
		return err
	}
	s.n++
	s.bytes += b.Len()
	return nil
}

// newArena returns an arena with threshold thr that is Reset when the test
// ends (before the pools' leak checks run).
func newArena(t testing.TB, thr int) *wire.Arena {
	a := wire.NewArena()
	a.Threshold = thr
	t.Cleanup(func() {
		if err := a.Reset(); err != nil {
			t.Errorf("arena Reset: %v", err)
		}
	})
	return a
}

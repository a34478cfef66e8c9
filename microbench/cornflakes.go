package microbench

import (
	"errors"
	"fmt"

	"github.com/cornflakes-go/cornflakes/internal/benchschema/cf"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/wire"
)

// Cornflakes modes: the copy threshold of the arena.
const (
	ModeHybrid   = "hybrid"   // wire.DefaultThreshold (512 B): large registered values zero-copy
	ModeCopy     = "copy"     // wire.CopyAll: every value copied
	ModeZeroCopy = "zerocopy" // 0: every registered value zero-copy
)

// Cornflakes returns the Cornflakes library (code generated from bench.proto into
// internal/benchschema/cf, runtime wire, registered memory mem) in the modes hybrid, copy and
// zerocopy.
//
// The shape's values live in registered memory (a mem pool), and so do the serialized inputs of
// Decode and Echo, as a datapath receives them. Serialize builds the message in a reused arena
// (Reset per message) and serializes it as the datapath does, into a reused head buffer plus
// zero-copy entries collected in a reused sink (wire.SerializeSGA): no scatter-gather array is
// allocated and nothing is flattened. In the hybrid mode, Serialize builds with the borrowed
// setters (cfCase.buildBorrowed): the case keeps its references, and the values unchanged,
// until Close, so a small value is referenced by its bytes, not copied into the arena, and
// is copied once, into the head, and a large one is sent zero-copy on the case's reference
// (no mem.Recover, no reference count), as vtprotobuf's message aliases the caller's slices
// and copies each value once at marshal (the copy and zerocopy modes keep the copying
// setters). Decode decodes zero-copy
// from the registered input (wire.Decode) and reads every field; the case holds its inputs until Close, after the arena's
// last Reset, so the arena borrows the case's reference (Arena.BorrowInput: no reference-count
// work per decode, as vtprotobuf's UnmarshalVTUnsafe aliases its input without one). Echo
// decodes, builds a new message from the decoded fields (zero-copy fields are passed on by
// reference, small ones copied) and serializes it like Serialize.
func Cornflakes() Library { return cfLibrary{} }

func cornflakesLibraries() []Library { return []Library{Cornflakes()} }

type cfLibrary struct{}

func (cfLibrary) Name() string    { return "cornflakes" }
func (cfLibrary) Modes() []string { return []string{ModeHybrid, ModeCopy, ModeZeroCopy} }

// cfThreshold returns the arena threshold of a mode.
func cfThreshold(mode string) (int, error) {
	switch mode {
	case ModeHybrid:
		return wire.DefaultThreshold, nil
	case ModeCopy:
		return wire.CopyAll, nil
	case ModeZeroCopy:
		return 0, nil
	}
	return 0, fmt.Errorf("%w %q for cornflakes (modes: hybrid, copy, zerocopy)", ErrUnknownMode, mode)
}

func (l cfLibrary) Prepare(shape Shape, mode string) (_ Case, err error) {
	thr, err := cfThreshold(mode)
	if err != nil {
		return nil, err
	}
	if err := checkShape(shape); err != nil {
		return nil, err
	}
	pool, err := mem.NewPool(mem.PoolConfig{Name: "microbench-" + shape.Name + "-" + mode})
	if err != nil {
		return nil, err
	}
	c := &cfCase{
		kind:   shape.Kind,
		cyc:    cycle{n: len(shape.Variants)},
		pool:   pool,
		a:      wire.NewArena(),
		leaves: make([][]byte, 0, TreeLeaves),
		borrow: mode == ModeHybrid,
	}
	c.a.Threshold = thr
	c.a.BorrowInput = true // c.inputs are released by Close, after the arena's Reset
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Close())
		}
	}()
	// Values: copied into registered memory.
	for v, vals := range shape.Values() {
		row := make([][]byte, len(vals))
		brow := make([]mem.Buf, len(vals))
		for i, val := range vals {
			b, err := pool.Alloc(len(val))
			if err != nil {
				return nil, fmt.Errorf("registering value %d of variant %d: %w", i, v, err)
			}
			c.bufs = append(c.bufs, b)
			row[i], brow[i] = b.Bytes(), b
			copy(row[i], val)
		}
		c.vals = append(c.vals, row)
		c.vbufs = append(c.vbufs, brow)
	}
	// Inputs: each variant serialized once and flattened into registered memory.
	for v := range c.vals {
		if err := c.a.Reset(); err != nil {
			return nil, err
		}
		m := c.build(c.vals[v])
		total := m.Sizes().Total()
		b, err := pool.Alloc(max(total, 1))
		if err != nil {
			return nil, fmt.Errorf("registering input of variant %d: %w", v, err)
		}
		c.bufs = append(c.bufs, b)
		b = b.Slice(0, total)
		out, err := wire.Flatten(m, b.Bytes()[:0])
		if err != nil {
			return nil, err
		}
		if len(out) != total || (total > 0 && &out[0] != &b.Bytes()[0]) {
			return nil, fmt.Errorf("flattening variant %d: %d bytes written outside the registered buffer", v, len(out))
		}
		c.inputs = append(c.inputs, b)
	}
	if err := c.a.Reset(); err != nil {
		return nil, err
	}
	return c, nil
}

type cfCase struct {
	kind   Kind
	vals   [][][]byte  // variant → values in registered memory
	vbufs  [][]mem.Buf // variant → the values' references (borrowed from bufs)
	inputs []mem.Buf   // variant → serialized message in registered memory (borrowed from bufs)
	cyc    cycle

	pool *mem.Pool
	bufs []mem.Buf // every reference this case owns
	a    *wire.Arena
	sga  wire.SGA // reused head buffer and zero-copy entry sink

	leaves [][]byte
	r      reader
	// borrow: Serialize builds with the borrowed setters (the hybrid mode; see Cornflakes).
	borrow bool
}

// build makes a message of c.kind from vals in c.a. It returns the message as a wire.Object
// (a static conversion of the concrete type; converting a wire.Msg to it would look its
// method table up at run time, as an interface-to-interface conversion does).
func (c *cfCase) build(vals [][]byte) wire.Object {
	switch c.kind {
	case KindSingle:
		m := cf.NewSingleBuffer(c.a)
		m.SetMessage(vals[0])
		return m
	case KindList:
		m := cf.NewListBuffers(c.a)
		l := m.InitMessages(len(vals))
		for _, v := range vals {
			l.Append(v)
		}
		return m
	default:
		m := cf.NewTree5(c.a)
		cfBuildTree(m, vals)
		return m
	}
}

// buildBorrowed is build of variant v with the borrowed setters: a value below the arena's
// threshold by its bytes (SetMessageBorrowed, AppendBorrowed: copied once, at serialize), a
// larger one by its reference (SetMessageBufBorrowed, AppendBufBorrowed: zero-copy on the
// case's reference, without mem.Recover or a reference count). The case keeps its
// references, and the values unchanged, until Close, after the arena's last Reset.
func (c *cfCase) buildBorrowed(v int) wire.Object {
	vals, bufs, thr := c.vals[v], c.vbufs[v], c.a.Threshold
	switch c.kind {
	case KindSingle:
		m := cf.NewSingleBuffer(c.a)
		if len(vals[0]) < thr {
			m.SetMessageBorrowed(vals[0])
		} else {
			m.SetMessageBufBorrowed(bufs[0])
		}
		return m
	case KindList:
		m := cf.NewListBuffers(c.a)
		l := m.InitMessages(len(vals))
		for i, p := range vals {
			if len(p) < thr {
				l.AppendBorrowed(p)
			} else {
				l.AppendBufBorrowed(bufs[i])
			}
		}
		return m
	default:
		m := cf.NewTree5(c.a)
		cfBuildTreeBorrowed(m, vals, bufs, thr)
		return m
	}
}

// cfBuildTreeBorrowed is cfBuildTree with the borrowed setters (see buildBorrowed).
func cfBuildTreeBorrowed(t *cf.Tree5, vals [][]byte, bufs []mem.Buf, thr int) {
	set := func(l *cf.SingleBuffer, k int) {
		if len(vals[k]) < thr {
			l.SetMessageBorrowed(vals[k])
		} else {
			l.SetMessageBufBorrowed(bufs[k])
		}
	}
	k := 0
	for _, t4 := range [2]*cf.Tree4{t.InitLeft(), t.InitRight()} {
		for _, t3 := range [2]*cf.Tree3{t4.InitLeft(), t4.InitRight()} {
			for _, t2 := range [2]*cf.Tree2{t3.InitLeft(), t3.InitRight()} {
				for _, t1 := range [2]*cf.Tree1{t2.InitLeft(), t2.InitRight()} {
					set(t1.InitLeft(), k)
					set(t1.InitRight(), k+1)
					k += 2
				}
			}
		}
	}
}

func cfBuildTree(t *cf.Tree5, vals [][]byte) {
	k := 0
	for _, t4 := range [2]*cf.Tree4{t.InitLeft(), t.InitRight()} {
		for _, t3 := range [2]*cf.Tree3{t4.InitLeft(), t4.InitRight()} {
			for _, t2 := range [2]*cf.Tree2{t3.InitLeft(), t3.InitRight()} {
				for _, t1 := range [2]*cf.Tree1{t2.InitLeft(), t2.InitRight()} {
					t1.InitLeft().SetMessage(vals[k])
					t1.InitRight().SetMessage(vals[k+1])
					k += 2
				}
			}
		}
	}
}

// decode decodes in (zero-copy) into a new message of c.kind in c.a and collects its values in
// c.leaves. For a list it also returns the decoded list (for Echo's by-reference copy).
func (c *cfCase) decode(in mem.Buf) (*wire.BytesList, error) {
	c.leaves = c.leaves[:0]
	switch c.kind {
	case KindSingle:
		m, err := cf.DecodeSingleBuffer(c.a, in)
		if err != nil {
			return nil, err
		}
		c.leaves = append(c.leaves, m.GetMessage())
		return nil, nil
	case KindList:
		m, err := cf.DecodeListBuffers(c.a, in)
		if err != nil {
			return nil, err
		}
		l, err := m.GetMessages()
		if err != nil {
			return nil, err
		}
		for i := range l.Len() {
			c.leaves = append(c.leaves, l.At(i))
		}
		return l, nil
	default:
		m, err := cf.DecodeTree5(c.a, in)
		if err != nil {
			return nil, err
		}
		c.leaves, err = cfReadTree(m, c.leaves)
		return nil, err
	}
}

// cfReadTree appends the leaf values of t (depth-first, left to right); absent subtrees are
// skipped.
func cfReadTree(t *cf.Tree5, dst [][]byte) ([][]byte, error) {
	for i := 0; i < 2; i++ {
		var t4 *cf.Tree4
		var err error
		if i == 0 {
			t4, err = t.GetLeft()
		} else {
			t4, err = t.GetRight()
		}
		if err != nil {
			return dst, err
		}
		if t4 == nil {
			continue
		}
		for j := 0; j < 2; j++ {
			var t3 *cf.Tree3
			if j == 0 {
				t3, err = t4.GetLeft()
			} else {
				t3, err = t4.GetRight()
			}
			if err != nil {
				return dst, err
			}
			if t3 == nil {
				continue
			}
			for k := 0; k < 2; k++ {
				var t2 *cf.Tree2
				if k == 0 {
					t2, err = t3.GetLeft()
				} else {
					t2, err = t3.GetRight()
				}
				if err != nil {
					return dst, err
				}
				if t2 == nil {
					continue
				}
				for m := 0; m < 2; m++ {
					var t1 *cf.Tree1
					if m == 0 {
						t1, err = t2.GetLeft()
					} else {
						t1, err = t2.GetRight()
					}
					if err != nil {
						return dst, err
					}
					if t1 == nil {
						continue
					}
					l, err := t1.GetLeft()
					if err != nil {
						return dst, err
					}
					if l != nil {
						dst = append(dst, l.GetMessage())
					}
					r, err := t1.GetRight()
					if err != nil {
						return dst, err
					}
					if r != nil {
						dst = append(dst, r.GetMessage())
					}
				}
			}
		}
	}
	return dst, nil
}

func (c *cfCase) Serialize() error {
	if err := c.a.Reset(); err != nil {
		return err
	}
	v := c.cyc.next()
	if c.borrow {
		return c.serializeSGA(c.buildBorrowed(v))
	}
	return c.serializeSGA(c.build(c.vals[v]))
}

// serializeSGA is wire.SerializeSGA(m, &c.sga) through the message's typed SerializeSGA, as a
// caller that knows its message's type writes it (no interface assertion).
func (c *cfCase) serializeSGA(m wire.Object) error {
	switch m := m.(type) {
	case *cf.SingleBuffer:
		return m.SerializeSGA(&c.sga)
	case *cf.ListBuffers:
		return m.SerializeSGA(&c.sga)
	case *cf.Tree5:
		return m.SerializeSGA(&c.sga)
	}
	return wire.SerializeSGA(m, &c.sga)
}

func (c *cfCase) Decode() error {
	if err := c.a.Reset(); err != nil {
		return err
	}
	if _, err := c.decode(c.inputs[c.cyc.next()]); err != nil {
		return err
	}
	c.r.touchAll(c.leaves)
	return nil
}

func (c *cfCase) Echo() error {
	if err := c.a.Reset(); err != nil {
		return err
	}
	_, err := c.decode(c.inputs[c.cyc.next()])
	if err != nil {
		return err
	}
	if err := checkCount(c.kind, len(c.leaves)); err != nil {
		return err
	}
	// What an echo server writes: each value decode read (c.leaves, as every library's echo
	// reads them) is set as it is. A value of at least the threshold lies in the decoded
	// (registered) input, so the new message shares the input's reference (no refcount
	// operation, no Recover lookup) and sends it zero-copy; a smaller one aliases the input
	// and is copied into the head at Serialize.
	return c.serializeSGA(c.build(c.leaves))
}

// Output flattens the latest SGA (head, then each zero-copy entry).
func (c *cfCase) Output() ([]byte, error) { return c.sga.AppendTo(nil), nil }

// Values decodes msg (heap memory, aliased) in a fresh arena and copies the values out.
func (c *cfCase) Values(msg []byte) ([][]byte, error) {
	d := &cfCase{kind: c.kind, a: wire.NewArena()}
	defer d.a.Reset()
	var vals [][]byte
	switch c.kind {
	case KindSingle:
		m := cf.NewSingleBuffer(d.a)
		if err := m.DecodeBytes(msg); err != nil {
			return nil, err
		}
		vals = [][]byte{m.GetMessage()}
	case KindList:
		m := cf.NewListBuffers(d.a)
		if err := m.DecodeBytes(msg); err != nil {
			return nil, err
		}
		l, err := m.GetMessages()
		if err != nil {
			return nil, err
		}
		for i := 0; i < l.Len(); i++ {
			vals = append(vals, l.At(i))
		}
	default:
		m := cf.NewTree5(d.a)
		if err := m.DecodeBytes(msg); err != nil {
			return nil, err
		}
		var err error
		if vals, err = cfReadTree(m, nil); err != nil {
			return nil, err
		}
	}
	return copyValues(vals), nil
}

// Close resets the arena (releasing its references), releases the case's buffers and closes
// the pool, which fails if any reference leaked.
func (c *cfCase) Close() error {
	var errs []error
	if c.a != nil {
		errs = append(errs, c.a.Reset())
	}
	c.sga = wire.SGA{}
	for _, b := range c.bufs {
		errs = append(errs, b.Release())
	}
	c.bufs = nil
	if c.pool != nil {
		if n := c.pool.InUse(); n != 0 {
			errs = append(errs, fmt.Errorf("cornflakes: %d registered buffers still in use at Close", n))
		}
		errs = append(errs, c.pool.Close())
		c.pool = nil
	}
	return errors.Join(errs...)
}

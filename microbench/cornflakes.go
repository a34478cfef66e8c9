package microbench

import (
	"errors"
	"fmt"

	"github.com/cornflakes-go/cornflakes/internal/baselines/codec"
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
// Decode and Echo, as a datapath receives them. Every serialization writes as the datapath does:
// into a reused head buffer plus zero-copy entries collected in a reused sink
// (wire.SerializeSGA): no scatter-gather array is allocated and nothing is flattened.
//
// Build side, hybrid mode: symmetric with the vtprotobuf harness
// (internal/baselines/codec/protobuf.go), which keeps its build-side message structs (a
// Tree5's 63 nested messages allocated once) and assigns their fields each op, and whose
// message aliases the caller's slices and copies each value once at marshal. The case keeps
// one message of its kind, built at Prepare (a Tree5 with its 63 nested messages wired), in
// an arena of its own that only Close resets (cfKept; docs/CODEGEN.md, "Reusing a built
// message"). Serialize sets its leaves again with the borrowed setters: a value below the
// threshold by its bytes (copied once, into the head), a larger one by its reference
// (zero-copy on the case's reference: no mem.Recover, no reference count); a list by
// Truncate(0) and Append. Echo sets the kept message's leaves from the decoded values the
// same way, a large one by its window of the input's reference. The case holds its values
// and inputs, unchanged, until Close, after the kept arena's Reset, so borrowing them is
// within the contract. The copy and zerocopy modes reset their arena and build a new message
// per op with the copying setters.
//
// Decode decodes zero-copy from the registered input (wire.Decode) and reads every field,
// into an arena Reset per op, as a server's input must be; the case holds its inputs until
// Close, after the arena's last Reset, so the arena borrows the case's reference
// (Arena.BorrowInput: no reference-count work per decode, as vtprotobuf's UnmarshalVTUnsafe
// aliases its input without one; vtprotobuf decodes into a reused message). Echo decodes so,
// then sets and serializes the response (hybrid: the kept message; copy and zerocopy: a new
// one in the decode arena, whose zero-copy fields share the input's reference and whose
// small ones are copied).
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
		c.small = append(c.small, allBelow(row, thr))
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
		c.inBytes = append(c.inBytes, b.Bytes())
	}
	if err := c.a.Reset(); err != nil {
		return nil, err
	}
	if c.borrow {
		maxVals := 0
		for _, vals := range c.vals {
			maxVals = max(maxVals, len(vals))
		}
		c.kept = newCFKept(c.kind, thr, maxVals)
	}
	return c, nil
}

type cfCase struct {
	kind    Kind
	vals    [][][]byte  // variant → values in registered memory
	vbufs   [][]mem.Buf // variant → the values' references (borrowed from bufs)
	small   []bool      // variant → every value is below the threshold
	inputs  []mem.Buf   // variant → serialized message in registered memory (borrowed from bufs)
	inBytes [][]byte    // variant → inputs[v].Bytes()
	cyc     cycle

	pool *mem.Pool
	bufs []mem.Buf // every reference this case owns
	a    *wire.Arena
	sga  wire.SGA // reused head buffer and zero-copy entry sink

	leaves [][]byte
	r      reader
	// borrow: Serialize and Echo set the kept message with the borrowed setters (the hybrid
	// mode; see Cornflakes).
	borrow bool
	kept   *cfKept // the hybrid mode's build side (nil in the other modes)
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
		c.leaves = l.AppendValues(c.leaves) // every value, as At returns it
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
	v := c.cyc.next()
	if c.kept != nil {
		c.kept.setBufs(c.vals[v], c.vbufs[v], c.small[v])
		return c.serializeSGA(c.kept.msg)
	}
	if err := c.a.Reset(); err != nil {
		return err
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
	v := c.cyc.next()
	dl, err := c.decode(c.inputs[v])
	if err != nil {
		return err
	}
	// codec.CheckCount inlined (as in the other libraries' harness), the error path a call.
	if err := codec.CheckCount(c.kind, len(c.leaves)); err != nil {
		return mismatch(err)
	}
	// What an echo server writes: each value decode read (c.leaves, as every library's echo
	// reads them) is set as it is. A value of at least the threshold lies in the decoded
	// (registered) input, so the new message shares the input's reference (no refcount
	// operation, no Recover lookup) and sends it zero-copy; a smaller one aliases the input
	// and is copied into the head at Serialize. The hybrid mode sets them in its kept
	// message with the borrowed setters (see Cornflakes).
	// A list takes every decoded value from dl at once (SetBorrowedFrom; the values are
	// c.leaves, as AppendValues read them), so it needs neither the input's reference nor
	// its bytes, and its typed SerializeSGA is called directly.
	if kp := c.kept; kp != nil {
		if kp.lmsg != nil {
			if err := kp.list.SetBorrowedFrom(dl); err != nil {
				return err
			}
			return kp.lmsg.SerializeSGA(&c.sga)
		}
		kp.setValues(c.leaves, c.inputs[v], c.inBytes[v])
		return c.serializeSGA(kp.msg)
	}
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
	if c.kept != nil {
		errs = append(errs, c.kept.a.Reset())
		c.kept = nil
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

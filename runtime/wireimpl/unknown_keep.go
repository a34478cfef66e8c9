package wireimpl

import (
	"encoding/binary"
	"fmt"
)

// Kept unknown fields (docs/WIRE_FORMAT.md "Unknown fields kept").
//
// A generated reader that decodes a message in the typed header form
// records the present fields its schema lacks (Decoder.KeepUnknown, called
// at the end of WireDecode): their number, kind and entry, and the input
// they point into. When the message is sized and serialized again its
// hooks take a slow path (Sizer.Keep, Encoder.Keep at the top of WireSizes
// and WireEncode) that writes the message in the typed form with the kept
// fields merged in field-number order among the known ones: scalars as
// they were, bytes values copied or (a value of a registered input at or
// above the arena's threshold) re-sent zero-copy as a window of the input
// the arena holds, lists and nested typed messages relocated into the new
// header. A message without kept fields, written without WriteTyped, never
// enters this path and keeps its bytes.

// KnownField is a field of a generated message's schema: its number and
// the kind its schema gives it. Generated code passes a static table of
// them, in ascending number order, to KeepUnknown.
type KnownField struct {
	Num  int32
	Kind Kind
}

// keptField is one recorded unknown field.
type keptField struct {
	num   uint32
	kind  Kind
	entry uint64
}

// keptSet is a message's recorded unknown fields and the input they point
// into. The set is only used while src is the message's own decoded input
// (a later decode of the message into another input makes it stale).
type keptSet struct {
	src    *source
	fields []keptField
}

// typedOnly is the kept set of a message made in an arena with WriteTyped:
// no fields, written in the typed form.
var typedOnly keptSet

var (
	keptSetType   = NewType[keptSet]()
	keptFieldType = NewType[keptField]()
)

// fieldsOf returns the kept fields of c that still belong to its input.
func (c *Core) fieldsOf() (*source, []keptField) {
	u := c.uk
	if u == nil || u.src == nil || u.src != c.src {
		return nil, nil
	}
	return u.src, u.fields
}

// HasUnknown reports whether c's message holds kept unknown fields (from a
// typed input it was decoded from).
func (c *Core) HasUnknown() bool {
	_, f := c.fieldsOf()
	return len(f) > 0
}

// UnknownNums appends the numbers of c's kept unknown fields, ascending.
func (c *Core) UnknownNums(dst []int) []int {
	_, fs := c.fieldsOf()
	for _, f := range fs {
		dst = append(dst, int(f.num))
	}
	return dst
}

// DropUnknown forgets c's kept unknown fields: the message is written
// without them (and, unless its arena has WriteTyped, in the untyped form).
func (c *Core) DropUnknown() {
	if c.uk != nil && c.uk != &typedOnly {
		c.uk = nil
		if c.a != nil && c.a.WriteTyped {
			c.uk = &typedOnly
		}
	}
}

// initTypedWrite marks a message made in an arena with WriteTyped (Core.Init).
func (c *Core) initTypedWrite() { c.uk = &typedOnly }

// Typed reports whether the message being decoded is in the typed header
// form (its generated WireDecode then calls KeepUnknown).
func (d *Decoder) Typed() bool {
	i := d.start + 3 // TypedFlag is bit 6 of the first word's last byte
	return uint(i) < uint(len(d.data)) && d.data[i]&(TypedFlag>>24) != 0
}

// KeepUnknown records in c the fields of the typed message being decoded
// that known (the schema's fields, ascending numbers) lacks. Each kept
// field is checked as a reader checks a field it knows (docs/WIRE_FORMAT.md
// reader rules 1-5 and the typed form's kinds; nested messages must be
// typed): its ranges in bounds, its regions and nested headers inside the
// message, after its fixed part and in field order among all the
// message's regions (known ones included, by their schema's kinds),
// counts at most MaxListLen, depth at most MaxDepth, and the relocated
// size of all of them at most the input's size (ErrTooLarge). A violation
// fails the decode (d's error). Untyped messages have no kinds and are
// never recorded.
func (d *Decoder) KeepUnknown(c *Core, known []KnownField) {
	if d.err != nil || !d.Typed() || d.end-d.start < 4 {
		return
	}
	src := d.src
	hdr := d.data[d.start:d.end]
	var buf [16]TypedField
	fields, fixed, err := ReadTypedHeader(hdr, buf[:0])
	if err != nil {
		d.fail(shiftErr(err, d.start))
		return
	}
	op := keptOp{src: src, limit: uint64(srcLen(src))}
	dyn := d.start + fixed
	n, k := 0, 0
	for i := range fields {
		f := &fields[i]
		for k < len(known) && int(known[k].Num) < f.Num {
			k++
		}
		if k < len(known) && int(known[k].Num) == f.Num {
			// A known field: its region (by the schema's kind, as the
			// generated reader took it) moves the order cursor.
			if err := knownRegion(d.data, known[k].Kind, f.Entry, &dyn, d.end); err != nil {
				d.fail(withField(err, d.start, f.Num))
				return
			}
			f.Num = 0 // not kept
			continue
		}
		if err := op.field(*f, d.start, d.end, &dyn, d.depth+1, 0); err != nil {
			d.fail(withField(err, d.start, f.Num))
			return
		}
		n++
	}
	if n == 0 {
		return
	}
	a := d.a
	kf, ok := keptFieldType.tryNewSlice(a, n)
	if !ok {
		d.fail(&DecodeError{Off: d.start, Reason: "keeping unknown fields", Err: ErrArenaLimit})
		return
	}
	u := keptSetType.New(a)
	u.src = src
	u.fields = kf[:0]
	for _, f := range fields {
		if f.Num != 0 {
			u.fields = append(u.fields, keptField{num: uint32(f.Num), kind: f.Kind, entry: f.Entry})
		}
	}
	c.uk = u
}

// shiftErr moves a *DecodeError's offset by off.
func shiftErr(err error, off int) error {
	if de, ok := err.(*DecodeError); ok {
		de.Off += off
	}
	return err
}

// withField names num in a *DecodeError without a field.
func withField(err error, off, num int) error {
	if de, ok := err.(*DecodeError); ok {
		if de.Field == 0 {
			de.Field = num
		}
		return err
	}
	return &DecodeError{Off: off, Field: num, Reason: "kept unknown field: " + err.Error(), Err: err}
}

func srcLen(src *source) int {
	n := len(src.data)
	if k := len(src.segs); k > 0 {
		last := src.segs[k-1]
		n = max(n, int(last.start)+len(last.data))
	}
	return n
}

// knownRegion advances the region cursor *dyn past the region a known
// field of kind k with entry e occupies, with the generated reader's rules.
func knownRegion(data []byte, k Kind, e uint64, dyn *int, end int) error {
	lo, hi := int(uint32(e)), int(uint32(e>>32))
	var n int
	switch k {
	case KindList1, KindList4, KindList8:
		if uint32(lo)&PackedFlag != 0 {
			return nil // out of line: not a header region
		}
		n = lo * kindWidth(k)
	case KindBytesList:
		n = lo * EntrySize
	case KindMessage:
		n = lo
	case KindMessageList:
		if lo == 0 {
			n = 0
			break
		}
		if hi < *dyn || hi > end || lo*EntrySize > end-hi {
			return malformed(0, 0, "list region out of range or overlapping")
		}
		last := hi + EntrySize*(lo-1)
		size := int(binary.LittleEndian.Uint32(data[last:]))
		eoff := int(binary.LittleEndian.Uint32(data[last+4:]))
		if eoff < hi+lo*EntrySize || eoff > end || size > end-eoff {
			return malformed(0, 0, "list elements out of range or overlapping")
		}
		*dyn = eoff + size
		return nil
	default:
		return nil
	}
	if lo > MaxListLen && k != KindMessage {
		return malformed(0, 0, "list count exceeds MaxListLen")
	}
	if hi < *dyn || hi > end || n > end-hi {
		return malformed(0, 0, "list region or nested message out of range or overlapping")
	}
	*dyn = hi + n
	return nil
}

func kindWidth(k Kind) int {
	switch k {
	case KindList4:
		return 4
	case KindList8:
		return 8
	}
	return 1
}

// keptOp walks kept fields and the typed messages they hold: checking them
// (decode), measuring them (s != nil) or writing them (e != nil).
type keptOp struct {
	src   *source
	s     *Sizer
	e     *Encoder
	limit uint64 // check: bound of hdr+cp
	hdr   uint64 // check: relocated header bytes
	cp    uint64 // check: relocated value bytes
}

var errKeptTooLarge = fmt.Errorf("kept unknown fields larger than their input: %w", ErrTooLarge)

// account adds header bytes h and value bytes c to the check's tally.
func (o *keptOp) account(h, c uint64) error {
	o.hdr += h
	o.cp += c
	if o.hdr+o.cp > o.limit {
		return errKeptTooLarge
	}
	return nil
}

// field handles kept field f of the message whose header is [start, end)
// of the input, whose regions so far end at *dyn; depth is the depth of a
// nested message it holds. When writing, f's new entry is written at slot
// (the caller took the entry).
func (o *keptOp) field(f TypedField, start, end int, dyn *int, depth, slot int) error {
	src := o.src
	data := src.data
	lo, hi := uint32(f.Entry), uint32(f.Entry>>32)
	region := func(off, n int) error {
		if off < *dyn || off > end || n > end-off {
			return malformed(start, f.Num, "kept field's list region or nested message out of range or overlapping")
		}
		*dyn = off + n
		return nil
	}
	switch f.Kind {
	case KindScalar:
		if o.e != nil {
			binary.LittleEndian.PutUint64(o.e.dst[slot:], f.Entry)
		}
		return nil
	case KindBytes:
		if !src.checkRef(hi, lo) {
			return malformed(start, f.Num, "kept field's data range out of bounds")
		}
		return o.value(hi, lo, slot)
	case KindList1, KindList4, KindList8:
		w := uint32(kindWidth(f.Kind))
		n := lo &^ PackedFlag
		if n > MaxListLen {
			return malformed(start, f.Num, "kept list count exceeds MaxListLen")
		}
		var p []byte
		if lo&PackedFlag != 0 {
			if n == 0 || f.Kind == KindList1 || !src.checkRef(hi, n*w) {
				return malformed(start, f.Num, "kept out-of-line list invalid or out of bounds")
			}
			if o.e != nil {
				p = src.ref(hi, n*w).data
			}
		} else {
			if err := region(int(hi), int(n*w)); err != nil {
				return err
			}
			p = data[hi : hi+n*w]
		}
		r, err := o.region(int(n * w))
		if err != nil {
			return err
		}
		if o.e != nil {
			copy(o.e.dst[r:r+int(n*w)], p)
			o.e.put32x2(slot, int(n), r)
		}
		return nil
	case KindBytesList:
		if lo > MaxListLen {
			return malformed(start, f.Num, "kept list count exceeds MaxListLen")
		}
		if err := region(int(hi), int(lo)*EntrySize); err != nil {
			return err
		}
		r, err := o.region(int(lo) * EntrySize)
		if err != nil {
			return err
		}
		for j := range lo {
			e := binary.LittleEndian.Uint64(data[hi+EntrySize*j:])
			n, off := uint32(e), uint32(e>>32)
			if !src.checkRef(off, n) {
				return malformed(int(hi+EntrySize*j), f.Num, "kept field's data range out of bounds")
			}
			if err := o.value(off, n, r+EntrySize*int(j)); err != nil {
				return err
			}
		}
		if o.e != nil {
			o.e.put32x2(slot, int(lo), r)
		}
		return nil
	case KindMessage:
		if lo < 4 {
			return malformed(start, f.Num, "kept nested message too small")
		}
		if err := region(int(hi), int(lo)); err != nil {
			return err
		}
		at, size, err := o.message(int(hi), int(hi+lo), depth)
		if err == nil && o.e != nil {
			o.e.put32x2(slot, size, at)
		}
		return err
	case KindMessageList:
		if lo > MaxListLen {
			return malformed(start, f.Num, "kept list count exceeds MaxListLen")
		}
		if err := region(int(hi), int(lo)*EntrySize); err != nil {
			return err
		}
		r, err := o.region(int(lo) * EntrySize)
		if err != nil {
			return err
		}
		for j := range lo {
			e := binary.LittleEndian.Uint64(data[hi+EntrySize*j:])
			n, off := uint32(e), uint32(e>>32)
			if n < 4 {
				return malformed(int(hi+EntrySize*j), f.Num, "kept list element too small")
			}
			if err := region(int(off), int(n)); err != nil {
				return err
			}
			at, size, err := o.message(int(off), int(off+n), depth)
			if err != nil {
				return err
			}
			if o.e != nil {
				o.e.put32x2(r+EntrySize*int(j), size, at)
			}
		}
		if o.e != nil {
			o.e.put32x2(slot, int(lo), r)
		}
		return nil
	}
	return malformed(start, f.Num, "invalid field kind")
}

// value handles a bytes value [off, off+n) of the input (checked); when
// writing, its {size, offset} entry goes to slot.
func (o *keptOp) value(off, n uint32, slot int) error {
	switch {
	case o.e != nil:
		b := o.src.ref(off, n)
		o.e.data(slot, &b)
		return o.e.err
	case o.s != nil:
		if n == 0 {
			return nil
		}
		if int(off)+int(n) <= len(o.src.data) && !o.src.window(int(off), int(n)).IsZero() {
			o.s.zc += int(n)
			o.s.entries++
		} else {
			o.s.copied += int(n)
		}
		return nil
	}
	return o.account(0, uint64(n))
}

// region reserves n header bytes: their offset when writing.
func (o *keptOp) region(n int) (int, error) {
	switch {
	case o.e != nil:
		r := o.e.region(n)
		if r < 0 {
			return 0, o.e.err
		}
		return r, nil
	case o.s != nil:
		o.s.header += n
		return 0, nil
	}
	return 0, o.account(uint64(n), 0)
}

// message handles the nested typed message [start, end) of the input at
// depth: checked, measured, or written at the header cursor (returning its
// offset and size).
func (o *keptOp) message(start, end, depth int) (at, size int, err error) {
	if depth > MaxDepth {
		return 0, 0, &DecodeError{Off: start, Reason: "kept nested message deeper than MaxDepth", Err: ErrTooDeep}
	}
	var buf [8]TypedField
	fields, fixed, err := ReadTypedHeader(o.src.data[start:end], buf[:0])
	if err != nil {
		return 0, 0, shiftErr(err, start)
	}
	fs := typedFixedSize(fields)
	h, err := o.region(fs)
	if err != nil {
		return 0, 0, err
	}
	ents := h + fs - EntrySize*len(fields)
	if o.e != nil {
		if _, err := AppendTypedHeader(o.e.dst[h:h], fields); err != nil {
			o.e.fail(err)
			return 0, 0, err
		}
	}
	dyn := start + fixed
	for i, f := range fields {
		if err := o.field(f, start, end, &dyn, depth+1, ents+EntrySize*i); err != nil {
			return 0, 0, err
		}
	}
	if o.e != nil {
		return h, o.e.hdr - h, nil
	}
	return 0, 0, nil
}

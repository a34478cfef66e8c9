package wireimpl

// Sizer computes an object's Sizes. Generated WireSizes methods drive it:
//
//	func (x *Foo) WireSizes(s *wire.Sizer) {
//		mk := s.Begin()
//		s.Scalar(1, x.xId != 0)
//		s.Bytes(2, &x.xVal, x.xVal.Len() != 0)
//		s.BytesList(3, &x.xVals)
//		wire.SizeMessage(s, 4, &x.xChild, NewChild)
//		s.End(&x.cf, mk)
//	}
//
// Fields must be visited in ascending field-number order.
type Sizer struct {
	a                           *Arena
	header, copied, zc, entries int
	count, maxNum               int // tally of the current message
	depth                       int
	err                         error
	typed                       uint8 // 1 inside a message written typed (unknown_keep_write.go)
}

// SizerMark saves the enclosing message's tally across a nested message.
type SizerMark struct{ count, maxNum int }

// Begin starts a message.
func (s *Sizer) Begin() SizerMark {
	mk := SizerMark{s.count, s.maxNum}
	s.count, s.maxNum = 0, 0
	s.depth++
	if s.depth > MaxDepth+1 && s.err == nil {
		s.err = ErrTooDeep
	}
	return mk
}

// End finishes a message: its fixed part (bitmap and entries) is added to
// the header size, and the counts Serialize needs are cached in c.
func (s *Sizer) End(c *Core, mk SizerMark) {
	if s.maxNum > MaxFieldNumber {
		s.endSparse(c, mk) // sparse.go
		return
	}
	w := bitmapWords(s.maxNum)
	c.words = uint32(w)
	c.count = uint32(s.count)
	s.header += 4 + 4*w + EntrySize*s.count
	s.count, s.maxNum = mk.count, mk.maxNum
	s.depth--
}

func bitmapWords(maxNum int) int {
	if maxNum <= 0 {
		return 0
	}
	return (maxNum-1)/32 + 1
}

func (s *Sizer) field(num int) {
	s.count++
	s.maxNum = num
}

// Scalar counts a scalar field (bool, integers, enums, floats) if present.
func (s *Sizer) Scalar(num int, present bool) {
	if present {
		s.field(num)
	}
}

// Bytes counts a bytes field if present.
func (s *Sizer) Bytes(num int, b *Bytes, present bool) {
	if present {
		s.field(num)
		s.data(b)
	}
}

// String counts a string field if present.
func (s *Sizer) String(num int, v *String, present bool) {
	if present {
		s.field(num)
		s.data(&v.b)
	}
}

func (s *Sizer) data(b *Bytes) {
	if b.buf.IsZero() {
		s.copied += len(b.data)
	} else {
		s.zc += len(b.data)
		s.entries++
	}
}

// BytesList counts a list of bytes (present when not empty). A lazily
// decoded list is loaded first; a load error is reported by Serialize.
func (s *Sizer) BytesList(num int, l *BytesList) {
	if l.lz.src != nil { // decoded: check it, then copy the view for the Encoder
		if l.lz.n == 0 {
			return
		}
		if err := l.Load(s.a); err != nil {
			s.fail(err)
			return
		}
		l.materialize()
	}
	if len(l.items) == 0 {
		return
	}
	s.field(num)
	s.header += EntrySize * len(l.items)
	copied, zc, entries := s.copied, s.zc, s.entries
	for i := range l.items {
		b := &l.items[i]
		if b.buf.IsZero() {
			copied += len(b.data)
		} else {
			zc += len(b.data)
			entries++
		}
	}
	s.copied, s.zc, s.entries = copied, zc, entries
}

// StringList counts a list of strings (present when not empty).
func (s *Sizer) StringList(num int, l *StringList) {
	if l.Len() == 0 {
		return
	}
	if err := l.Load(s.a); err != nil {
		s.fail(err)
		return
	}
	s.field(num)
	s.header += EntrySize * len(l.items)
	for i := range l.items {
		s.data(&l.items[i].b)
	}
}

func (s *Sizer) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

// SizeScalars counts a list of scalars (present when not empty).
func SizeScalars[T Scalar](s *Sizer, num int, l *ScalarList[T]) {
	if l.Len() == 0 {
		return
	}
	if err := l.Load(s.a); err != nil {
		s.fail(err)
		return
	}
	s.field(num)
	sizePacked(s, l) // packed.go
}

// SizeMessages counts a list of messages (present when not empty); newT
// (the generated New function) makes elements of a lazily decoded list.
// An element whose arena was Reset since it was made fails the sizes with
// ErrArenaReset (Fresh) and is not walked.
func SizeMessages[P MessagePtr](s *Sizer, num int, l *MessageList[P], newT func(*Arena) P) {
	if l.Len() == 0 {
		return
	}
	if err := l.Load(s.a, newT); err != nil {
		s.fail(err)
		return
	}
	if s.depth > MaxDepth {
		s.fail(ErrTooDeep)
		return
	}
	s.field(num)
	s.header += EntrySize * len(l.items)
	for _, m := range l.items {
		if s.Fresh(m.WireCore()) {
			m.WireSizes(s)
		}
	}
}

// SizeMessage counts a nested message field (present when set). A message
// whose arena was Reset since it was made fails the sizes with
// ErrArenaReset (Fresh) and is not walked.
func SizeMessage[P MessagePtr](s *Sizer, num int, n *Nested[P], newT func(*Arena) P) {
	if !n.Present() {
		return
	}
	if s.depth > MaxDepth {
		s.fail(ErrTooDeep)
		return
	}
	p, err := n.Get(s.a, newT)
	if err != nil {
		s.fail(err)
		return
	}
	if !s.Fresh(p.WireCore()) {
		return
	}
	s.field(num)
	p.WireSizes(s)
}

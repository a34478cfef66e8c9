// Reference shape of the code that protoc-gen-go-cornflakes generates, written
// by hand (see README.md) from testmsg.proto.

package testmsg

import (
	"math"
	"strconv"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/runtime/wireimpl"
	"github.com/cornflakes-go/cornflakes/wire"
)

// Color is the enum cornflakes.testmsg.Color.
type Color int32

// Values of Color.
const (
	Color_UNSPECIFIED Color = 0
	Color_RED         Color = 1
	Color_GREEN       Color = 2
	Color_BLUE        Color = 3
)

// String returns the value's name, or its number when it has none.
func (v Color) String() string {
	switch v {
	case 0:
		return "UNSPECIFIED"
	case 1:
		return "RED"
	case 2:
		return "GREEN"
	case 3:
		return "BLUE"
	}
	return strconv.Itoa(int(v))
}

// Inner is the message cornflakes.testmsg.Inner. It is the element and nested type of AllTypes
// and nests itself (deep-nesting tests).
type Inner struct {
	cf     wireimpl.Core
	xId    int64
	xData  wireimpl.Bytes
	xTags  wireimpl.StringList
	xChild wireimpl.Nested[*Inner]
}

var innerType = wireimpl.NewType[Inner]()

// NewInner returns an empty Inner in a; it and everything it holds are valid
// until a.Reset.
func NewInner(a *wire.Arena) *Inner {
	x := innerType.New((*wireimpl.Arena)(a))
	x.cf.Init((*wireimpl.Arena)(a))
	return x
}

// GetId returns field id = 1.
func (x *Inner) GetId() int64 { return x.xId }

// HasId reports whether field id = 1 is not zero.
func (x *Inner) HasId() bool { return x.xId != 0 }

// SetId sets field id = 1.
func (x *Inner) SetId(v int64) { x.xId = v }

// ClearId clears field id = 1.
func (x *Inner) ClearId() { x.xId = 0 }

// GetData returns field data = 2. The slice aliases the message's memory (arena,
// registered memory or decoded input): do not modify it; valid until the arena's Reset.
func (x *Inner) GetData() []byte { return x.xData.Get() }

// HasData reports whether field data = 2 is not empty.
func (x *Inner) HasData() bool { return x.xData.Len() != 0 }

// SetData sets field data = 2 (copied below the arena's threshold, else zero-copy
// when v lies in registered memory).
func (x *Inner) SetData(v []byte) {
	x.xData.Set(x.cf.Arena(), v)
}

// SetDataBuf sets field data = 2 from a registered buffer (the arena takes its own
// reference; the caller keeps b).
func (x *Inner) SetDataBuf(b mem.Buf) {
	x.xData.SetBuf(x.cf.Arena(), b)
}

// ClearData clears field data = 2.
func (x *Inner) ClearData() {
	x.xData.Clear()
}

// GetTags returns the list tags = 3 (decoding it on first access).
func (x *Inner) GetTags() (*wire.StringList, error) {
	return (*wire.StringList)(&x.xTags), x.xTags.Load(x.cf.Arena())
}

// InitTags empties the list tags = 3, reserves room for n elements, and returns it.
func (x *Inner) InitTags(n int) *wire.StringList {
	x.xTags.Init(x.cf.Arena(), n)
	return (*wire.StringList)(&x.xTags)
}

// HasTags reports whether the list tags = 3 is not empty.
func (x *Inner) HasTags() bool { return x.xTags.Len() != 0 }

// ClearTags empties the list tags = 3.
func (x *Inner) ClearTags() { x.xTags.Init(x.cf.Arena(), 0) }

// GetChild returns field child = 4 (nil when absent), decoding it on first access.
func (x *Inner) GetChild() (*Inner, error) { return x.xChild.Get(x.cf.Arena(), newInner) }

// HasChild reports whether field child = 4 is set.
func (x *Inner) HasChild() bool { return x.xChild.Present() }

// SetChild sets field child = 4 to v (a message of the same arena; nil clears it).
func (x *Inner) SetChild(v *Inner) { x.xChild.Set(v) }

// InitChild sets field child = 4 to a new empty message and returns it.
func (x *Inner) InitChild() *Inner {
	v := NewInner((*wire.Arena)(x.cf.Arena()))
	x.xChild.Set(v)
	return v
}

// ClearChild unsets field child = 4.
func (x *Inner) ClearChild() { x.xChild.Clear() }

// Sizes implements wire.Object.
func (x *Inner) Sizes() wire.Sizes { return wire.SizesOf(x) }

// Serialize implements wire.Object.
func (x *Inner) Serialize(dst []byte, sink wire.EntrySink) error {
	return wire.SerializeTo(x, dst, sink)
}

// Decode decodes x from b zero-copy; the arena holds a reference on b until
// Reset (the caller still releases its own).
func (x *Inner) Decode(b mem.Buf) error { return wire.Decode(x, b) }

// DecodeBytes decodes x from p, aliasing p (see wire.DecodeBytes for lifetimes).
func (x *Inner) DecodeBytes(p []byte) error { return wire.DecodeBytes(x, p) }

// WireCore implements wire.Msg.
func (x *Inner) WireCore() *wireimpl.Core { return &x.cf }

// WireSizes implements wire.Msg.
func (x *Inner) WireSizes(s *wireimpl.Sizer) {
	mk := s.Begin()
	s.Scalar(1, x.xId != 0)
	s.Bytes(2, &x.xData, x.xData.Len() != 0)
	s.StringList(3, &x.xTags)
	wireimpl.SizeMessage(s, 4, &x.xChild, newInner)
	s.End(&x.cf, mk)
}

// WireEncode implements wire.Msg.
func (x *Inner) WireEncode(e *wireimpl.Encoder) {
	mk := e.Begin(&x.cf)
	if x.xId != 0 {
		e.Int64(1, x.xId)
	}
	if x.xData.Len() != 0 {
		e.Bytes(2, &x.xData)
	}
	e.StringList(3, &x.xTags)
	wireimpl.EncodeMessage(e, 4, &x.xChild)
	e.End(mk)
}

// WireDecode implements wire.Msg.
func (x *Inner) WireDecode(d *wireimpl.Decoder) {
	x.xId = d.Int64(1)
	d.Bytes(2, &x.xData)
	d.StringList(3, &x.xTags)
	wireimpl.DecodeMessage(d, 4, &x.xChild)
}

// Equal reports whether x and y hold the same fields (floats compared by bits;
// lists and nested messages are decoded as needed; a decode error means unequal).
func (x *Inner) Equal(y *Inner) bool {
	if x == nil || y == nil {
		return x == y
	}
	if x.xId != y.xId {
		return false
	}
	if !x.xData.Equal(&y.xData) {
		return false
	}
	if l, m, ok := wireimpl.Loaded2(x.GetTags, y.GetTags); !ok || !l.Equal(m) {
		return false
	}
	if l, m, ok := wireimpl.Loaded2(x.GetChild, y.GetChild); !ok || !l.Equal(m) {
		return false
	}
	return true
}

// String returns a one-line text form of x (for debugging).
func (x *Inner) String() string {
	var t wireimpl.Text
	t.Begin("Inner")
	if x.xId != 0 {
		t.Int("id", x.xId)
	}
	if x.xData.Len() != 0 {
		t.Bytes("data", &x.xData)
	}
	if !x.HasTags() {
	} else if _, err := x.GetTags(); err != nil {
		t.Err("tags", err)
	} else {
		t.StringList("tags", &x.xTags)
	}
	if x.HasChild() {
		if v, err := x.GetChild(); err != nil {
			t.Err("child", err)
		} else {
			t.Message("child", v)
		}
	}
	return t.End()
}

// AllTypes is the message cornflakes.testmsg.AllTypes. It uses every supported field kind, explicit
// presence, and a sparse field number (1000).
type AllTypes struct {
	cf       wireimpl.Core
	xI32     int32
	xI64     int64
	xU32     uint32
	xU64     uint64
	xS32     int32
	xS64     int64
	xFx32    uint32
	xFx64    uint64
	xSfx32   int32
	xSfx64   int64
	xFlag    bool
	xFl      float32
	xDb      float64
	xColor   Color
	xData    wireimpl.Bytes
	xName    wireimpl.String
	xOptI32  int32
	xOptData wireimpl.Bytes
	xOptName wireimpl.String
	xOptFlag bool
	xOptDb   float64
	xBlobs   wireimpl.BytesList
	xNames   wireimpl.StringList
	xRI32    wireimpl.ScalarList[int32]
	xRI64    wireimpl.ScalarList[int64]
	xRU32    wireimpl.ScalarList[uint32]
	xRU64    wireimpl.ScalarList[uint64]
	xRBool   wireimpl.ScalarList[bool]
	xRFl     wireimpl.ScalarList[float32]
	xRDb     wireimpl.ScalarList[float64]
	xRColor  wireimpl.ScalarList[int32]
	xKids    wireimpl.MessageList[*Inner]
	xChild   wireimpl.Nested[*Inner]
	xFar     wireimpl.Bytes
}

var allTypesType = wireimpl.NewType[AllTypes]()

// NewAllTypes returns an empty AllTypes in a; it and everything it holds are valid
// until a.Reset.
func NewAllTypes(a *wire.Arena) *AllTypes {
	x := allTypesType.New((*wireimpl.Arena)(a))
	x.cf.Init((*wireimpl.Arena)(a))
	return x
}

// GetI32 returns field i32 = 1.
func (x *AllTypes) GetI32() int32 { return x.xI32 }

// HasI32 reports whether field i32 = 1 is not zero.
func (x *AllTypes) HasI32() bool { return x.xI32 != 0 }

// SetI32 sets field i32 = 1.
func (x *AllTypes) SetI32(v int32) { x.xI32 = v }

// ClearI32 clears field i32 = 1.
func (x *AllTypes) ClearI32() { x.xI32 = 0 }

// GetI64 returns field i64 = 2.
func (x *AllTypes) GetI64() int64 { return x.xI64 }

// HasI64 reports whether field i64 = 2 is not zero.
func (x *AllTypes) HasI64() bool { return x.xI64 != 0 }

// SetI64 sets field i64 = 2.
func (x *AllTypes) SetI64(v int64) { x.xI64 = v }

// ClearI64 clears field i64 = 2.
func (x *AllTypes) ClearI64() { x.xI64 = 0 }

// GetU32 returns field u32 = 3.
func (x *AllTypes) GetU32() uint32 { return x.xU32 }

// HasU32 reports whether field u32 = 3 is not zero.
func (x *AllTypes) HasU32() bool { return x.xU32 != 0 }

// SetU32 sets field u32 = 3.
func (x *AllTypes) SetU32(v uint32) { x.xU32 = v }

// ClearU32 clears field u32 = 3.
func (x *AllTypes) ClearU32() { x.xU32 = 0 }

// GetU64 returns field u64 = 4.
func (x *AllTypes) GetU64() uint64 { return x.xU64 }

// HasU64 reports whether field u64 = 4 is not zero.
func (x *AllTypes) HasU64() bool { return x.xU64 != 0 }

// SetU64 sets field u64 = 4.
func (x *AllTypes) SetU64(v uint64) { x.xU64 = v }

// ClearU64 clears field u64 = 4.
func (x *AllTypes) ClearU64() { x.xU64 = 0 }

// GetS32 returns field s32 = 5.
func (x *AllTypes) GetS32() int32 { return x.xS32 }

// HasS32 reports whether field s32 = 5 is not zero.
func (x *AllTypes) HasS32() bool { return x.xS32 != 0 }

// SetS32 sets field s32 = 5.
func (x *AllTypes) SetS32(v int32) { x.xS32 = v }

// ClearS32 clears field s32 = 5.
func (x *AllTypes) ClearS32() { x.xS32 = 0 }

// GetS64 returns field s64 = 6.
func (x *AllTypes) GetS64() int64 { return x.xS64 }

// HasS64 reports whether field s64 = 6 is not zero.
func (x *AllTypes) HasS64() bool { return x.xS64 != 0 }

// SetS64 sets field s64 = 6.
func (x *AllTypes) SetS64(v int64) { x.xS64 = v }

// ClearS64 clears field s64 = 6.
func (x *AllTypes) ClearS64() { x.xS64 = 0 }

// GetFx32 returns field fx32 = 7.
func (x *AllTypes) GetFx32() uint32 { return x.xFx32 }

// HasFx32 reports whether field fx32 = 7 is not zero.
func (x *AllTypes) HasFx32() bool { return x.xFx32 != 0 }

// SetFx32 sets field fx32 = 7.
func (x *AllTypes) SetFx32(v uint32) { x.xFx32 = v }

// ClearFx32 clears field fx32 = 7.
func (x *AllTypes) ClearFx32() { x.xFx32 = 0 }

// GetFx64 returns field fx64 = 8.
func (x *AllTypes) GetFx64() uint64 { return x.xFx64 }

// HasFx64 reports whether field fx64 = 8 is not zero.
func (x *AllTypes) HasFx64() bool { return x.xFx64 != 0 }

// SetFx64 sets field fx64 = 8.
func (x *AllTypes) SetFx64(v uint64) { x.xFx64 = v }

// ClearFx64 clears field fx64 = 8.
func (x *AllTypes) ClearFx64() { x.xFx64 = 0 }

// GetSfx32 returns field sfx32 = 9.
func (x *AllTypes) GetSfx32() int32 { return x.xSfx32 }

// HasSfx32 reports whether field sfx32 = 9 is not zero.
func (x *AllTypes) HasSfx32() bool { return x.xSfx32 != 0 }

// SetSfx32 sets field sfx32 = 9.
func (x *AllTypes) SetSfx32(v int32) { x.xSfx32 = v }

// ClearSfx32 clears field sfx32 = 9.
func (x *AllTypes) ClearSfx32() { x.xSfx32 = 0 }

// GetSfx64 returns field sfx64 = 10.
func (x *AllTypes) GetSfx64() int64 { return x.xSfx64 }

// HasSfx64 reports whether field sfx64 = 10 is not zero.
func (x *AllTypes) HasSfx64() bool { return x.xSfx64 != 0 }

// SetSfx64 sets field sfx64 = 10.
func (x *AllTypes) SetSfx64(v int64) { x.xSfx64 = v }

// ClearSfx64 clears field sfx64 = 10.
func (x *AllTypes) ClearSfx64() { x.xSfx64 = 0 }

// GetFlag returns field flag = 11.
func (x *AllTypes) GetFlag() bool { return x.xFlag }

// HasFlag reports whether field flag = 11 is not zero.
func (x *AllTypes) HasFlag() bool { return x.xFlag }

// SetFlag sets field flag = 11.
func (x *AllTypes) SetFlag(v bool) { x.xFlag = v }

// ClearFlag clears field flag = 11.
func (x *AllTypes) ClearFlag() { x.xFlag = false }

// GetFl returns field fl = 12.
func (x *AllTypes) GetFl() float32 { return x.xFl }

// HasFl reports whether field fl = 12 is not zero.
func (x *AllTypes) HasFl() bool { return math.Float32bits(x.xFl) != 0 }

// SetFl sets field fl = 12.
func (x *AllTypes) SetFl(v float32) { x.xFl = v }

// ClearFl clears field fl = 12.
func (x *AllTypes) ClearFl() { x.xFl = 0 }

// GetDb returns field db = 13.
func (x *AllTypes) GetDb() float64 { return x.xDb }

// HasDb reports whether field db = 13 is not zero.
func (x *AllTypes) HasDb() bool { return math.Float64bits(x.xDb) != 0 }

// SetDb sets field db = 13.
func (x *AllTypes) SetDb(v float64) { x.xDb = v }

// ClearDb clears field db = 13.
func (x *AllTypes) ClearDb() { x.xDb = 0 }

// GetColor returns field color = 14.
func (x *AllTypes) GetColor() Color { return x.xColor }

// HasColor reports whether field color = 14 is not zero.
func (x *AllTypes) HasColor() bool { return x.xColor != 0 }

// SetColor sets field color = 14.
func (x *AllTypes) SetColor(v Color) { x.xColor = v }

// ClearColor clears field color = 14.
func (x *AllTypes) ClearColor() { x.xColor = 0 }

// GetData returns field data = 15. The slice aliases the message's memory (arena,
// registered memory or decoded input): do not modify it; valid until the arena's Reset.
func (x *AllTypes) GetData() []byte { return x.xData.Get() }

// HasData reports whether field data = 15 is not empty.
func (x *AllTypes) HasData() bool { return x.xData.Len() != 0 }

// SetData sets field data = 15 (copied below the arena's threshold, else zero-copy
// when v lies in registered memory).
func (x *AllTypes) SetData(v []byte) {
	x.xData.Set(x.cf.Arena(), v)
}

// SetDataBuf sets field data = 15 from a registered buffer (the arena takes its own
// reference; the caller keeps b).
func (x *AllTypes) SetDataBuf(b mem.Buf) {
	x.xData.SetBuf(x.cf.Arena(), b)
}

// ClearData clears field data = 15.
func (x *AllTypes) ClearData() {
	x.xData.Clear()
}

// GetName returns field name = 16, or wire.ErrInvalidUTF8 when it is not valid UTF-8.
// The string aliases the message's memory: valid until the arena's Reset.
func (x *AllTypes) GetName() (string, error) { return x.xName.Get() }

// GetNameBytes returns field name = 16 without a UTF-8 check (aliasing; valid until Reset).
func (x *AllTypes) GetNameBytes() []byte { return x.xName.Bytes() }

// HasName reports whether field name = 16 is not empty.
func (x *AllTypes) HasName() bool { return x.xName.Len() != 0 }

// SetName sets field name = 16 (copied below the arena's threshold, else zero-copy
// when v lies in registered memory).
func (x *AllTypes) SetName(v string) {
	x.xName.SetString(x.cf.Arena(), v)
}

// SetNameBytes sets field name = 16 from bytes (hybrid rule of SetName).
func (x *AllTypes) SetNameBytes(v []byte) {
	x.xName.Set(x.cf.Arena(), v)
}

// SetNameBuf sets field name = 16 from a registered buffer (the arena takes its own
// reference; the caller keeps b).
func (x *AllTypes) SetNameBuf(b mem.Buf) {
	x.xName.SetBuf(x.cf.Arena(), b)
}

// ClearName clears field name = 16.
func (x *AllTypes) ClearName() {
	x.xName.Clear()
}

// GetOptI32 returns field opt_i32 = 17.
func (x *AllTypes) GetOptI32() int32 { return x.xOptI32 }

// HasOptI32 reports whether field opt_i32 = 17 is set.
func (x *AllTypes) HasOptI32() bool { return x.cf.Has(0) }

// SetOptI32 sets field opt_i32 = 17.
func (x *AllTypes) SetOptI32(v int32) {
	x.xOptI32 = v
	x.cf.SetHas(0)
}

// ClearOptI32 unsets field opt_i32 = 17.
func (x *AllTypes) ClearOptI32() {
	x.xOptI32 = 0
	x.cf.ClearHas(0)
}

// GetOptData returns field opt_data = 18. The slice aliases the message's memory (arena,
// registered memory or decoded input): do not modify it; valid until the arena's Reset.
func (x *AllTypes) GetOptData() []byte { return x.xOptData.Get() }

// HasOptData reports whether field opt_data = 18 is set.
func (x *AllTypes) HasOptData() bool { return x.cf.Has(1) }

// SetOptData sets field opt_data = 18 (copied below the arena's threshold, else zero-copy
// when v lies in registered memory).
func (x *AllTypes) SetOptData(v []byte) {
	x.xOptData.Set(x.cf.Arena(), v)
	x.cf.SetHas(1)
}

// SetOptDataBuf sets field opt_data = 18 from a registered buffer (the arena takes its own
// reference; the caller keeps b).
func (x *AllTypes) SetOptDataBuf(b mem.Buf) {
	x.xOptData.SetBuf(x.cf.Arena(), b)
	x.cf.SetHas(1)
}

// ClearOptData clears field opt_data = 18.
func (x *AllTypes) ClearOptData() {
	x.xOptData.Clear()
	x.cf.ClearHas(1)
}

// GetOptName returns field opt_name = 19, or wire.ErrInvalidUTF8 when it is not valid UTF-8.
// The string aliases the message's memory: valid until the arena's Reset.
func (x *AllTypes) GetOptName() (string, error) { return x.xOptName.Get() }

// GetOptNameBytes returns field opt_name = 19 without a UTF-8 check (aliasing; valid until Reset).
func (x *AllTypes) GetOptNameBytes() []byte { return x.xOptName.Bytes() }

// HasOptName reports whether field opt_name = 19 is set.
func (x *AllTypes) HasOptName() bool { return x.cf.Has(2) }

// SetOptName sets field opt_name = 19 (copied below the arena's threshold, else zero-copy
// when v lies in registered memory).
func (x *AllTypes) SetOptName(v string) {
	x.xOptName.SetString(x.cf.Arena(), v)
	x.cf.SetHas(2)
}

// SetOptNameBytes sets field opt_name = 19 from bytes (hybrid rule of SetOptName).
func (x *AllTypes) SetOptNameBytes(v []byte) {
	x.xOptName.Set(x.cf.Arena(), v)
	x.cf.SetHas(2)
}

// SetOptNameBuf sets field opt_name = 19 from a registered buffer (the arena takes its own
// reference; the caller keeps b).
func (x *AllTypes) SetOptNameBuf(b mem.Buf) {
	x.xOptName.SetBuf(x.cf.Arena(), b)
	x.cf.SetHas(2)
}

// ClearOptName clears field opt_name = 19.
func (x *AllTypes) ClearOptName() {
	x.xOptName.Clear()
	x.cf.ClearHas(2)
}

// GetOptFlag returns field opt_flag = 20.
func (x *AllTypes) GetOptFlag() bool { return x.xOptFlag }

// HasOptFlag reports whether field opt_flag = 20 is set.
func (x *AllTypes) HasOptFlag() bool { return x.cf.Has(3) }

// SetOptFlag sets field opt_flag = 20.
func (x *AllTypes) SetOptFlag(v bool) {
	x.xOptFlag = v
	x.cf.SetHas(3)
}

// ClearOptFlag unsets field opt_flag = 20.
func (x *AllTypes) ClearOptFlag() {
	x.xOptFlag = false
	x.cf.ClearHas(3)
}

// GetOptDb returns field opt_db = 21.
func (x *AllTypes) GetOptDb() float64 { return x.xOptDb }

// HasOptDb reports whether field opt_db = 21 is set.
func (x *AllTypes) HasOptDb() bool { return x.cf.Has(4) }

// SetOptDb sets field opt_db = 21.
func (x *AllTypes) SetOptDb(v float64) {
	x.xOptDb = v
	x.cf.SetHas(4)
}

// ClearOptDb unsets field opt_db = 21.
func (x *AllTypes) ClearOptDb() {
	x.xOptDb = 0
	x.cf.ClearHas(4)
}

// GetBlobs returns the list blobs = 22 (decoding it on first access).
func (x *AllTypes) GetBlobs() (*wire.BytesList, error) {
	return (*wire.BytesList)(&x.xBlobs), x.xBlobs.Load(x.cf.Arena())
}

// InitBlobs empties the list blobs = 22, reserves room for n elements, and returns it.
func (x *AllTypes) InitBlobs(n int) *wire.BytesList {
	x.xBlobs.Init(x.cf.Arena(), n)
	return (*wire.BytesList)(&x.xBlobs)
}

// HasBlobs reports whether the list blobs = 22 is not empty.
func (x *AllTypes) HasBlobs() bool { return x.xBlobs.Len() != 0 }

// ClearBlobs empties the list blobs = 22.
func (x *AllTypes) ClearBlobs() { x.xBlobs.Init(x.cf.Arena(), 0) }

// GetNames returns the list names = 23 (decoding it on first access).
func (x *AllTypes) GetNames() (*wire.StringList, error) {
	return (*wire.StringList)(&x.xNames), x.xNames.Load(x.cf.Arena())
}

// InitNames empties the list names = 23, reserves room for n elements, and returns it.
func (x *AllTypes) InitNames(n int) *wire.StringList {
	x.xNames.Init(x.cf.Arena(), n)
	return (*wire.StringList)(&x.xNames)
}

// HasNames reports whether the list names = 23 is not empty.
func (x *AllTypes) HasNames() bool { return x.xNames.Len() != 0 }

// ClearNames empties the list names = 23.
func (x *AllTypes) ClearNames() { x.xNames.Init(x.cf.Arena(), 0) }

// GetRI32 returns the list r_i32 = 24 (decoding it on first access).
func (x *AllTypes) GetRI32() (*wire.ScalarList[int32], error) {
	return (*wire.ScalarList[int32])(&x.xRI32), x.xRI32.Load(x.cf.Arena())
}

// InitRI32 empties the list r_i32 = 24, reserves room for n elements, and returns it.
func (x *AllTypes) InitRI32(n int) *wire.ScalarList[int32] {
	x.xRI32.Init(x.cf.Arena(), n)
	return (*wire.ScalarList[int32])(&x.xRI32)
}

// HasRI32 reports whether the list r_i32 = 24 is not empty.
func (x *AllTypes) HasRI32() bool { return x.xRI32.Len() != 0 }

// ClearRI32 empties the list r_i32 = 24.
func (x *AllTypes) ClearRI32() { x.xRI32.Init(x.cf.Arena(), 0) }

// GetRI64 returns the list r_i64 = 25 (decoding it on first access).
func (x *AllTypes) GetRI64() (*wire.ScalarList[int64], error) {
	return (*wire.ScalarList[int64])(&x.xRI64), x.xRI64.Load(x.cf.Arena())
}

// InitRI64 empties the list r_i64 = 25, reserves room for n elements, and returns it.
func (x *AllTypes) InitRI64(n int) *wire.ScalarList[int64] {
	x.xRI64.Init(x.cf.Arena(), n)
	return (*wire.ScalarList[int64])(&x.xRI64)
}

// HasRI64 reports whether the list r_i64 = 25 is not empty.
func (x *AllTypes) HasRI64() bool { return x.xRI64.Len() != 0 }

// ClearRI64 empties the list r_i64 = 25.
func (x *AllTypes) ClearRI64() { x.xRI64.Init(x.cf.Arena(), 0) }

// GetRU32 returns the list r_u32 = 26 (decoding it on first access).
func (x *AllTypes) GetRU32() (*wire.ScalarList[uint32], error) {
	return (*wire.ScalarList[uint32])(&x.xRU32), x.xRU32.Load(x.cf.Arena())
}

// InitRU32 empties the list r_u32 = 26, reserves room for n elements, and returns it.
func (x *AllTypes) InitRU32(n int) *wire.ScalarList[uint32] {
	x.xRU32.Init(x.cf.Arena(), n)
	return (*wire.ScalarList[uint32])(&x.xRU32)
}

// HasRU32 reports whether the list r_u32 = 26 is not empty.
func (x *AllTypes) HasRU32() bool { return x.xRU32.Len() != 0 }

// ClearRU32 empties the list r_u32 = 26.
func (x *AllTypes) ClearRU32() { x.xRU32.Init(x.cf.Arena(), 0) }

// GetRU64 returns the list r_u64 = 27 (decoding it on first access).
func (x *AllTypes) GetRU64() (*wire.ScalarList[uint64], error) {
	return (*wire.ScalarList[uint64])(&x.xRU64), x.xRU64.Load(x.cf.Arena())
}

// InitRU64 empties the list r_u64 = 27, reserves room for n elements, and returns it.
func (x *AllTypes) InitRU64(n int) *wire.ScalarList[uint64] {
	x.xRU64.Init(x.cf.Arena(), n)
	return (*wire.ScalarList[uint64])(&x.xRU64)
}

// HasRU64 reports whether the list r_u64 = 27 is not empty.
func (x *AllTypes) HasRU64() bool { return x.xRU64.Len() != 0 }

// ClearRU64 empties the list r_u64 = 27.
func (x *AllTypes) ClearRU64() { x.xRU64.Init(x.cf.Arena(), 0) }

// GetRBool returns the list r_bool = 28 (decoding it on first access).
func (x *AllTypes) GetRBool() (*wire.ScalarList[bool], error) {
	return (*wire.ScalarList[bool])(&x.xRBool), x.xRBool.Load(x.cf.Arena())
}

// InitRBool empties the list r_bool = 28, reserves room for n elements, and returns it.
func (x *AllTypes) InitRBool(n int) *wire.ScalarList[bool] {
	x.xRBool.Init(x.cf.Arena(), n)
	return (*wire.ScalarList[bool])(&x.xRBool)
}

// HasRBool reports whether the list r_bool = 28 is not empty.
func (x *AllTypes) HasRBool() bool { return x.xRBool.Len() != 0 }

// ClearRBool empties the list r_bool = 28.
func (x *AllTypes) ClearRBool() { x.xRBool.Init(x.cf.Arena(), 0) }

// GetRFl returns the list r_fl = 29 (decoding it on first access).
func (x *AllTypes) GetRFl() (*wire.ScalarList[float32], error) {
	return (*wire.ScalarList[float32])(&x.xRFl), x.xRFl.Load(x.cf.Arena())
}

// InitRFl empties the list r_fl = 29, reserves room for n elements, and returns it.
func (x *AllTypes) InitRFl(n int) *wire.ScalarList[float32] {
	x.xRFl.Init(x.cf.Arena(), n)
	return (*wire.ScalarList[float32])(&x.xRFl)
}

// HasRFl reports whether the list r_fl = 29 is not empty.
func (x *AllTypes) HasRFl() bool { return x.xRFl.Len() != 0 }

// ClearRFl empties the list r_fl = 29.
func (x *AllTypes) ClearRFl() { x.xRFl.Init(x.cf.Arena(), 0) }

// GetRDb returns the list r_db = 30 (decoding it on first access).
func (x *AllTypes) GetRDb() (*wire.ScalarList[float64], error) {
	return (*wire.ScalarList[float64])(&x.xRDb), x.xRDb.Load(x.cf.Arena())
}

// InitRDb empties the list r_db = 30, reserves room for n elements, and returns it.
func (x *AllTypes) InitRDb(n int) *wire.ScalarList[float64] {
	x.xRDb.Init(x.cf.Arena(), n)
	return (*wire.ScalarList[float64])(&x.xRDb)
}

// HasRDb reports whether the list r_db = 30 is not empty.
func (x *AllTypes) HasRDb() bool { return x.xRDb.Len() != 0 }

// ClearRDb empties the list r_db = 30.
func (x *AllTypes) ClearRDb() { x.xRDb.Init(x.cf.Arena(), 0) }

// GetRColor returns the list r_color = 31 (decoding it on first access).
func (x *AllTypes) GetRColor() (*wire.ScalarList[int32], error) {
	return (*wire.ScalarList[int32])(&x.xRColor), x.xRColor.Load(x.cf.Arena())
}

// InitRColor empties the list r_color = 31, reserves room for n elements, and returns it.
func (x *AllTypes) InitRColor(n int) *wire.ScalarList[int32] {
	x.xRColor.Init(x.cf.Arena(), n)
	return (*wire.ScalarList[int32])(&x.xRColor)
}

// HasRColor reports whether the list r_color = 31 is not empty.
func (x *AllTypes) HasRColor() bool { return x.xRColor.Len() != 0 }

// ClearRColor empties the list r_color = 31.
func (x *AllTypes) ClearRColor() { x.xRColor.Init(x.cf.Arena(), 0) }

// GetKids returns the list kids = 32 (decoding it on first access).
func (x *AllTypes) GetKids() (*wire.MessageList[*Inner], error) {
	return (*wire.MessageList[*Inner])(&x.xKids), x.xKids.Load(x.cf.Arena(), newInner)
}

// InitKids empties the list kids = 32, reserves room for n elements, and returns it.
func (x *AllTypes) InitKids(n int) *wire.MessageList[*Inner] {
	x.xKids.Init(x.cf.Arena(), n)
	return (*wire.MessageList[*Inner])(&x.xKids)
}

// HasKids reports whether the list kids = 32 is not empty.
func (x *AllTypes) HasKids() bool { return x.xKids.Len() != 0 }

// ClearKids empties the list kids = 32.
func (x *AllTypes) ClearKids() { x.xKids.Init(x.cf.Arena(), 0) }

// GetChild returns field child = 33 (nil when absent), decoding it on first access.
func (x *AllTypes) GetChild() (*Inner, error) { return x.xChild.Get(x.cf.Arena(), newInner) }

// HasChild reports whether field child = 33 is set.
func (x *AllTypes) HasChild() bool { return x.xChild.Present() }

// SetChild sets field child = 33 to v (a message of the same arena; nil clears it).
func (x *AllTypes) SetChild(v *Inner) { x.xChild.Set(v) }

// InitChild sets field child = 33 to a new empty message and returns it.
func (x *AllTypes) InitChild() *Inner {
	v := NewInner((*wire.Arena)(x.cf.Arena()))
	x.xChild.Set(v)
	return v
}

// ClearChild unsets field child = 33.
func (x *AllTypes) ClearChild() { x.xChild.Clear() }

// GetFar returns field far = 1000. The slice aliases the message's memory (arena,
// registered memory or decoded input): do not modify it; valid until the arena's Reset.
func (x *AllTypes) GetFar() []byte { return x.xFar.Get() }

// HasFar reports whether field far = 1000 is not empty.
func (x *AllTypes) HasFar() bool { return x.xFar.Len() != 0 }

// SetFar sets field far = 1000 (copied below the arena's threshold, else zero-copy
// when v lies in registered memory).
func (x *AllTypes) SetFar(v []byte) {
	x.xFar.Set(x.cf.Arena(), v)
}

// SetFarBuf sets field far = 1000 from a registered buffer (the arena takes its own
// reference; the caller keeps b).
func (x *AllTypes) SetFarBuf(b mem.Buf) {
	x.xFar.SetBuf(x.cf.Arena(), b)
}

// ClearFar clears field far = 1000.
func (x *AllTypes) ClearFar() {
	x.xFar.Clear()
}

// Sizes implements wire.Object.
func (x *AllTypes) Sizes() wire.Sizes { return wire.SizesOf(x) }

// Serialize implements wire.Object.
func (x *AllTypes) Serialize(dst []byte, sink wire.EntrySink) error {
	return wire.SerializeTo(x, dst, sink)
}

// Decode decodes x from b zero-copy; the arena holds a reference on b until
// Reset (the caller still releases its own).
func (x *AllTypes) Decode(b mem.Buf) error { return wire.Decode(x, b) }

// DecodeBytes decodes x from p, aliasing p (see wire.DecodeBytes for lifetimes).
func (x *AllTypes) DecodeBytes(p []byte) error { return wire.DecodeBytes(x, p) }

// WireCore implements wire.Msg.
func (x *AllTypes) WireCore() *wireimpl.Core { return &x.cf }

// WireSizes implements wire.Msg.
func (x *AllTypes) WireSizes(s *wireimpl.Sizer) {
	mk := s.Begin()
	s.Scalar(1, x.xI32 != 0)
	s.Scalar(2, x.xI64 != 0)
	s.Scalar(3, x.xU32 != 0)
	s.Scalar(4, x.xU64 != 0)
	s.Scalar(5, x.xS32 != 0)
	s.Scalar(6, x.xS64 != 0)
	s.Scalar(7, x.xFx32 != 0)
	s.Scalar(8, x.xFx64 != 0)
	s.Scalar(9, x.xSfx32 != 0)
	s.Scalar(10, x.xSfx64 != 0)
	s.Scalar(11, x.xFlag)
	s.Scalar(12, math.Float32bits(x.xFl) != 0)
	s.Scalar(13, math.Float64bits(x.xDb) != 0)
	s.Scalar(14, x.xColor != 0)
	s.Bytes(15, &x.xData, x.xData.Len() != 0)
	s.String(16, &x.xName, x.xName.Len() != 0)
	s.Scalar(17, x.cf.Has(0))
	s.Bytes(18, &x.xOptData, x.cf.Has(1))
	s.String(19, &x.xOptName, x.cf.Has(2))
	s.Scalar(20, x.cf.Has(3))
	s.Scalar(21, x.cf.Has(4))
	s.BytesList(22, &x.xBlobs)
	s.StringList(23, &x.xNames)
	wireimpl.SizeScalars(s, 24, &x.xRI32)
	wireimpl.SizeScalars(s, 25, &x.xRI64)
	wireimpl.SizeScalars(s, 26, &x.xRU32)
	wireimpl.SizeScalars(s, 27, &x.xRU64)
	wireimpl.SizeScalars(s, 28, &x.xRBool)
	wireimpl.SizeScalars(s, 29, &x.xRFl)
	wireimpl.SizeScalars(s, 30, &x.xRDb)
	wireimpl.SizeScalars(s, 31, &x.xRColor)
	wireimpl.SizeMessages(s, 32, &x.xKids, newInner)
	wireimpl.SizeMessage(s, 33, &x.xChild, newInner)
	s.Bytes(1000, &x.xFar, x.xFar.Len() != 0)
	s.End(&x.cf, mk)
}

// WireEncode implements wire.Msg.
func (x *AllTypes) WireEncode(e *wireimpl.Encoder) {
	mk := e.Begin(&x.cf)
	if x.xI32 != 0 {
		e.Int32(1, x.xI32)
	}
	if x.xI64 != 0 {
		e.Int64(2, x.xI64)
	}
	if x.xU32 != 0 {
		e.Uint32(3, x.xU32)
	}
	if x.xU64 != 0 {
		e.Uint64(4, x.xU64)
	}
	if x.xS32 != 0 {
		e.Int32(5, x.xS32)
	}
	if x.xS64 != 0 {
		e.Int64(6, x.xS64)
	}
	if x.xFx32 != 0 {
		e.Uint32(7, x.xFx32)
	}
	if x.xFx64 != 0 {
		e.Uint64(8, x.xFx64)
	}
	if x.xSfx32 != 0 {
		e.Int32(9, x.xSfx32)
	}
	if x.xSfx64 != 0 {
		e.Int64(10, x.xSfx64)
	}
	if x.xFlag {
		e.Bool(11, x.xFlag)
	}
	if math.Float32bits(x.xFl) != 0 {
		e.Float(12, x.xFl)
	}
	if math.Float64bits(x.xDb) != 0 {
		e.Double(13, x.xDb)
	}
	if x.xColor != 0 {
		e.Int32(14, int32(x.xColor))
	}
	if x.xData.Len() != 0 {
		e.Bytes(15, &x.xData)
	}
	if x.xName.Len() != 0 {
		e.String(16, &x.xName)
	}
	if x.cf.Has(0) {
		e.Int32(17, x.xOptI32)
	}
	if x.cf.Has(1) {
		e.Bytes(18, &x.xOptData)
	}
	if x.cf.Has(2) {
		e.String(19, &x.xOptName)
	}
	if x.cf.Has(3) {
		e.Bool(20, x.xOptFlag)
	}
	if x.cf.Has(4) {
		e.Double(21, x.xOptDb)
	}
	e.BytesList(22, &x.xBlobs)
	e.StringList(23, &x.xNames)
	wireimpl.EncodeScalars(e, 24, &x.xRI32)
	wireimpl.EncodeScalars(e, 25, &x.xRI64)
	wireimpl.EncodeScalars(e, 26, &x.xRU32)
	wireimpl.EncodeScalars(e, 27, &x.xRU64)
	wireimpl.EncodeScalars(e, 28, &x.xRBool)
	wireimpl.EncodeScalars(e, 29, &x.xRFl)
	wireimpl.EncodeScalars(e, 30, &x.xRDb)
	wireimpl.EncodeScalars(e, 31, &x.xRColor)
	wireimpl.EncodeMessages(e, 32, &x.xKids)
	wireimpl.EncodeMessage(e, 33, &x.xChild)
	if x.xFar.Len() != 0 {
		e.Bytes(1000, &x.xFar)
	}
	e.End(mk)
}

// WireDecode implements wire.Msg.
func (x *AllTypes) WireDecode(d *wireimpl.Decoder) {
	x.xI32 = d.Int32(1)
	x.xI64 = d.Int64(2)
	x.xU32 = d.Uint32(3)
	x.xU64 = d.Uint64(4)
	x.xS32 = d.Int32(5)
	x.xS64 = d.Int64(6)
	x.xFx32 = d.Uint32(7)
	x.xFx64 = d.Uint64(8)
	x.xSfx32 = d.Int32(9)
	x.xSfx64 = d.Int64(10)
	x.xFlag = d.Bool(11)
	x.xFl = d.Float(12)
	x.xDb = d.Double(13)
	x.xColor = Color(d.Int32(14))
	d.Bytes(15, &x.xData)
	d.String(16, &x.xName)
	x.xOptI32 = d.Int32(17)
	if d.Has(17) {
		x.cf.SetHas(0)
	}
	if d.Bytes(18, &x.xOptData) {
		x.cf.SetHas(1)
	}
	if d.String(19, &x.xOptName) {
		x.cf.SetHas(2)
	}
	x.xOptFlag = d.Bool(20)
	if d.Has(20) {
		x.cf.SetHas(3)
	}
	x.xOptDb = d.Double(21)
	if d.Has(21) {
		x.cf.SetHas(4)
	}
	d.BytesList(22, &x.xBlobs)
	d.StringList(23, &x.xNames)
	wireimpl.DecodeScalars(d, 24, &x.xRI32)
	wireimpl.DecodeScalars(d, 25, &x.xRI64)
	wireimpl.DecodeScalars(d, 26, &x.xRU32)
	wireimpl.DecodeScalars(d, 27, &x.xRU64)
	wireimpl.DecodeScalars(d, 28, &x.xRBool)
	wireimpl.DecodeScalars(d, 29, &x.xRFl)
	wireimpl.DecodeScalars(d, 30, &x.xRDb)
	wireimpl.DecodeScalars(d, 31, &x.xRColor)
	wireimpl.DecodeMessages(d, 32, &x.xKids)
	wireimpl.DecodeMessage(d, 33, &x.xChild)
	d.Bytes(1000, &x.xFar)
}

// Equal reports whether x and y hold the same fields (floats compared by bits;
// lists and nested messages are decoded as needed; a decode error means unequal).
func (x *AllTypes) Equal(y *AllTypes) bool {
	if x == nil || y == nil {
		return x == y
	}
	if x.xI32 != y.xI32 {
		return false
	}
	if x.xI64 != y.xI64 {
		return false
	}
	if x.xU32 != y.xU32 {
		return false
	}
	if x.xU64 != y.xU64 {
		return false
	}
	if x.xS32 != y.xS32 {
		return false
	}
	if x.xS64 != y.xS64 {
		return false
	}
	if x.xFx32 != y.xFx32 {
		return false
	}
	if x.xFx64 != y.xFx64 {
		return false
	}
	if x.xSfx32 != y.xSfx32 {
		return false
	}
	if x.xSfx64 != y.xSfx64 {
		return false
	}
	if x.xFlag != y.xFlag {
		return false
	}
	if !wireimpl.EqualFloat32(x.xFl, y.xFl) {
		return false
	}
	if !wireimpl.EqualFloat64(x.xDb, y.xDb) {
		return false
	}
	if x.xColor != y.xColor {
		return false
	}
	if !x.xData.Equal(&y.xData) {
		return false
	}
	if !x.xName.Equal(&y.xName) {
		return false
	}
	if x.cf.Has(0) != y.cf.Has(0) || x.xOptI32 != y.xOptI32 {
		return false
	}
	if x.cf.Has(1) != y.cf.Has(1) || !x.xOptData.Equal(&y.xOptData) {
		return false
	}
	if x.cf.Has(2) != y.cf.Has(2) || !x.xOptName.Equal(&y.xOptName) {
		return false
	}
	if x.cf.Has(3) != y.cf.Has(3) || x.xOptFlag != y.xOptFlag {
		return false
	}
	if x.cf.Has(4) != y.cf.Has(4) || !wireimpl.EqualFloat64(x.xOptDb, y.xOptDb) {
		return false
	}
	if l, m, ok := wireimpl.Loaded2(x.GetBlobs, y.GetBlobs); !ok || !l.Equal(m) {
		return false
	}
	if l, m, ok := wireimpl.Loaded2(x.GetNames, y.GetNames); !ok || !l.Equal(m) {
		return false
	}
	if l, m, ok := wireimpl.Loaded2(x.GetRI32, y.GetRI32); !ok || !l.Equal(m) {
		return false
	}
	if l, m, ok := wireimpl.Loaded2(x.GetRI64, y.GetRI64); !ok || !l.Equal(m) {
		return false
	}
	if l, m, ok := wireimpl.Loaded2(x.GetRU32, y.GetRU32); !ok || !l.Equal(m) {
		return false
	}
	if l, m, ok := wireimpl.Loaded2(x.GetRU64, y.GetRU64); !ok || !l.Equal(m) {
		return false
	}
	if l, m, ok := wireimpl.Loaded2(x.GetRBool, y.GetRBool); !ok || !l.Equal(m) {
		return false
	}
	if l, m, ok := wireimpl.Loaded2(x.GetRFl, y.GetRFl); !ok || !l.Equal(m) {
		return false
	}
	if l, m, ok := wireimpl.Loaded2(x.GetRDb, y.GetRDb); !ok || !l.Equal(m) {
		return false
	}
	if l, m, ok := wireimpl.Loaded2(x.GetRColor, y.GetRColor); !ok || !l.Equal(m) {
		return false
	}
	if l, m, ok := wireimpl.Loaded2(x.GetKids, y.GetKids); !ok || !l.Equal(m, (*Inner).Equal) {
		return false
	}
	if l, m, ok := wireimpl.Loaded2(x.GetChild, y.GetChild); !ok || !l.Equal(m) {
		return false
	}
	if !x.xFar.Equal(&y.xFar) {
		return false
	}
	return true
}

// String returns a one-line text form of x (for debugging).
func (x *AllTypes) String() string {
	var t wireimpl.Text
	t.Begin("AllTypes")
	if x.xI32 != 0 {
		t.Int("i32", int64(x.xI32))
	}
	if x.xI64 != 0 {
		t.Int("i64", x.xI64)
	}
	if x.xU32 != 0 {
		t.Uint("u32", uint64(x.xU32))
	}
	if x.xU64 != 0 {
		t.Uint("u64", x.xU64)
	}
	if x.xS32 != 0 {
		t.Int("s32", int64(x.xS32))
	}
	if x.xS64 != 0 {
		t.Int("s64", x.xS64)
	}
	if x.xFx32 != 0 {
		t.Uint("fx32", uint64(x.xFx32))
	}
	if x.xFx64 != 0 {
		t.Uint("fx64", x.xFx64)
	}
	if x.xSfx32 != 0 {
		t.Int("sfx32", int64(x.xSfx32))
	}
	if x.xSfx64 != 0 {
		t.Int("sfx64", x.xSfx64)
	}
	if x.xFlag {
		t.Bool("flag", x.xFlag)
	}
	if math.Float32bits(x.xFl) != 0 {
		t.Float("fl", float64(x.xFl), 32)
	}
	if math.Float64bits(x.xDb) != 0 {
		t.Float("db", x.xDb, 64)
	}
	if x.xColor != 0 {
		t.Enum("color", int32(x.xColor), x.xColor.String())
	}
	if x.xData.Len() != 0 {
		t.Bytes("data", &x.xData)
	}
	if x.xName.Len() != 0 {
		t.String("name", &x.xName)
	}
	if x.cf.Has(0) {
		t.Int("opt_i32", int64(x.xOptI32))
	}
	if x.cf.Has(1) {
		t.Bytes("opt_data", &x.xOptData)
	}
	if x.cf.Has(2) {
		t.String("opt_name", &x.xOptName)
	}
	if x.cf.Has(3) {
		t.Bool("opt_flag", x.xOptFlag)
	}
	if x.cf.Has(4) {
		t.Float("opt_db", x.xOptDb, 64)
	}
	if !x.HasBlobs() {
	} else if _, err := x.GetBlobs(); err != nil {
		t.Err("blobs", err)
	} else {
		t.BytesList("blobs", &x.xBlobs)
	}
	if !x.HasNames() {
	} else if _, err := x.GetNames(); err != nil {
		t.Err("names", err)
	} else {
		t.StringList("names", &x.xNames)
	}
	if !x.HasRI32() {
	} else if _, err := x.GetRI32(); err != nil {
		t.Err("r_i32", err)
	} else {
		wireimpl.TextScalars(&t, "r_i32", &x.xRI32)
	}
	if !x.HasRI64() {
	} else if _, err := x.GetRI64(); err != nil {
		t.Err("r_i64", err)
	} else {
		wireimpl.TextScalars(&t, "r_i64", &x.xRI64)
	}
	if !x.HasRU32() {
	} else if _, err := x.GetRU32(); err != nil {
		t.Err("r_u32", err)
	} else {
		wireimpl.TextScalars(&t, "r_u32", &x.xRU32)
	}
	if !x.HasRU64() {
	} else if _, err := x.GetRU64(); err != nil {
		t.Err("r_u64", err)
	} else {
		wireimpl.TextScalars(&t, "r_u64", &x.xRU64)
	}
	if !x.HasRBool() {
	} else if _, err := x.GetRBool(); err != nil {
		t.Err("r_bool", err)
	} else {
		wireimpl.TextScalars(&t, "r_bool", &x.xRBool)
	}
	if !x.HasRFl() {
	} else if _, err := x.GetRFl(); err != nil {
		t.Err("r_fl", err)
	} else {
		wireimpl.TextScalars(&t, "r_fl", &x.xRFl)
	}
	if !x.HasRDb() {
	} else if _, err := x.GetRDb(); err != nil {
		t.Err("r_db", err)
	} else {
		wireimpl.TextScalars(&t, "r_db", &x.xRDb)
	}
	if !x.HasRColor() {
	} else if _, err := x.GetRColor(); err != nil {
		t.Err("r_color", err)
	} else {
		wireimpl.TextScalars(&t, "r_color", &x.xRColor)
	}
	if !x.HasKids() {
	} else if _, err := x.GetKids(); err != nil {
		t.Err("kids", err)
	} else {
		wireimpl.TextMessages(&t, "kids", &x.xKids)
	}
	if x.HasChild() {
		if v, err := x.GetChild(); err != nil {
			t.Err("child", err)
		} else {
			t.Message("child", v)
		}
	}
	if x.xFar.Len() != 0 {
		t.Bytes("far", &x.xFar)
	}
	return t.End()
}

// Bufs is the message cornflakes.testmsg.Bufs. It is the microbenchmark shape "NxM": a list
// of bytes values (BenchmarkEcho2x2048).
type Bufs struct {
	cf        wireimpl.Core
	xMessages wireimpl.BytesList
}

var bufsType = wireimpl.NewType[Bufs]()

// NewBufs returns an empty Bufs in a; it and everything it holds are valid
// until a.Reset.
func NewBufs(a *wire.Arena) *Bufs {
	x := bufsType.New((*wireimpl.Arena)(a))
	x.cf.Init((*wireimpl.Arena)(a))
	return x
}

// GetMessages returns the list messages = 1 (decoding it on first access).
func (x *Bufs) GetMessages() (*wire.BytesList, error) {
	return (*wire.BytesList)(&x.xMessages), x.xMessages.Load(x.cf.Arena())
}

// InitMessages empties the list messages = 1, reserves room for n elements, and returns it.
func (x *Bufs) InitMessages(n int) *wire.BytesList {
	x.xMessages.Init(x.cf.Arena(), n)
	return (*wire.BytesList)(&x.xMessages)
}

// HasMessages reports whether the list messages = 1 is not empty.
func (x *Bufs) HasMessages() bool { return x.xMessages.Len() != 0 }

// ClearMessages empties the list messages = 1.
func (x *Bufs) ClearMessages() { x.xMessages.Init(x.cf.Arena(), 0) }

// Sizes implements wire.Object.
func (x *Bufs) Sizes() wire.Sizes { return wire.SizesOf(x) }

// Serialize implements wire.Object.
func (x *Bufs) Serialize(dst []byte, sink wire.EntrySink) error {
	return wire.SerializeTo(x, dst, sink)
}

// Decode decodes x from b zero-copy; the arena holds a reference on b until
// Reset (the caller still releases its own).
func (x *Bufs) Decode(b mem.Buf) error { return wire.Decode(x, b) }

// DecodeBytes decodes x from p, aliasing p (see wire.DecodeBytes for lifetimes).
func (x *Bufs) DecodeBytes(p []byte) error { return wire.DecodeBytes(x, p) }

// WireCore implements wire.Msg.
func (x *Bufs) WireCore() *wireimpl.Core { return &x.cf }

// WireSizes implements wire.Msg.
func (x *Bufs) WireSizes(s *wireimpl.Sizer) {
	mk := s.Begin()
	s.BytesList(1, &x.xMessages)
	s.End(&x.cf, mk)
}

// WireEncode implements wire.Msg.
func (x *Bufs) WireEncode(e *wireimpl.Encoder) {
	mk := e.Begin(&x.cf)
	e.BytesList(1, &x.xMessages)
	e.End(mk)
}

// WireDecode implements wire.Msg.
func (x *Bufs) WireDecode(d *wireimpl.Decoder) {
	d.BytesList(1, &x.xMessages)
}

// Equal reports whether x and y hold the same fields (floats compared by bits;
// lists and nested messages are decoded as needed; a decode error means unequal).
func (x *Bufs) Equal(y *Bufs) bool {
	if x == nil || y == nil {
		return x == y
	}
	if l, m, ok := wireimpl.Loaded2(x.GetMessages, y.GetMessages); !ok || !l.Equal(m) {
		return false
	}
	return true
}

// String returns a one-line text form of x (for debugging).
func (x *Bufs) String() string {
	var t wireimpl.Text
	t.Begin("Bufs")
	if !x.HasMessages() {
	} else if _, err := x.GetMessages(); err != nil {
		t.Err("messages", err)
	} else {
		t.BytesList("messages", &x.xMessages)
	}
	return t.End()
}

// ItemV1 is the message cornflakes.testmsg.ItemV1. It is version 1 of a schema that ItemV2
// extends (compatibility tests).
type ItemV1 struct {
	cf    wireimpl.Core
	xId   uint64
	xName wireimpl.String
	xData wireimpl.Bytes
}

var itemV1Type = wireimpl.NewType[ItemV1]()

// NewItemV1 returns an empty ItemV1 in a; it and everything it holds are valid
// until a.Reset.
func NewItemV1(a *wire.Arena) *ItemV1 {
	x := itemV1Type.New((*wireimpl.Arena)(a))
	x.cf.Init((*wireimpl.Arena)(a))
	return x
}

// GetId returns field id = 1.
func (x *ItemV1) GetId() uint64 { return x.xId }

// HasId reports whether field id = 1 is not zero.
func (x *ItemV1) HasId() bool { return x.xId != 0 }

// SetId sets field id = 1.
func (x *ItemV1) SetId(v uint64) { x.xId = v }

// ClearId clears field id = 1.
func (x *ItemV1) ClearId() { x.xId = 0 }

// GetName returns field name = 2, or wire.ErrInvalidUTF8 when it is not valid UTF-8.
// The string aliases the message's memory: valid until the arena's Reset.
func (x *ItemV1) GetName() (string, error) { return x.xName.Get() }

// GetNameBytes returns field name = 2 without a UTF-8 check (aliasing; valid until Reset).
func (x *ItemV1) GetNameBytes() []byte { return x.xName.Bytes() }

// HasName reports whether field name = 2 is not empty.
func (x *ItemV1) HasName() bool { return x.xName.Len() != 0 }

// SetName sets field name = 2 (copied below the arena's threshold, else zero-copy
// when v lies in registered memory).
func (x *ItemV1) SetName(v string) {
	x.xName.SetString(x.cf.Arena(), v)
}

// SetNameBytes sets field name = 2 from bytes (hybrid rule of SetName).
func (x *ItemV1) SetNameBytes(v []byte) {
	x.xName.Set(x.cf.Arena(), v)
}

// SetNameBuf sets field name = 2 from a registered buffer (the arena takes its own
// reference; the caller keeps b).
func (x *ItemV1) SetNameBuf(b mem.Buf) {
	x.xName.SetBuf(x.cf.Arena(), b)
}

// ClearName clears field name = 2.
func (x *ItemV1) ClearName() {
	x.xName.Clear()
}

// GetData returns field data = 3. The slice aliases the message's memory (arena,
// registered memory or decoded input): do not modify it; valid until the arena's Reset.
func (x *ItemV1) GetData() []byte { return x.xData.Get() }

// HasData reports whether field data = 3 is not empty.
func (x *ItemV1) HasData() bool { return x.xData.Len() != 0 }

// SetData sets field data = 3 (copied below the arena's threshold, else zero-copy
// when v lies in registered memory).
func (x *ItemV1) SetData(v []byte) {
	x.xData.Set(x.cf.Arena(), v)
}

// SetDataBuf sets field data = 3 from a registered buffer (the arena takes its own
// reference; the caller keeps b).
func (x *ItemV1) SetDataBuf(b mem.Buf) {
	x.xData.SetBuf(x.cf.Arena(), b)
}

// ClearData clears field data = 3.
func (x *ItemV1) ClearData() {
	x.xData.Clear()
}

// Sizes implements wire.Object.
func (x *ItemV1) Sizes() wire.Sizes { return wire.SizesOf(x) }

// Serialize implements wire.Object.
func (x *ItemV1) Serialize(dst []byte, sink wire.EntrySink) error {
	return wire.SerializeTo(x, dst, sink)
}

// Decode decodes x from b zero-copy; the arena holds a reference on b until
// Reset (the caller still releases its own).
func (x *ItemV1) Decode(b mem.Buf) error { return wire.Decode(x, b) }

// DecodeBytes decodes x from p, aliasing p (see wire.DecodeBytes for lifetimes).
func (x *ItemV1) DecodeBytes(p []byte) error { return wire.DecodeBytes(x, p) }

// WireCore implements wire.Msg.
func (x *ItemV1) WireCore() *wireimpl.Core { return &x.cf }

// WireSizes implements wire.Msg.
func (x *ItemV1) WireSizes(s *wireimpl.Sizer) {
	mk := s.Begin()
	s.Scalar(1, x.xId != 0)
	s.String(2, &x.xName, x.xName.Len() != 0)
	s.Bytes(3, &x.xData, x.xData.Len() != 0)
	s.End(&x.cf, mk)
}

// WireEncode implements wire.Msg.
func (x *ItemV1) WireEncode(e *wireimpl.Encoder) {
	mk := e.Begin(&x.cf)
	if x.xId != 0 {
		e.Uint64(1, x.xId)
	}
	if x.xName.Len() != 0 {
		e.String(2, &x.xName)
	}
	if x.xData.Len() != 0 {
		e.Bytes(3, &x.xData)
	}
	e.End(mk)
}

// WireDecode implements wire.Msg.
func (x *ItemV1) WireDecode(d *wireimpl.Decoder) {
	x.xId = d.Uint64(1)
	d.String(2, &x.xName)
	d.Bytes(3, &x.xData)
}

// Equal reports whether x and y hold the same fields (floats compared by bits;
// lists and nested messages are decoded as needed; a decode error means unequal).
func (x *ItemV1) Equal(y *ItemV1) bool {
	if x == nil || y == nil {
		return x == y
	}
	if x.xId != y.xId {
		return false
	}
	if !x.xName.Equal(&y.xName) {
		return false
	}
	if !x.xData.Equal(&y.xData) {
		return false
	}
	return true
}

// String returns a one-line text form of x (for debugging).
func (x *ItemV1) String() string {
	var t wireimpl.Text
	t.Begin("ItemV1")
	if x.xId != 0 {
		t.Uint("id", x.xId)
	}
	if x.xName.Len() != 0 {
		t.String("name", &x.xName)
	}
	if x.xData.Len() != 0 {
		t.Bytes("data", &x.xData)
	}
	return t.End()
}

// ItemV2 is the message cornflakes.testmsg.ItemV2. It is version 2 of ItemV1: the same fields
// plus a list, a nested message and an optional field with a higher number.
type ItemV2 struct {
	cf     wireimpl.Core
	xId    uint64
	xName  wireimpl.String
	xData  wireimpl.Bytes
	xExtra wireimpl.ScalarList[int64]
	xMeta  wireimpl.Nested[*Inner]
	xScore float64
}

var itemV2Type = wireimpl.NewType[ItemV2]()

// NewItemV2 returns an empty ItemV2 in a; it and everything it holds are valid
// until a.Reset.
func NewItemV2(a *wire.Arena) *ItemV2 {
	x := itemV2Type.New((*wireimpl.Arena)(a))
	x.cf.Init((*wireimpl.Arena)(a))
	return x
}

// GetId returns field id = 1.
func (x *ItemV2) GetId() uint64 { return x.xId }

// HasId reports whether field id = 1 is not zero.
func (x *ItemV2) HasId() bool { return x.xId != 0 }

// SetId sets field id = 1.
func (x *ItemV2) SetId(v uint64) { x.xId = v }

// ClearId clears field id = 1.
func (x *ItemV2) ClearId() { x.xId = 0 }

// GetName returns field name = 2, or wire.ErrInvalidUTF8 when it is not valid UTF-8.
// The string aliases the message's memory: valid until the arena's Reset.
func (x *ItemV2) GetName() (string, error) { return x.xName.Get() }

// GetNameBytes returns field name = 2 without a UTF-8 check (aliasing; valid until Reset).
func (x *ItemV2) GetNameBytes() []byte { return x.xName.Bytes() }

// HasName reports whether field name = 2 is not empty.
func (x *ItemV2) HasName() bool { return x.xName.Len() != 0 }

// SetName sets field name = 2 (copied below the arena's threshold, else zero-copy
// when v lies in registered memory).
func (x *ItemV2) SetName(v string) {
	x.xName.SetString(x.cf.Arena(), v)
}

// SetNameBytes sets field name = 2 from bytes (hybrid rule of SetName).
func (x *ItemV2) SetNameBytes(v []byte) {
	x.xName.Set(x.cf.Arena(), v)
}

// SetNameBuf sets field name = 2 from a registered buffer (the arena takes its own
// reference; the caller keeps b).
func (x *ItemV2) SetNameBuf(b mem.Buf) {
	x.xName.SetBuf(x.cf.Arena(), b)
}

// ClearName clears field name = 2.
func (x *ItemV2) ClearName() {
	x.xName.Clear()
}

// GetData returns field data = 3. The slice aliases the message's memory (arena,
// registered memory or decoded input): do not modify it; valid until the arena's Reset.
func (x *ItemV2) GetData() []byte { return x.xData.Get() }

// HasData reports whether field data = 3 is not empty.
func (x *ItemV2) HasData() bool { return x.xData.Len() != 0 }

// SetData sets field data = 3 (copied below the arena's threshold, else zero-copy
// when v lies in registered memory).
func (x *ItemV2) SetData(v []byte) {
	x.xData.Set(x.cf.Arena(), v)
}

// SetDataBuf sets field data = 3 from a registered buffer (the arena takes its own
// reference; the caller keeps b).
func (x *ItemV2) SetDataBuf(b mem.Buf) {
	x.xData.SetBuf(x.cf.Arena(), b)
}

// ClearData clears field data = 3.
func (x *ItemV2) ClearData() {
	x.xData.Clear()
}

// GetExtra returns the list extra = 4 (decoding it on first access).
func (x *ItemV2) GetExtra() (*wire.ScalarList[int64], error) {
	return (*wire.ScalarList[int64])(&x.xExtra), x.xExtra.Load(x.cf.Arena())
}

// InitExtra empties the list extra = 4, reserves room for n elements, and returns it.
func (x *ItemV2) InitExtra(n int) *wire.ScalarList[int64] {
	x.xExtra.Init(x.cf.Arena(), n)
	return (*wire.ScalarList[int64])(&x.xExtra)
}

// HasExtra reports whether the list extra = 4 is not empty.
func (x *ItemV2) HasExtra() bool { return x.xExtra.Len() != 0 }

// ClearExtra empties the list extra = 4.
func (x *ItemV2) ClearExtra() { x.xExtra.Init(x.cf.Arena(), 0) }

// GetMeta returns field meta = 5 (nil when absent), decoding it on first access.
func (x *ItemV2) GetMeta() (*Inner, error) { return x.xMeta.Get(x.cf.Arena(), newInner) }

// HasMeta reports whether field meta = 5 is set.
func (x *ItemV2) HasMeta() bool { return x.xMeta.Present() }

// SetMeta sets field meta = 5 to v (a message of the same arena; nil clears it).
func (x *ItemV2) SetMeta(v *Inner) { x.xMeta.Set(v) }

// InitMeta sets field meta = 5 to a new empty message and returns it.
func (x *ItemV2) InitMeta() *Inner {
	v := NewInner((*wire.Arena)(x.cf.Arena()))
	x.xMeta.Set(v)
	return v
}

// ClearMeta unsets field meta = 5.
func (x *ItemV2) ClearMeta() { x.xMeta.Clear() }

// GetScore returns field score = 40.
func (x *ItemV2) GetScore() float64 { return x.xScore }

// HasScore reports whether field score = 40 is set.
func (x *ItemV2) HasScore() bool { return x.cf.Has(0) }

// SetScore sets field score = 40.
func (x *ItemV2) SetScore(v float64) {
	x.xScore = v
	x.cf.SetHas(0)
}

// ClearScore unsets field score = 40.
func (x *ItemV2) ClearScore() {
	x.xScore = 0
	x.cf.ClearHas(0)
}

// Sizes implements wire.Object.
func (x *ItemV2) Sizes() wire.Sizes { return wire.SizesOf(x) }

// Serialize implements wire.Object.
func (x *ItemV2) Serialize(dst []byte, sink wire.EntrySink) error {
	return wire.SerializeTo(x, dst, sink)
}

// Decode decodes x from b zero-copy; the arena holds a reference on b until
// Reset (the caller still releases its own).
func (x *ItemV2) Decode(b mem.Buf) error { return wire.Decode(x, b) }

// DecodeBytes decodes x from p, aliasing p (see wire.DecodeBytes for lifetimes).
func (x *ItemV2) DecodeBytes(p []byte) error { return wire.DecodeBytes(x, p) }

// WireCore implements wire.Msg.
func (x *ItemV2) WireCore() *wireimpl.Core { return &x.cf }

// WireSizes implements wire.Msg.
func (x *ItemV2) WireSizes(s *wireimpl.Sizer) {
	mk := s.Begin()
	s.Scalar(1, x.xId != 0)
	s.String(2, &x.xName, x.xName.Len() != 0)
	s.Bytes(3, &x.xData, x.xData.Len() != 0)
	wireimpl.SizeScalars(s, 4, &x.xExtra)
	wireimpl.SizeMessage(s, 5, &x.xMeta, newInner)
	s.Scalar(40, x.cf.Has(0))
	s.End(&x.cf, mk)
}

// WireEncode implements wire.Msg.
func (x *ItemV2) WireEncode(e *wireimpl.Encoder) {
	mk := e.Begin(&x.cf)
	if x.xId != 0 {
		e.Uint64(1, x.xId)
	}
	if x.xName.Len() != 0 {
		e.String(2, &x.xName)
	}
	if x.xData.Len() != 0 {
		e.Bytes(3, &x.xData)
	}
	wireimpl.EncodeScalars(e, 4, &x.xExtra)
	wireimpl.EncodeMessage(e, 5, &x.xMeta)
	if x.cf.Has(0) {
		e.Double(40, x.xScore)
	}
	e.End(mk)
}

// WireDecode implements wire.Msg.
func (x *ItemV2) WireDecode(d *wireimpl.Decoder) {
	x.xId = d.Uint64(1)
	d.String(2, &x.xName)
	d.Bytes(3, &x.xData)
	wireimpl.DecodeScalars(d, 4, &x.xExtra)
	wireimpl.DecodeMessage(d, 5, &x.xMeta)
	x.xScore = d.Double(40)
	if d.Has(40) {
		x.cf.SetHas(0)
	}
}

// Equal reports whether x and y hold the same fields (floats compared by bits;
// lists and nested messages are decoded as needed; a decode error means unequal).
func (x *ItemV2) Equal(y *ItemV2) bool {
	if x == nil || y == nil {
		return x == y
	}
	if x.xId != y.xId {
		return false
	}
	if !x.xName.Equal(&y.xName) {
		return false
	}
	if !x.xData.Equal(&y.xData) {
		return false
	}
	if l, m, ok := wireimpl.Loaded2(x.GetExtra, y.GetExtra); !ok || !l.Equal(m) {
		return false
	}
	if l, m, ok := wireimpl.Loaded2(x.GetMeta, y.GetMeta); !ok || !l.Equal(m) {
		return false
	}
	if x.cf.Has(0) != y.cf.Has(0) || !wireimpl.EqualFloat64(x.xScore, y.xScore) {
		return false
	}
	return true
}

// String returns a one-line text form of x (for debugging).
func (x *ItemV2) String() string {
	var t wireimpl.Text
	t.Begin("ItemV2")
	if x.xId != 0 {
		t.Uint("id", x.xId)
	}
	if x.xName.Len() != 0 {
		t.String("name", &x.xName)
	}
	if x.xData.Len() != 0 {
		t.Bytes("data", &x.xData)
	}
	if !x.HasExtra() {
	} else if _, err := x.GetExtra(); err != nil {
		t.Err("extra", err)
	} else {
		wireimpl.TextScalars(&t, "extra", &x.xExtra)
	}
	if x.HasMeta() {
		if v, err := x.GetMeta(); err != nil {
			t.Err("meta", err)
		} else {
			t.Message("meta", v)
		}
	}
	if x.cf.Has(0) {
		t.Float("score", x.xScore, 64)
	}
	return t.End()
}

// Runtime-facing constructors (generated code writes them as function literals).
func newInner(a *wireimpl.Arena) *Inner { return NewInner((*wire.Arena)(a)) }

package alltypes_test

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/alltypes"
	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/other"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

// flatten serializes m into one contiguous buffer.
func flatten(t testing.TB, m wire.Object) []byte {
	t.Helper()
	p, err := wire.Flatten(m, nil)
	if err != nil {
		t.Fatalf("Flatten: %v", err)
	}
	return p
}

func reset(t testing.TB, a *wire.Arena) {
	t.Helper()
	if err := a.Reset(); err != nil {
		t.Fatalf("Reset: %v", err)
	}
}

func fillScalars(x *alltypes.Scalars) {
	x.SetI32(-7)
	x.SetI64(math.MinInt64)
	x.SetU32(math.MaxUint32)
	x.SetU64(math.MaxUint64)
	x.SetS32(-123456)
	x.SetS64(-1 << 40)
	x.SetF32(0xdeadbeef)
	x.SetF64(0xfeedfacecafebeef)
	x.SetSf32(math.MinInt32)
	x.SetSf64(42)
	x.SetFlag(true)
	x.SetRatio(-1.5)
	x.SetScore(math.Pi)
	x.SetKind(alltypes.Kind_KIND_NEGATIVE)
	x.SetText("héllo")
	x.SetData([]byte{0, 1, 2, 255})
}

func TestScalarsRoundTrip(t *testing.T) {
	a := wire.NewArena()
	defer reset(t, a)
	x := alltypes.NewScalars(a)
	fillScalars(x)
	p := flatten(t, x)

	y := alltypes.NewScalars(a)
	if err := y.DecodeBytes(p); err != nil {
		t.Fatal(err)
	}
	if !x.Equal(y) || !y.Equal(x) {
		t.Fatalf("decoded message differs:\n got %v\nwant %v", y, x)
	}
	if y.GetI32() != -7 || y.GetI64() != math.MinInt64 || y.GetU32() != math.MaxUint32 || y.GetU64() != math.MaxUint64 ||
		y.GetS32() != -123456 || y.GetS64() != -1<<40 || y.GetF32() != 0xdeadbeef || y.GetF64() != 0xfeedfacecafebeef ||
		y.GetSf32() != math.MinInt32 || y.GetSf64() != 42 || !y.GetFlag() || y.GetRatio() != -1.5 || y.GetScore() != math.Pi ||
		y.GetKind() != alltypes.Kind_KIND_NEGATIVE || !bytes.Equal(y.GetData(), []byte{0, 1, 2, 255}) {
		t.Errorf("getters after decode: %v", y)
	}
	if s, err := y.GetText(); err != nil || s != "héllo" {
		t.Errorf("GetText = %q, %v", s, err)
	}
	want := `Scalars{i32:-7 i64:-9223372036854775808 u32:4294967295 u64:18446744073709551615 s32:-123456 s64:-1099511627776 f32:3735928559 f64:18369614221190020847 sf32:-2147483648 sf64:42 flag:true ratio:-1.5 score:3.141592653589793 kind:KIND_NEGATIVE text:"héllo" data:"\x00\x01\x02\xff"}`
	if got := y.String(); got != want {
		t.Errorf("String:\n got %s\nwant %s", got, want)
	}

	// Each field matters to Equal.
	z := alltypes.NewScalars(a)
	fillScalars(z)
	z.SetScore(math.Copysign(0, -1) + 1e-300)
	if x.Equal(z) {
		t.Error("Equal ignores score")
	}
}

// TestImplicitPresence checks proto3 implicit presence: zero values are not
// on the wire and Has reports false.
func TestImplicitPresence(t *testing.T) {
	a := wire.NewArena()
	defer reset(t, a)
	x := alltypes.NewScalars(a)
	empty := x.Sizes()
	x.SetI32(0)
	x.SetText("")
	x.SetFlag(false)
	x.SetScore(0)
	if x.HasI32() || x.HasText() || x.HasFlag() || x.HasScore() {
		t.Error("zero values reported as present")
	}
	if x.Sizes() != empty {
		t.Errorf("zero values change the size: %+v vs %+v", x.Sizes(), empty)
	}
	x.SetScore(math.Copysign(0, -1)) // -0 has non-zero bits: present, as in protobuf-go
	if !x.HasScore() {
		t.Error("-0.0 not present")
	}
	x.SetI32(5)
	x.ClearI32()
	x.ClearScore()
	if x.HasI32() || x.HasScore() || x.Sizes() != empty {
		t.Error("Clear did not clear")
	}
}

// TestExplicitPresence checks proto3 optional: a zero value that was set is
// present and survives a round trip; Clear unsets it.
func TestExplicitPresence(t *testing.T) {
	a := wire.NewArena()
	defer reset(t, a)
	x := alltypes.NewOptionals(a)
	if x.HasI32() || x.HasText() || x.HasData() || x.HasKind() {
		t.Fatal("fresh message has fields")
	}
	x.SetI32(0)
	x.SetU64(0)
	x.SetFlag(false)
	x.SetScore(0)
	x.SetKind(alltypes.Kind_KIND_UNSPECIFIED)
	x.SetText("")
	x.SetData(nil)
	y := alltypes.NewOptionals(a)
	if err := y.DecodeBytes(flatten(t, x)); err != nil {
		t.Fatal(err)
	}
	for name, has := range map[string]bool{"i32": y.HasI32(), "u64": y.HasU64(), "flag": y.HasFlag(), "score": y.HasScore(), "kind": y.HasKind(), "text": y.HasText(), "data": y.HasData()} {
		if !has {
			t.Errorf("optional %s set to zero is absent after the round trip", name)
		}
	}
	if !x.Equal(y) {
		t.Errorf("%v != %v", x, y)
	}
	y.ClearI32()
	y.ClearText()
	if y.HasI32() || y.HasText() || x.Equal(y) {
		t.Error("Clear did not unset")
	}
	if got, want := y.String(), `Optionals{u64:0 flag:false score:0 kind:KIND_UNSPECIFIED data:""}`; got != want {
		t.Errorf("String = %s, want %s", got, want)
	}
}

func buildLists(a *wire.Arena) *alltypes.Lists {
	x := alltypes.NewLists(a)
	x.InitI32S(2).Append(-1)
	x.InitU64S(0).Append(math.MaxUint64)
	s64 := x.InitS64S(3)
	for _, v := range []int64{-3, 0, 3, 1 << 50} {
		s64.Append(v) // grows past the reserved 3
	}
	x.InitF32S(1).Append(7)
	fl := x.InitFlags(3)
	fl.Append(true)
	fl.Append(false)
	fl.Append(true)
	x.InitRatios(1).Append(float32(math.Inf(-1)))
	x.InitScores(2).Append(math.NaN())
	k := x.InitKinds(2)
	k.Append(int32(alltypes.Kind_KIND_A))
	k.Append(int32(alltypes.Kind_KIND_NEGATIVE))
	tx := x.InitTexts(2)
	tx.Append("a")
	tx.Append("")
	tx.Append("ü")
	b := x.InitBlobs(1)
	b.Append([]byte("blob"))
	b.Append(nil)
	items := x.InitItems(2)
	for i := range 3 {
		it := alltypes.NewScalars(a)
		it.SetI32(int32(i))
		it.SetText(strings.Repeat("x", i))
		items.Append(it)
	}
	return x
}

func TestListsRoundTrip(t *testing.T) {
	a := wire.NewArena()
	defer reset(t, a)
	x := buildLists(a)
	y := alltypes.NewLists(a)
	if err := y.DecodeBytes(flatten(t, x)); err != nil {
		t.Fatal(err)
	}
	if !x.Equal(y) || !y.Equal(x) {
		t.Fatalf("decoded lists differ:\n got %v\nwant %v", y, x)
	}
	s64, err := y.GetS64S()
	if err != nil || s64.Len() != 4 || s64.At(3) != 1<<50 || s64.At(0) != -3 {
		t.Errorf("s64s = %v, %v", s64, err)
	}
	sc, err := y.GetScores()
	if err != nil || sc.Len() != 1 || !math.IsNaN(sc.At(0)) {
		t.Errorf("scores: %v", err)
	}
	tx, err := y.GetTexts()
	if err != nil || tx.Len() != 3 {
		t.Fatalf("texts: %v", err)
	}
	if v, err := tx.At(2); err != nil || v != "ü" {
		t.Errorf("texts[2] = %q, %v", v, err)
	}
	items, err := y.GetItems()
	if err != nil || items.Len() != 3 {
		t.Fatalf("items: %v", err)
	}
	if v, _ := items.At(2).GetText(); v != "xx" || items.At(2).GetI32() != 2 {
		t.Errorf("items[2] = %v", items.At(2))
	}
	k, _ := y.GetKinds()
	if alltypes.Kind(k.At(1)) != alltypes.Kind_KIND_NEGATIVE {
		t.Errorf("kinds[1] = %d", k.At(1))
	}
	want := `Lists{i32s:[-1] u64s:[18446744073709551615] s64s:[-3 0 3 1125899906842624] f32s:[7] flags:[true false true] ratios:[-Inf] scores:[NaN] kinds:[1 -1] texts:["a" "" "ü"] blobs:["blob" ""] items:[Scalars{} Scalars{i32:1 text:"x"} Scalars{i32:2 text:"xx"}]}`
	if got := y.String(); got != want {
		t.Errorf("String:\n got %s\nwant %s", got, want)
	}

	// A change in any list makes the messages unequal.
	z := buildLists(a)
	fl, _ := z.GetFlags()
	fl.SetAt(1, true)
	if x.Equal(z) {
		t.Error("Equal ignores a list element")
	}
	z = buildLists(a)
	it, _ := z.GetItems()
	it.At(1).SetI64(1)
	if x.Equal(z) {
		t.Error("Equal ignores a message list element")
	}
	z.ClearItems()
	if z.HasItems() {
		t.Error("ClearItems left elements")
	}
}

// TestNestedAndCrossPackage covers nested messages and enums, sparse field
// numbers, and messages and enums of another Go package.
func TestNestedAndCrossPackage(t *testing.T) {
	a := wire.NewArena()
	defer reset(t, a)
	x := alltypes.NewOuter(a)
	in := x.InitInner()
	in.SetState(alltypes.Outer_Inner_STATE_BUSY)
	in.SetPayload([]byte("p"))
	ins := x.InitInners(1)
	for i := range 2 {
		e := alltypes.NewOuter_Inner(a)
		e.SetPayload([]byte{byte(i)})
		ins.Append(e)
	}
	bl := x.InitBlob()
	bl.SetName("blob")
	bl.SetLevel(other.Level_LEVEL_HIGH)
	bl.SetData(bytes.Repeat([]byte{7}, 100))
	bls := x.InitBlobs(1)
	b2 := other.NewBlob(a)
	b2.SetLevel(other.Level_LEVEL_LOW)
	bls.Append(b2)
	x.SetLevel(other.Level_LEVEL_LOW)
	x.SetSnakeCaseField(100)
	x.SetState(alltypes.Outer_Inner_STATE_BUSY)

	y := alltypes.NewOuter(a)
	if err := y.DecodeBytes(flatten(t, x)); err != nil {
		t.Fatal(err)
	}
	if !x.Equal(y) {
		t.Fatalf("decoded differs:\n got %v\nwant %v", y, x)
	}
	if !y.HasBlob() || !y.HasInner() || y.GetLevel() != other.Level_LEVEL_LOW || y.GetSnakeCaseField() != 100 || y.GetState() != alltypes.Outer_Inner_STATE_BUSY {
		t.Errorf("decoded: %v", y)
	}
	yb, err := y.GetBlob()
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := yb.GetName(); n != "blob" || yb.GetLevel() != other.Level_LEVEL_HIGH || len(yb.GetData()) != 100 {
		t.Errorf("blob = %v", yb)
	}
	want := `Outer{inner:Outer_Inner{state:STATE_BUSY payload:"p"} inners:[Outer_Inner{payload:"\x00"} Outer_Inner{payload:"\x01"}] blob:Blob{data:<100 bytes> name:"blob" level:LEVEL_HIGH} blobs:[Blob{level:LEVEL_LOW}] level:LEVEL_LOW snake_case_field:100 state:STATE_BUSY}`
	if got := y.String(); got != want {
		t.Errorf("String:\n got %s\nwant %s", got, want)
	}
	y.ClearBlob()
	if y.HasBlob() || x.Equal(y) {
		t.Error("ClearBlob")
	}
	if v, err := y.GetBlob(); err != nil || v != nil {
		t.Errorf("GetBlob after Clear = %v, %v; want nil, nil", v, err)
	}
}

// TestTree covers a recursive message: a binary tree of depth 5 with bytes
// leaves (the microbenchmark's tree5 shape).
func TestTree(t *testing.T) {
	a := wire.NewArena()
	defer reset(t, a)
	var build func(n *alltypes.Tree, depth int, id *int)
	build = func(n *alltypes.Tree, depth int, id *int) {
		if depth == 0 {
			n.SetLeaf([]byte{byte(*id)})
			*id++
			return
		}
		build(n.InitLeft(), depth-1, id)
		build(n.InitRight(), depth-1, id)
	}
	x := alltypes.NewTree(a)
	id := 0
	build(x, 5, &id)
	y := alltypes.NewTree(a)
	if err := y.DecodeBytes(flatten(t, x)); err != nil {
		t.Fatal(err)
	}
	if !x.Equal(y) {
		t.Fatal("tree differs after the round trip")
	}
	n := y
	for range 5 {
		var err error
		if n, err = n.GetRight(); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(n.GetLeaf(), []byte{31}) {
		t.Errorf("rightmost leaf = %v, want [31]", n.GetLeaf())
	}
}

func TestEmptyAndEnumString(t *testing.T) {
	a := wire.NewArena()
	defer reset(t, a)
	x := alltypes.NewEmpty(a)
	p := flatten(t, x)
	if x.Sizes().Total() != len(p) || len(p) != 4 {
		t.Errorf("empty message is %d bytes, want 4 (the bitmap word count)", len(p))
	}
	y := alltypes.NewEmpty(a)
	if err := y.DecodeBytes(p); err != nil || !x.Equal(y) || y.String() != "Empty{}" {
		t.Errorf("empty round trip: %v %v", err, y)
	}
	for k, want := range map[alltypes.Kind]string{alltypes.Kind_KIND_ALIAS: "KIND_B", alltypes.Kind_KIND_NEGATIVE: "KIND_NEGATIVE", 99: "99"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", int32(k), got, want)
		}
	}
}

// TestZeroCopy checks the hybrid decision made by the generated setters and
// that decoding from registered memory keeps large fields zero-copy, with
// every reference released at Reset.
func TestZeroCopy(t *testing.T) {
	pool := memtest.NewPool(t)
	a := wire.NewArena()
	a.Threshold = 512
	big := memtest.Alloc(t, pool, bytes.Repeat([]byte("z"), 2048))
	defer memtest.Release(t, big)

	x := alltypes.NewScalars(a)
	x.SetData(big.Bytes())               // registered and >= threshold: zero-copy
	x.SetText(strings.Repeat("s", 2048)) // Go heap: copied
	sz := x.Sizes()
	if sz.Entries != 1 || sz.ZeroCopy != 2048 || sz.Copied != 2048 {
		t.Fatalf("Sizes = %+v, want one 2048-byte zero-copy entry and 2048 copied bytes", sz)
	}
	var sga wire.SGA
	if err := wire.SerializeSGA(x, &sga); err != nil {
		t.Fatal(err)
	}
	if len(sga.Entries) != 1 || &sga.Entries[0].Bytes()[0] != &big.Bytes()[0] {
		t.Fatal("the zero-copy entry does not alias the registered value")
	}

	// Decode from a registered receive buffer: the large field aliases it.
	rx, err := pool.Alloc(sga.Len())
	if err != nil {
		t.Fatal(err)
	}
	sga.AppendTo(rx.Bytes()[:0])
	y := alltypes.NewScalars(a)
	if err := y.Decode(rx); err != nil {
		t.Fatal(err)
	}
	memtest.Release(t, rx) // the arena holds its own reference
	if !x.Equal(y) {
		t.Fatal("decoded differs")
	}
	if sz := y.Sizes(); sz.Entries != 2 {
		t.Errorf("decoded from registered memory: Sizes = %+v, want both 2048-byte fields zero-copy", sz)
	}
	memtest.AssertInUse(t, pool, 2) // big + the receive buffer held by the arena
	reset(t, a)
	memtest.AssertInUse(t, pool, 1) // big only
}

// TestDecodeErrors feeds truncated and corrupted inputs: errors, no panics.
func TestDecodeErrors(t *testing.T) {
	a := wire.NewArena()
	defer reset(t, a)
	p := flatten(t, buildLists(a))
	for n := 0; n < len(p); n++ {
		y := alltypes.NewLists(a)
		if err := y.DecodeBytes(p[:n]); err != nil {
			if !errors.Is(err, wire.ErrMalformed) {
				t.Fatalf("truncated to %d: error %v does not match ErrMalformed", n, err)
			}
			continue
		}
		// Lists are decoded lazily: Equal loads them and must not panic.
		_ = y.Equal(y)
		_ = y.String()
	}
	for i := range p {
		q := append([]byte(nil), p...)
		q[i] ^= 0xff
		y := alltypes.NewLists(a)
		if err := y.DecodeBytes(q); err == nil {
			_ = y.String()
		}
	}
}

// TestHotPathAllocs checks that building, sizing, serializing, decoding and
// reading a message allocate nothing once the arena is warm.
func TestHotPathAllocs(t *testing.T) {
	if mem.Checked {
		t.Skip("the checked build gives a Reset arena new memory for its messages, so that a message used after Reset is always detected")
	}
	pool := memtest.NewPool(t)
	val := memtest.Alloc(t, pool, bytes.Repeat([]byte("v"), 2048))
	defer memtest.Release(t, val)
	a := wire.NewArena()
	var sga wire.SGA
	var flat []byte
	small := []byte("small") // a converted literal would be a test allocation
	run := func() {
		x := alltypes.NewOuter(a)
		in := x.InitInner()
		in.SetPayload(val.Bytes())
		ins := x.InitInners(2)
		for range 2 {
			e := alltypes.NewOuter_Inner(a)
			e.SetPayload(small)
			e.SetState(alltypes.Outer_Inner_STATE_BUSY)
			ins.Append(e)
		}
		x.SetSnakeCaseField(3)
		if err := wire.SerializeSGA(x, &sga); err != nil {
			t.Fatal(err)
		}
		flat = sga.AppendTo(flat[:0])
		y := alltypes.NewOuter(a)
		if err := y.DecodeBytes(flat); err != nil {
			t.Fatal(err)
		}
		yi, err := y.GetInner()
		if err != nil || len(yi.GetPayload()) != 2048 || y.GetSnakeCaseField() != 3 {
			t.Fatal("bad decode")
		}
		l, err := y.GetInners()
		if err != nil || l.Len() != 2 || l.At(1).GetState() != alltypes.Outer_Inner_STATE_BUSY {
			t.Fatal("bad list")
		}
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Errorf("%v allocations per build+serialize+decode+read, want 0", n)
	}
}

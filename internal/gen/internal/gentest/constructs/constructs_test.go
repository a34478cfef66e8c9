package constructs_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/constructs"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/wire"
)

// roundTrip serializes x (scatter-gather), decodes it into a new Item of
// b, and checks equality and that the re-serialization has the same bytes.
func roundTrip(t *testing.T, x *constructs.Item, b *wire.Arena) *constructs.Item {
	t.Helper()
	var sga wire.SGA
	if err := wire.SerializeSGA(x, &sga); err != nil {
		t.Fatal(err)
	}
	p := sga.AppendTo(nil)
	flat, err := wire.Flatten(x, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(p, flat) {
		t.Fatal("SerializeSGA and Flatten differ")
	}
	y := constructs.NewItem(b)
	if err := y.DecodeBytes(p); err != nil {
		t.Fatalf("decode: %v\n%v", err, x)
	}
	if !x.Equal(y) || !y.Equal(x) {
		t.Fatalf("round trip differs:\n got %v\nwant %v", y, x)
	}
	if x.String() != y.String() {
		t.Fatalf("String differs:\n got %s\nwant %s", y, x)
	}
	// A decoded message re-serializes stably (its values are all copied
	// now: p is not registered memory).
	q, err := wire.Flatten(y, nil)
	if err != nil {
		t.Fatal(err)
	}
	z := constructs.NewItem(b)
	if err := z.DecodeBytes(q); err != nil {
		t.Fatal(err)
	}
	r, err := wire.Flatten(z, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(q, r) || !z.Equal(x) {
		t.Fatal("re-serialization not stable")
	}
	return y
}

// TestPropertyRoundTrip: random Items with oneofs, maps of every key kind,
// the well-known types and nesting survive a round trip, a Clone into
// another arena (checked after the source arena's Reset) and a Clone into
// plain Go memory; an older reader (ItemOld) decodes them.
func TestPropertyRoundTrip(t *testing.T) {
	pool := memtest.NewPool(t)
	for seed := range uint64(300) {
		a, b, c := wire.NewArena(), wire.NewArena(), wire.NewArena()
		a.Threshold = 256
		g := &gen{r: rand.New(rand.NewPCG(seed, 21)), a: a, pool: pool, t: t}
		x := g.item(3)
		y := roundTrip(t, x, b)
		want := x.String()

		cl, err := x.Clone(c)
		if err != nil {
			t.Fatal(err)
		}
		heap, err := y.Clone(nil)
		if err != nil {
			t.Fatal(err)
		}
		old := constructs.NewItemOld(b)
		p, _ := wire.Flatten(x, nil)
		if err := old.DecodeBytes(p); err != nil {
			t.Fatalf("older reader: %v", err)
		}
		if old.WhichChoice() != constructs.ItemOld_ChoiceCase(x.WhichChoice()) && x.WhichChoice() <= 2 {
			t.Fatalf("older reader: choice %v, want %v", old.WhichChoice(), x.WhichChoice())
		}
		if err := a.Reset(); err != nil {
			t.Fatal(err)
		}
		if err := b.Reset(); err != nil {
			t.Fatal(err)
		}
		g.release()
		if got := cl.String(); got != want {
			t.Fatalf("clone after source Reset:\n got %s\nwant %s", got, want)
		}
		if got := heap.String(); got != want {
			t.Fatalf("heap clone after Reset:\n got %s\nwant %s", got, want)
		}
		if !cl.Equal(heap) {
			t.Fatal("clones differ")
		}
		if err := c.Reset(); err != nil {
			t.Fatal(err)
		}
		memtest.AssertInUse(t, pool, 0)
	}
}

func TestOneof(t *testing.T) {
	a := wire.NewArena()
	x := constructs.NewItem(a)
	if x.WhichChoice() != constructs.Item_Choice_not_set_case {
		t.Fatal("new Item has a choice")
	}
	x.SetI32(0) // explicit presence: a zero member is set
	if x.WhichChoice() != constructs.Item_I32_case || !x.HasI32() {
		t.Fatal("SetI32(0) not set")
	}
	x.SetName("n")
	if x.WhichChoice() != constructs.Item_Name_case || x.HasI32() {
		t.Fatal("SetName did not clear i32")
	}
	x.InitChild().SetI32(3)
	if x.WhichChoice() != constructs.Item_Child_case || x.HasName() {
		t.Fatal("InitChild did not clear name")
	}
	x.SetBlob([]byte("b"))
	if x.WhichChoice() != constructs.Item_Blob_case || x.HasChild() {
		t.Fatal("SetBlob did not clear child")
	}
	x.SetKind(constructs.Kind_KIND_TWO)
	x.SetS("s")
	if x.WhichChoice() != constructs.Item_Kind_case || x.WhichSecond() != constructs.Item_S_case {
		t.Fatal("oneofs interfere")
	}
	y := roundTrip(t, x, a)
	if y.WhichChoice() != constructs.Item_Kind_case || y.GetKind() != constructs.Kind_KIND_TWO || y.HasBlob() {
		t.Fatalf("decoded %v", y)
	}
	y.ClearChoice()
	if y.WhichChoice() != constructs.Item_Choice_not_set_case || y.WhichSecond() != constructs.Item_S_case {
		t.Fatal("ClearChoice")
	}
	x.SetDbl(0)
	y = roundTrip(t, x, a)
	if y.WhichChoice() != constructs.Item_Dbl_case {
		t.Fatal("zero double member lost")
	}
}

func TestMapAPI(t *testing.T) {
	a := wire.NewArena()
	x := constructs.NewItem(a)
	m, err := x.GetByS32()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []int32{5, -3, 9, 0, -3, 7} {
		m.Set(k, float64(k)*2)
	}
	if m.Len() != 5 {
		t.Fatalf("Len = %d, want 5", m.Len())
	}
	var keys []int32
	for i := range m.Len() {
		keys = append(keys, m.At(i).GetKey())
	}
	if want := []int32{-3, 0, 5, 7, 9}; !equalInts(keys, want) {
		t.Fatalf("order %v, want %v", keys, want)
	}
	if v, ok := m.Get(7); !ok || v != 14 {
		t.Fatalf("Get(7) = %v, %v", v, ok)
	}
	if _, ok := m.Get(8); ok {
		t.Fatal("Get(8) found")
	}
	if !m.Delete(5) || m.Delete(5) || m.Len() != 4 {
		t.Fatal("Delete")
	}
	sm, _ := x.GetByStr()
	for _, k := range []string{"b", "", "a", "ab", "é"} {
		sm.Set(k, []byte(k+"!"))
	}
	bm, _ := x.GetByBool()
	bm.Set(true, 1)
	bm.Set(false, 2)
	um, _ := x.GetByU64()
	um.Set(1<<63, constructs.Kind_KIND_ONE)
	um.Set(1, constructs.Kind_KIND_TWO)
	im, _ := x.GetItems()
	im.Init("k").SetName("v")
	y := roundTrip(t, x, a)
	ys, err := y.GetByStr()
	if err != nil {
		t.Fatal(err)
	}
	var skeys []string
	for i := range ys.Len() {
		k, _ := ys.At(i).GetKey()
		skeys = append(skeys, k)
	}
	if got := strings.Join(skeys, ","); got != ",a,ab,b,é" {
		t.Fatalf("string key order %q", got)
	}
	if v, ok := ys.Get("ab"); !ok || string(v) != "ab!" {
		t.Fatalf("Get(ab) = %q, %v", v, ok)
	}
	yb, _ := y.GetByBool()
	if yb.At(0).GetKey() || !yb.At(1).GetKey() {
		t.Fatal("bool order")
	}
	yu, _ := y.GetByU64()
	if yu.At(0).GetKey() != 1 || yu.At(1).GetKey() != 1<<63 {
		t.Fatal("uint64 order (unsigned)")
	}
	yi, _ := y.GetItems()
	if v, ok, err := yi.Get("k"); err != nil || !ok {
		t.Fatal("Get(k)", err)
	} else if n, _ := v.GetName(); n != "v" {
		t.Fatal("message value")
	}
	x.ClearByStr()
	if x.HasByStr() {
		t.Fatal("ClearByStr")
	}
}

func equalInts(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestMapZeroCopy: a large map value from registered memory stays zero-copy
// through Set, serialization and a decode-and-resend.
func TestMapZeroCopy(t *testing.T) {
	pool := memtest.NewPool(t)
	val := memtest.Alloc(t, pool, bytes.Repeat([]byte("v"), 2048))
	defer memtest.Release(t, val)
	a := wire.NewArena()
	x := constructs.NewItem(a)
	m, _ := x.GetByStr()
	m.SetBuf("big", val)
	m.Set("small", []byte("s"))
	if sz := x.Sizes(); sz.Entries != 1 || sz.ZeroCopy != 2048 {
		t.Fatalf("sizes %+v, want one zero-copy entry of 2048", sz)
	}
	var sga wire.SGA
	if err := wire.SerializeSGA(x, &sga); err != nil {
		t.Fatal(err)
	}
	rx := memtest.Alloc(t, pool, sga.AppendTo(nil))
	y := constructs.NewItem(a)
	if err := y.Decode(rx); err != nil {
		t.Fatal(err)
	}
	memtest.Release(t, rx)
	ym, err := y.GetByStr()
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := ym.Get("big"); !ok || len(v) != 2048 {
		t.Fatal("big value")
	}
	if sz := y.Sizes(); sz.Entries != 1 || sz.ZeroCopy != 2048 {
		t.Fatalf("resend sizes %+v, want the decoded value zero-copy", sz)
	}
	if err := a.Reset(); err != nil {
		t.Fatal(err)
	}
	memtest.AssertInUse(t, pool, 1)
}

// hostile builds messages no Cornflakes writer produces.
func TestHostileMaps(t *testing.T) {
	a := wire.NewArena()
	cases := map[string]func(x *constructs.Item){
		"descending": func(x *constructs.Item) {
			m, _ := x.GetByI32()
			l := m.List()
			for _, k := range []int32{2, 1} {
				e := constructs.NewItem_ByI32Entry(a)
				e.SetKey(k)
				l.Append(e)
			}
		},
		"duplicate": func(x *constructs.Item) {
			m, _ := x.GetByI32()
			l := m.List()
			for _, k := range []int32{1, 1} {
				e := constructs.NewItem_ByI32Entry(a)
				e.SetKey(k)
				l.Append(e)
			}
		},
	}
	for name, build := range cases {
		x := constructs.NewItem(a)
		build(x)
		p, err := wire.Flatten(x, nil)
		if err != nil {
			t.Fatal(err)
		}
		y := constructs.NewItem(a)
		if err := y.DecodeBytes(p); err != nil {
			t.Fatalf("%s: decode: %v", name, err)
		}
		if _, err := y.GetByI32(); !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("%s: GetByI32 = %v, want ErrMalformed", name, err)
		}
		if y.Equal(x) {
			t.Errorf("%s: a malformed map compares equal", name)
		}
	}
	// Invalid UTF-8 string key.
	x := constructs.NewItem(a)
	m, _ := x.GetByStr()
	e := constructs.NewItem_ByStrEntry(a)
	e.SetKeyBytes([]byte{0xff})
	m.List().Append(e)
	p, _ := wire.Flatten(x, nil)
	y := constructs.NewItem(a)
	if err := y.DecodeBytes(p); err != nil {
		t.Fatal(err)
	}
	if _, err := y.GetByStr(); !errors.Is(err, wire.ErrInvalidUTF8) {
		t.Errorf("invalid UTF-8 key: %v", err)
	}
	// A re-decode into the same message checks the order again.
	good := constructs.NewItem(a)
	gm, _ := good.GetByI32()
	gm.Set(1, "a")
	q, _ := wire.Flatten(good, nil)
	z := constructs.NewItem(a)
	if err := z.DecodeBytes(q); err != nil {
		t.Fatal(err)
	}
	if _, err := z.GetByI32(); err != nil {
		t.Fatal(err)
	}
	bad := constructs.NewItem(a)
	cases["descending"](bad)
	r, _ := wire.Flatten(bad, nil)
	if err := z.DecodeBytes(r); err != nil {
		t.Fatal(err)
	}
	if _, err := z.GetByI32(); !errors.Is(err, wire.ErrMalformed) {
		t.Errorf("re-decode kept the old check: %v", err)
	}
}

func TestHostileOneof(t *testing.T) {
	a := wire.NewArena()
	f := constructs.NewFlat(a)
	f.SetI32(1)
	f.SetName("two")
	p, _ := wire.Flatten(f, nil)
	x := constructs.NewItem(a)
	err := x.DecodeBytes(p)
	if !errors.Is(err, wire.ErrOneof) || !errors.Is(err, wire.ErrMalformed) || !strings.Contains(err.Error(), "gentest.constructs.Item.choice") {
		t.Fatalf("two members: %v", err)
	}
	// Nested: the check runs when the child is decoded.
	outer := constructs.NewItem(a)
	items, _ := outer.GetItems()
	items.Set("k", constructs.NewItem(a))
	q, _ := wire.Flatten(outer, nil)
	y := constructs.NewItem(a)
	if err := y.DecodeBytes(q); err != nil {
		t.Fatal(err)
	}
}

// TestOldNew: a newer reader (Item) decodes an older writer's message
// (ItemOld) and the reverse (TestPropertyRoundTrip); fields unknown to
// the older reader are skipped, not errors.
func TestOldNew(t *testing.T) {
	a := wire.NewArena()
	defer a.Reset()
	o := constructs.NewItemOld(a)
	o.SetName("old")
	p, _ := wire.Flatten(o, nil)
	x := constructs.NewItem(a)
	if err := x.DecodeBytes(p); err != nil {
		t.Fatal(err)
	}
	if n, _ := x.GetName(); n != "old" || x.WhichChoice() != constructs.Item_Name_case || x.HasByStr() || x.HasSparse() {
		t.Fatalf("new reader of an old message: %v", x)
	}
}

// TestConstructAllocs: oneof and map accessors allocate nothing once the
// arena is warm.
func TestConstructAllocs(t *testing.T) {
	a := wire.NewArena()
	x := constructs.NewItem(a)
	m, _ := x.GetByI32()
	for k := range int32(64) {
		m.Set(k, "v")
	}
	p, _ := wire.Flatten(x, nil)
	y := constructs.NewItem(a)
	allocs := testing.AllocsPerRun(200, func() {
		if err := y.DecodeBytes(p); err != nil {
			t.Fatal(err)
		}
		ym, err := y.GetByI32()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := ym.Get(33); !ok {
			t.Fatal("Get")
		}
		y.SetI32(1)
		y.SetName("x")
		_ = y.WhichChoice()
	})
	if allocs != 0 {
		t.Errorf("%v allocs per decode + map Get + oneof set", allocs)
	}
}

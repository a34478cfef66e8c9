package proto2_test

import (
	"bytes"
	"math"
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/proto2"
	"github.com/cornflakes-go/cornflakes/wire"
)

// TestProto2Presence checks proto2 explicit presence: every singular field
// set to its zero value is present, survives a round trip and is cleared by
// Clear; an unset enum reads as its first value.
func TestProto2Presence(t *testing.T) {
	a := wire.NewArena()
	defer a.Reset()
	x := proto2.NewRecord(a)
	if x.HasId() || x.HasName() || x.HasBody() || x.HasColor() || x.HasFlag() || x.HasChild() {
		t.Fatal("fresh message has fields")
	}
	if x.GetColor() != proto2.Color_COLOR_RED {
		t.Errorf("unset color = %v, want the first value COLOR_RED", x.GetColor())
	}
	x.SetId(0)
	x.SetName("")
	x.SetBody(nil)
	x.SetFlag(false)
	x.SetColor(proto2.Color_COLOR_GREEN)
	p, err := wire.Flatten(x, nil)
	if err != nil {
		t.Fatal(err)
	}
	y := proto2.NewRecord(a)
	if err := y.DecodeBytes(p); err != nil {
		t.Fatal(err)
	}
	if !y.HasId() || !y.HasName() || !y.HasBody() || !y.HasFlag() || !y.HasColor() || y.HasChild() {
		t.Errorf("presence lost in the round trip: %v", y)
	}
	if y.GetColor() != proto2.Color_COLOR_GREEN || !x.Equal(y) {
		t.Errorf("decoded %v, want %v", y, x)
	}
	if got, want := y.String(), `Record{id:0 name:"" body:"" color:COLOR_GREEN flag:false}`; got != want {
		t.Errorf("String = %s, want %s", got, want)
	}
	y.ClearColor()
	y.ClearId()
	if y.HasColor() || y.HasId() || y.GetColor() != proto2.Color_COLOR_RED || x.Equal(y) {
		t.Error("Clear did not unset")
	}
}

func TestProto2Nested(t *testing.T) {
	a := wire.NewArena()
	defer a.Reset()
	x := proto2.NewRecord(a)
	c := x.InitChild()
	c.SetName("child")
	c.InitChild().SetId(2)
	v := x.InitValues(2)
	v.Append(-5)
	v.Append(1 << 40)
	x.InitTags(1).Append("t")
	ns := x.InitNested(1)
	n := proto2.NewRecord_Nested(a)
	n.SetN(0)
	ns.Append(n)
	p, err := wire.Flatten(x, nil)
	if err != nil {
		t.Fatal(err)
	}
	y := proto2.NewRecord(a)
	if err := y.DecodeBytes(p); err != nil {
		t.Fatal(err)
	}
	if !x.Equal(y) {
		t.Fatalf("decoded %v, want %v", y, x)
	}
	yc, err := y.GetChild()
	if err != nil {
		t.Fatal(err)
	}
	gc, err := yc.GetChild()
	if err != nil || !gc.HasId() || gc.GetId() != 2 || gc.HasName() {
		t.Errorf("grandchild = %v, %v", gc, err)
	}
	l, err := y.GetNested()
	if err != nil || l.Len() != 1 || !l.At(0).HasN() {
		t.Errorf("nested list lost presence of n = 0: %v", err)
	}
	want := `Record{values:[-5 1099511627776] tags:["t"] child:Record{name:"child" child:Record{id:2}} nested:[Record_Nested{n:0}]}`
	if got := y.String(); got != want {
		t.Errorf("String:\n got %s\nwant %s", got, want)
	}
}

// TestProto2Defaults checks [default = ...]: unset fields read as their
// defaults (and are not on the wire), set fields read as set, cleared
// fields read as defaults again.
func TestProto2Defaults(t *testing.T) {
	a := wire.NewArena()
	defer a.Reset()
	x := proto2.NewDefaults(a)
	check := func(x *proto2.Defaults) {
		t.Helper()
		text, err := x.GetText()
		if x.GetI32() != -7 || x.GetU64() != math.MaxUint64 || x.GetS64() != math.MinInt64 || !x.GetFlag() ||
			x.GetRatio() != 1.5 || !math.IsInf(x.GetScore(), -1) || !math.IsNaN(x.GetNan()) ||
			!math.Signbit(x.GetNegZero()) || x.GetNegZero() != 0 || x.GetColor() != proto2.Color_COLOR_GREEN ||
			err != nil || text != "héllo \"q\"\n" || string(x.GetTextBytes()) != text ||
			!bytes.Equal(x.GetData(), []byte{0, 1, 0xff}) || x.GetZero() != 0 {
			t.Errorf("defaults not returned: %v", x)
		}
		if x.HasI32() || x.HasText() || x.HasData() || x.HasColor() {
			t.Error("defaults reported as present")
		}
	}
	check(x)
	if sz := x.Sizes(); sz.Total() != 4 {
		t.Errorf("unset fields with defaults are on the wire: %+v", sz)
	}
	p, err := wire.Flatten(x, nil)
	if err != nil {
		t.Fatal(err)
	}
	y := proto2.NewDefaults(a)
	if err := y.DecodeBytes(p); err != nil {
		t.Fatal(err)
	}
	check(y)

	x.SetI32(0)
	x.SetText("")
	x.SetData(nil)
	x.SetColor(proto2.Color_COLOR_RED)
	if x.GetI32() != 0 || !x.HasI32() || x.GetColor() != proto2.Color_COLOR_RED || len(x.GetData()) != 0 {
		t.Errorf("set values not returned: %v", x)
	}
	if s, _ := x.GetText(); s != "" {
		t.Errorf("GetText = %q after SetText(\"\")", s)
	}
	x.ClearI32()
	x.ClearText()
	x.ClearData()
	x.ClearColor()
	check(x)
}

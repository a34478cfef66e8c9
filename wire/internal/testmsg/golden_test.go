package testmsg

import (
	"bytes"
	"encoding/hex"
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/cornflakes-go/cornflakes/wire"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.bin")

// goldenItem is the worked example of docs/WIRE_FORMAT.md: threshold 512,
// data is a registered 600-byte value (zero-copy), name and meta.data are
// copied.
func goldenItem(v *values, a *wire.Arena) *ItemV2 {
	m := NewItemV2(a)
	m.SetId(7)
	m.SetName("ab")
	m.SetData(v.registered(bytes.Repeat([]byte{0xdd}, 600)))
	e := m.InitExtra(2)
	e.Append(1)
	e.Append(-2)
	meta := m.InitMeta()
	meta.SetId(9)
	meta.SetData([]byte("xyz"))
	m.SetScore(0.5)
	return m
}

// goldenAll sets every field of AllTypes to a fixed value.
func goldenAll(v *values, a *wire.Arena) *AllTypes {
	m := NewAllTypes(a)
	m.SetI32(-1)
	m.SetI64(math.MinInt64)
	m.SetU32(math.MaxUint32)
	m.SetU64(1 << 63)
	m.SetS32(-2)
	m.SetS64(-3)
	m.SetFx32(4)
	m.SetFx64(5)
	m.SetSfx32(-6)
	m.SetSfx64(-7)
	m.SetFlag(true)
	m.SetFl(1.5)
	m.SetDb(-2.25)
	m.SetColor(Color_GREEN)
	m.SetData(v.registered(bytes.Repeat([]byte{0xaa}, 520)))
	m.SetName("héllo")
	m.SetOptI32(0)
	m.SetOptData(nil)
	m.SetOptName("opt")
	m.SetOptFlag(false)
	m.SetOptDb(math.Inf(1))
	bl := m.InitBlobs(3)
	bl.Append([]byte("b0"))
	bl.Append(v.registered(bytes.Repeat([]byte{0xbb}, 512)))
	bl.Append(nil)
	nl := m.InitNames(2)
	nl.Append("n0")
	nl.Append("")
	m.InitRI32(2).Append(-1)
	m.InitRI64(1).Append(math.MaxInt64)
	m.InitRU32(1).Append(7)
	m.InitRU64(1).Append(8)
	rb := m.InitRBool(3)
	rb.Append(true)
	rb.Append(false)
	rb.Append(true)
	m.InitRFl(1).Append(0.25)
	m.InitRDb(1).Append(-0.5)
	m.InitRColor(1).Append(int32(Color_BLUE))
	kids := m.InitKids(2)
	k0 := NewInner(a)
	k0.SetId(1)
	k0.InitTags(1).Append("t")
	kids.Append(k0)
	k1 := NewInner(a)
	k1.SetData(v.registered(bytes.Repeat([]byte{0xcc}, 513)))
	k1.InitChild().SetId(3)
	kids.Append(k1)
	c := m.InitChild()
	c.SetId(2)
	m.SetFar([]byte("far"))
	return m
}

func TestGolden(t *testing.T) {
	v := newValues(t)
	a := newArena(t, wire.DefaultThreshold)
	for _, c := range []struct {
		file string
		msg  wire.Msg
	}{
		{"itemv2.bin", goldenItem(v, a)},
		{"alltypes.bin", goldenAll(v, a)},
	} {
		got, err := wire.Flatten(c.msg, nil)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", "golden", c.file)
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test -run TestGolden -update to create it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: encoding changed (if intended, run with -update and update docs/WIRE_FORMAT.md)\n got %s\nwant %s", c.file, hex.EncodeToString(got[:min(len(got), 256)]), hex.EncodeToString(want[:min(len(want), 256)]))
		}
		// The golden bytes decode to the same message.
		switch m := c.msg.(type) {
		case *ItemV2:
			d := NewItemV2(a)
			if err := d.DecodeBytes(want); err != nil || !d.Equal(m) {
				t.Errorf("%s: decode: %v, equal %v", c.file, err, d.Equal(m))
			}
		case *AllTypes:
			d := NewAllTypes(a)
			if err := d.DecodeBytes(want); err != nil || !d.Equal(m) {
				t.Errorf("%s: decode: %v", c.file, err)
			}
		}
	}
}

// TestGoldenSizes pins the worked example's layout.
func TestGoldenSizes(t *testing.T) {
	v := newValues(t)
	a := newArena(t, wire.DefaultThreshold)
	m := goldenItem(v, a)
	if got, want := m.Sizes(), (wire.Sizes{Header: 100, Copied: 5, ZeroCopy: 600, Entries: 1}); got != want {
		t.Errorf("Sizes = %+v, want %+v", got, want)
	}
}

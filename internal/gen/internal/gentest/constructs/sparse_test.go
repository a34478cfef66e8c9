package constructs_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/gen/internal/gentest/constructs"
	"github.com/cornflakes-go/cornflakes/wire"
)

// sparseExample is the worked example of docs/WIRE_FORMAT.md "Sparse header".
func sparseExample(a *wire.Arena) *constructs.Sparse {
	x := constructs.NewSparse(a)
	x.SetA(7)
	x.SetMid([]byte("hi"))
	x.SetY("z")
	return x
}

// TestSparseGolden pins the bytes of the sparse header form (and that a
// message with only small numbers keeps the bitmap form).
func TestSparseGolden(t *testing.T) {
	a := wire.NewArena()
	defer a.Reset()
	cases := []struct {
		name string
		x    *constructs.Sparse
	}{
		{"sparse", sparseExample(a)},
		{"dense", func() *constructs.Sparse { x := constructs.NewSparse(a); x.SetA(7); x.SetB("b"); return x }()},
	}
	for _, tt := range cases {
		p, err := wire.Flatten(tt.x, nil)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join("testdata", tt.name+".hex")
		got := hex.EncodeToString(p) + "\n"
		if os.Getenv("CORNFLAKES_UPDATE_GOLDEN") == "1" {
			if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("%s: bytes\n got %s\nwant %s", tt.name, got, want)
		}
		fields, n, err := wire.ReadHeader(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		again, err := wire.AppendHeader(nil, fields)
		if err != nil || !bytes.Equal(again, p[:n]) {
			t.Errorf("%s: AppendHeader(ReadHeader) = %x, %v; want %x", tt.name, again, err, p[:n])
		}
	}
	if p, _ := wire.Flatten(cases[1].x, nil); p[0] != 1 {
		t.Error("a message with small numbers does not use the bitmap form")
	}
}

// TestSparseHostile: malformed sparse headers are rejected with a
// *DecodeError, by the per-field decoder (Sparse, Item) and the generated
// fast path (Flat, whose fields are 1 and 2: it reads a sparse header
// through synthesized bitmap words and skips the unknown huge fields).
func TestSparseHostile(t *testing.T) {
	a := wire.NewArena()
	defer a.Reset()
	good, _ := wire.Flatten(sparseExample(a), nil)
	mut := func(f func(p []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	for name, p := range map[string][]byte{
		"count too large": mut(func(p []byte) []byte { p[0] = 0xff; return p }),
		"not ascending":   mut(func(p []byte) []byte { copy(p[8:12], p[4:8]); return p }),
		"zero number":     mut(func(p []byte) []byte { p[4], p[5], p[6], p[7] = 0, 0, 0, 0; return p }),
		"number too big":  mut(func(p []byte) []byte { p[12+3] = 0x20; return p }),
		"truncated":       good[:20],
		"flag only":       {0, 0, 0, 0x80},
		"small numbers":   {1, 0, 0, 0x80, 1, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0},
	} {
		for _, m := range []interface{ DecodeBytes([]byte) error }{constructs.NewSparse(a), constructs.NewItem(a), constructs.NewFlat(a)} {
			err := m.DecodeBytes(p)
			var de *wire.DecodeError
			if !errors.As(err, &de) || !errors.Is(err, wire.ErrMalformed) {
				t.Errorf("%s: %T: %v, want a DecodeError", name, m, err)
			}
		}
	}
	// The fast path (Flat) and the per-field path of a dense schema (Item)
	// read field 1 of a sparse message and skip the others.
	x := constructs.NewItem(a)
	if err := x.DecodeBytes(good); err != nil {
		t.Fatal(err)
	}
	if x.GetI32() != 7 || !strings.Contains(x.String(), "i32:7") {
		t.Fatalf("per-field path over a sparse header: %v", x)
	}
	fl := constructs.NewFlat(a)
	if err := fl.DecodeBytes(good); err != nil {
		t.Fatal(err)
	}
	if fl.GetI32() != 7 || fl.HasName() {
		t.Fatalf("fast path over a sparse header: %v", fl)
	}
	// A sparse message whose field 2 is present too (Sparse.b = "bb").
	sp := sparseExample(a)
	sp.SetB("bb")
	q, _ := wire.Flatten(sp, nil)
	if err := fl.DecodeBytes(q); err != nil {
		t.Fatal(err)
	}
	if n, _ := fl.GetName(); fl.GetI32() != 7 || n != "bb" {
		t.Fatalf("fast path over a sparse header: %v", fl)
	}
}

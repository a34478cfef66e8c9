package codec

import (
	"bytes"
	"errors"
	"testing"

	"github.com/cornflakes-go/cornflakes/internal/benchschema/cf"
	"github.com/cornflakes-go/cornflakes/wire"
)

func TestCFTree(t *testing.T) {
	a := wire.NewArena()
	defer func() {
		if err := a.Reset(); err != nil {
			t.Error(err)
		}
	}()
	vals := values(TreeLeaves, 100)
	if err := CFBuildTree(cf.NewTree5(a), vals[:3]); !errors.Is(err, ErrCount) {
		t.Errorf("CFBuildTree of 3 values: %v, want ErrCount", err)
	}
	full := cf.NewTree5(a)
	if err := CFBuildTree(full, vals); err != nil {
		t.Fatal(err)
	}
	half := cf.NewTree5(a)
	if err := CFBuildTree(half, vals); err != nil {
		t.Fatal(err)
	}
	half.ClearRight()
	for _, tc := range []struct {
		name string
		msg  *cf.Tree5
		want [][]byte
	}{
		{"full", full, vals},
		{"left half", half, vals[:TreeLeaves/2]},
	} {
		b, err := wire.Flatten(tc.msg, nil)
		if err != nil {
			t.Fatal(err)
		}
		d := cf.NewTree5(a)
		if err := d.DecodeBytes(b); err != nil {
			t.Fatal(err)
		}
		got, err := CFTreeValues(d, make([][]byte, 0, TreeLeaves))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(tc.want) {
			t.Fatalf("%s: %d values, want %d", tc.name, len(got), len(tc.want))
		}
		for i := range got {
			if !bytes.Equal(got[i], tc.want[i]) {
				t.Fatalf("%s: value %d differs", tc.name, i)
			}
		}
	}
	// A truncated encoding fails (when it is first read or when the nested messages are).
	b, _ := wire.Flatten(full, nil)
	d := cf.NewTree5(a)
	if err := d.DecodeBytes(b[:len(b)/2]); err == nil {
		if _, err := CFTreeValues(d, nil); err == nil {
			t.Error("a truncated tree decoded without error")
		}
	}
}

package driver_test

import (
	"bytes"
	"sync"
	"testing"

	"github.com/cornflakes-go/cornflakes/datapath/dptest"
	"github.com/cornflakes-go/cornflakes/datapath/driver"
	"github.com/cornflakes-go/cornflakes/mem"
)

var fuzzPool = sync.OnceValues(func() (*mem.Pool, error) {
	return mem.NewPool(mem.PoolConfig{Name: "FuzzGather", MaxClass: 1 << 16})
})

// FuzzGather checks that Collect+Gather produce exactly the object's wire
// bytes within the segment budget, whatever the entry sizes (data[i] is the
// size of entry i, scaled) and budget, and that every reference comes back.
func FuzzGather(f *testing.F) {
	f.Add([]byte{10, 1, 200, 3, 3, 3, 250}, uint8(3), uint8(5))
	f.Add([]byte{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, uint8(17), uint8(0))
	f.Add([]byte{}, uint8(1), uint8(9))
	f.Add([]byte{0, 0, 5}, uint8(2), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, maxSeg, headLen uint8) {
		pool, err := fuzzPool()
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > 200 {
			data = data[:200]
		}
		obj := &dptest.Object{Header: bytes.Repeat([]byte{0xAB}, int(headLen)), Copied: []byte{1, 2, 3}}
		for i, d := range data {
			b, err := pool.Alloc(int(d) * 3)
			if err != nil {
				t.Fatal(err)
			}
			for j, bs := 0, b.Bytes(); j < len(bs); j++ {
				bs[j] = byte(i*31 + j)
			}
			obj.Entries = append(obj.Entries, b)
		}
		defer func() {
			for _, e := range obj.Entries {
				_ = e.Release()
			}
			if n := pool.InUse(); n != 0 {
				t.Fatalf("%d items in use after the test", n)
			}
		}()
		sz := obj.Sizes()
		tx := make([]byte, sz.Head()+sz.ZeroCopy)
		var c driver.EntryCollector
		if err := c.Collect(obj, sz, tx[:sz.Head()]); err != nil {
			t.Fatal(err)
		}
		sel := driver.NewSelector(int(maxSeg%40) + 1)
		sg, _, ce, _, err := c.Gather(sel, tx, sz.Head(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(sg) > sel.MaxSegments() {
			t.Fatalf("%d segments, budget %d", len(sg), sel.MaxSegments())
		}
		if c.Len()+ce != len(obj.Entries) {
			t.Fatalf("kept %d + copied %d != %d entries", c.Len(), ce, len(obj.Entries))
		}
		if got, want := bytes.Join(sg, nil), obj.WireBytes(); !bytes.Equal(got, want) {
			t.Fatalf("gathered %d bytes differ from the %d wire bytes at %d", len(got), len(want), diffAt(got, want))
		}
		if err := c.Release(); err != nil {
			t.Fatal(err)
		}
	})
}

func diffAt(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

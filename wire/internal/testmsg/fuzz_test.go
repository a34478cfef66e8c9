package testmsg

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/wire"
)

var (
	fuzzPoolOnce sync.Once
	fuzzPool     *mem.Pool
	fuzzPoolErr  error
)

// FuzzDecodeTestMsg decodes arbitrary bytes as an AllTypes (from the Go
// heap and from registered memory), reads every field, re-serializes a
// message that decoded cleanly and checks it round-trips; references must
// all be released by the arena's Reset.
func FuzzDecodeTestMsg(f *testing.F) {
	v := newValues(f)
	a := wire.NewArena()
	for seed := range uint64(8) {
		r := rand.New(rand.NewPCG(seed, 1))
		flat, err := wire.Flatten(randAllTypes(r, a, v), nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(flat)
		if err := a.Reset(); err != nil {
			f.Fatal(err)
		}
	}
	for _, name := range []string{"itemv2.bin", "alltypes.bin"} {
		if p, err := os.ReadFile(filepath.Join("testdata", "golden", name)); err == nil {
			f.Add(p)
		}
	}
	f.Add([]byte{0, 0, 0, 0})
	f.Add(header([3]uint32{33, 16, 20}))
	fuzzPoolOnce.Do(func() { fuzzPool, fuzzPoolErr = mem.NewPool(mem.PoolConfig{Name: "fuzz"}) })
	if fuzzPoolErr != nil {
		f.Fatal(fuzzPoolErr)
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		for _, threshold := range []int{0, wire.DefaultThreshold} {
			a := wire.NewArena()
			a.Threshold = threshold
			m := NewAllTypes(a)
			var err error
			if threshold == 0 && len(p) > 0 && len(p) <= fuzzPool.MaxSize() {
				in, aerr := fuzzPool.AllocCopy(p)
				if aerr != nil {
					t.Fatal(aerr)
				}
				err = m.Decode(in)
				if rerr := in.Release(); rerr != nil {
					t.Fatal(rerr)
				}
			} else {
				err = m.DecodeBytes(bytes.Clone(p))
			}
			if err == nil {
				err = walk(m)
			}
			if err == nil {
				flat, ferr := wire.Flatten(m, nil)
				if ferr != nil {
					t.Fatalf("Flatten of a cleanly decoded message: %v", ferr)
				}
				d := NewAllTypes(a)
				if derr := d.DecodeBytes(flat); derr != nil || !d.Equal(m) {
					t.Fatalf("round trip of a decoded message: %v", derr)
				}
			} else if !errors.Is(err, wire.ErrMalformed) && !errors.Is(err, wire.ErrInvalidUTF8) {
				t.Fatalf("unexpected error type: %v", err)
			}
			if err := a.Reset(); err != nil {
				t.Fatal(err)
			}
			if n := fuzzPool.InUse(); n != 0 {
				t.Fatalf("%d items in use after Reset", n)
			}
		}
	})
}

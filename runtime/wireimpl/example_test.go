package wireimpl_test

import (
	"fmt"
	"math"
	"strings"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/runtime/wireimpl"
)

// exampleLookup is a per-batch scratch record.
type exampleLookup struct {
	key  []byte
	slot int
}

// exampleLookupType is exampleLookup's allocation key, made once, at
// package initialization.
var exampleLookupType = wireimpl.NewType[exampleLookup]()

// NewType gives a type the arena's allocation: values come from per-arena
// slabs, are valid until Reset and are reused after it, so a steady
// workload allocates nothing from the Go heap. Generated code declares one
// Type per message this way.
func ExampleNewType() {
	a := wireimpl.NewArena()
	for batch := range 2 {
		l := exampleLookupType.New(a) // zeroed, even when its memory is reused
		fmt.Printf("batch %d: new %+v\n", batch, *l)
		l.key, l.slot = a.CopyString("key"), batch

		table := exampleLookupType.NewSlice(a, 4) // len == cap == 4, zeroed
		table[l.slot] = *l
		fmt.Printf("batch %d: table[%d] = %s, len %d\n", batch, l.slot, table[l.slot].key, len(table))
		if err := a.Reset(); err != nil { // l and table are gone
			panic(err)
		}
	}
	// Output:
	// batch 0: new {key:[] slot:0}
	// batch 0: table[0] = key, len 4
	// batch 1: new {key:[] slot:0}
	// batch 1: table[1] = key, len 4
}

// A String field follows the hybrid rule like Bytes and checks UTF-8 when
// read. Its value lives until the arena's Reset: to keep it longer, copy it
// (strings.Clone) or Clone the zero-copy Buf.
func ExampleString() {
	pool, err := mem.NewPool(mem.PoolConfig{Name: "example-string"})
	if err != nil {
		panic(err)
	}
	doc, err := pool.AllocCopy([]byte(strings.Repeat("ü", 512))) // 1024 bytes
	if err != nil {
		panic(err)
	}

	a := wireimpl.NewArena()
	var short, bad, long wireimpl.String
	short.SetString(a, "grüß")
	bad.Set(a, []byte{'o', 0xff})
	long.SetBuf(a, doc) // the arena takes its own reference
	_ = doc.Release()

	s, err := short.Get()
	fmt.Println(s, err, short.Len(), short.IsZeroCopy())
	_, err = bad.Get()
	fmt.Printf("%v %v %q\n", bad.Valid(), err, bad.Bytes())
	fmt.Println(long.Len(), long.Valid(), long.IsZeroCopy())

	keep := strings.Clone(s)   // a copy on the Go heap
	kept := long.Buf().Clone() // a reference of our own
	_ = a.Reset()
	fmt.Println(keep, kept.Len(), kept.Refs())
	_ = kept.Release()
	fmt.Println(pool.Close())
	// Output:
	// grüß <nil> 6 false
	// false wire: string field is not valid UTF-8 "o\xff"
	// 1024 true true
	// grüß 1024 1
	// <nil>
}

// Text is the one-line form that every generated String method returns:
// short bytes and strings are quoted (invalid UTF-8 escaped), longer values
// shown by length, enums by name, lists and nested messages in place.
func ExampleText() {
	var t wireimpl.Text
	t.Begin("Batch")
	t.Uint("requests", 32)
	t.Float("hit_rate", 0.75, 64)
	t.Bool("flushed", true)
	t.Bytes("key", new(wireimpl.Bytes))
	fmt.Println(t.End())
	// Output:
	// Batch{requests:32 hit_rate:0.75 flushed:true key:""}
}

// EqualFloat64 compares the way generated Equal methods do: by bits, so a
// NaN equals the same NaN and -0 differs from +0, unlike ==.
func ExampleEqualFloat64() {
	v := []float64{math.NaN(), math.NaN(), 0, math.Copysign(0, -1)}
	fmt.Println(v[0] == v[1], wireimpl.EqualFloat64(v[0], v[1]))
	fmt.Println(v[2] == v[3], wireimpl.EqualFloat64(v[2], v[3]))
	// Output:
	// false true
	// true false
}

func ExampleEqualFloat32() {
	nan := float32(math.NaN())
	fmt.Println(wireimpl.EqualFloat32(nan, nan), wireimpl.EqualFloat32(0, float32(math.Copysign(0, -1))))
	// Output: true false
}

// The hybrid rule: below the threshold a value is copied; at or above it,
// registered memory is referenced and anything else is copied.
func ExampleBytes() {
	pool, err := mem.NewPool(mem.PoolConfig{Name: "example-bytes"})
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	reg, _ := pool.AllocCopy(make([]byte, 1024))
	defer reg.Release()
	heap := make([]byte, 1024)

	a := wireimpl.NewArena()
	defer a.Reset()
	var small, big, other wireimpl.Bytes
	small.Set(a, reg.Bytes()[:100]) // shorter than a.Threshold (512)
	big.Set(a, reg.Bytes())         // registered: zero-copy
	other.Set(a, heap)              // Go heap: copied
	fmt.Println(small.IsZeroCopy(), big.IsZeroCopy(), other.IsZeroCopy())
	// Output: false true false
}

// Generated code names the runtime version it was made for, N, in two
// constants; with N = Version they compile. Code for N = Version+1 (a
// newer generator) or N < MinVersion would not: the constant expression
// is negative, which EnforceVersion, an unsigned type, cannot hold.
func ExampleEnforceVersion() {
	const n = wireimpl.Version // the generator writes the number itself
	const (
		_ = wireimpl.EnforceVersion(n - wireimpl.MinVersion)
		_ = wireimpl.EnforceVersion(wireimpl.Version - n)
	)
	fmt.Println(wireimpl.MinVersion <= n && n <= wireimpl.Version)
	// Output: true
}

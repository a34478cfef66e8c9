package microbench

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/cornflakes-go/cornflakes/internal/baselines/codec"
	"strings"
)

// Kind is the message type of a shape in internal/benchschema/bench.proto (defined with the
// baselines' codecs, package internal/baselines/codec).
type Kind = codec.Kind

const (
	// KindSingle is SingleBuffer: one bytes field.
	KindSingle = codec.KindSingle
	// KindList is ListBuffers: a repeated bytes field.
	KindList = codec.KindList
	// KindTree is Tree5: a binary tree of depth 5 whose 32 leaves are SingleBuffer.
	KindTree = codec.KindTree
)

// TreeDepth is the depth of the tree5 shape; it has 1<<TreeDepth leaves.
const TreeDepth = codec.TreeDepth

// TreeLeaves is the number of leaves of the tree5 shape.
const TreeLeaves = codec.TreeLeaves

// TreeLeafSize is the size of every leaf value of the tree5 shape (32 × 128 B = 4 KiB in total,
// the same payload as 1x4096 and 4x1024, all of it below the hybrid threshold).
const TreeLeafSize = 128

// GoogleVariants is the number of distinct messages drawn for each google-* shape; a case cycles
// through them so that one record averages over the distribution rather than one draw.
const GoogleVariants = 64

// GoogleMaxTotal caps the sum of a google-* message's values (as upstream Cornflakes does: a list
// whose total exceeds it is redrawn).
const GoogleMaxTotal = 8192

// Shape is one message shape of the microbenchmark: a message kind and the sizes of its bytes
// values. A shape with several variants (google-*) is measured by cycling through them.
type Shape struct {
	Name string
	Kind Kind
	// Variants lists, per variant, the sizes of the values in schema order (for KindTree the 32
	// leaves in depth-first left-to-right order; for KindSingle exactly one size).
	Variants [][]int
}

// ErrUnknownShape is returned (wrapped) for a shape name that is not one of Shapes.
var ErrUnknownShape = errors.New("microbench: unknown shape")

// SweepSizes are the field sizes of the sweep-<size> shapes.
var SweepSizes = []int{64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536}

// ShapeNames returns the names of every shape, in the order the benchmark runs them.
func ShapeNames() []string {
	names := []string{"1x1024", "2x2048", "4x1024", "1x4096", "1x8192", "8x512",
		"google-1", "google-1-4", "google-1-8", "google-1-16", "tree5"}
	for _, s := range SweepSizes {
		names = append(names, "sweep-"+strconv.Itoa(s))
	}
	return names
}

// Shapes returns every shape, in the order of ShapeNames.
func Shapes() []Shape {
	names := ShapeNames()
	out := make([]Shape, 0, len(names))
	for _, n := range names {
		s, err := ShapeByName(n)
		if err != nil {
			panic(err) // ShapeNames and ShapeByName disagree: a bug in this file
		}
		out = append(out, s)
	}
	return out
}

// ShapeByName parses a shape name: NxM (N values of M bytes; N = 1 is a SingleBuffer, N > 1 a
// ListBuffers), google-1, google-1-K, tree5 or sweep-<size>. NxM and sweep accept any sizes
// within limits, not only the standard ones.
func ShapeByName(name string) (Shape, error) {
	bad := func(why string) (Shape, error) {
		return Shape{}, fmt.Errorf("%w %q: %s (known: %s)", ErrUnknownShape, name, why, strings.Join(ShapeNames(), ", "))
	}
	switch {
	case name == "tree5":
		sizes := make([]int, TreeLeaves)
		for i := range sizes {
			sizes[i] = TreeLeafSize
		}
		return Shape{Name: name, Kind: KindTree, Variants: [][]int{sizes}}, nil
	case name == "google-1":
		return googleShape(name, 1), nil
	case strings.HasPrefix(name, "google-1-"):
		k, err := strconv.Atoi(strings.TrimPrefix(name, "google-1-"))
		if err != nil || k < 1 || k > 64 {
			return bad("want google-1-K with 1 <= K <= 64")
		}
		return googleShape(name, k), nil
	case strings.HasPrefix(name, "sweep-"):
		m, err := strconv.Atoi(strings.TrimPrefix(name, "sweep-"))
		if err != nil || m < 1 || m > MaxValueSize {
			return bad(fmt.Sprintf("want sweep-<size> with 1 <= size <= %d", MaxValueSize))
		}
		return Shape{Name: name, Kind: KindSingle, Variants: [][]int{{m}}}, nil
	}
	ns, ms, ok := strings.Cut(name, "x")
	if !ok {
		return bad("not NxM, google-1[-K], tree5 or sweep-<size>")
	}
	n, err1 := strconv.Atoi(ns)
	m, err2 := strconv.Atoi(ms)
	if err1 != nil || err2 != nil || n < 1 || n > MaxValues || m < 1 || m > MaxValueSize || n*m > MaxShapeBytes {
		return bad(fmt.Sprintf("want NxM with 1 <= N <= %d, 1 <= M <= %d and N*M <= %d", MaxValues, MaxValueSize, MaxShapeBytes))
	}
	sizes := make([]int, n)
	for i := range sizes {
		sizes[i] = m
	}
	kind := KindList
	if n == 1 {
		kind = KindSingle
	}
	return Shape{Name: name, Kind: kind, Variants: [][]int{sizes}}, nil
}

// MaxValues, MaxValueSize and MaxShapeBytes bound user-given NxM and sweep shapes (every
// library keeps a copy of the values and of a serialized message).
const (
	// MaxValues is the largest number of values of one message.
	MaxValues = 1024
	// MaxValueSize is the largest value.
	MaxValueSize = 1 << 20
	// MaxShapeBytes is the largest total of one message's values.
	MaxShapeBytes = 16 << 20
)

// googleBuckets is the Google protobuf bytes-field size distribution (Karandikar et al.,
// MICRO'21, Fig. 4c) as transcribed by upstream Cornflakes (cf-kv/src/google_protobuf.rs):
// inclusive size ranges with weights in percent; a size is uniform within its bucket.
var googleBuckets = []struct {
	lo, hi int
	weight float64
}{
	{1, 8, 33.8}, {9, 16, 15.3}, {17, 22, 7.6}, {23, 32, 13.5}, {33, 64, 10.6},
	{65, 128, 6.1}, {129, 512, 8.0}, {513, 4096, 3.7}, {4097, GoogleMaxTotal, 1.36},
}

// googleSize draws one value size from googleBuckets.
func googleSize(r *rand.Rand) int {
	var total float64
	for _, b := range googleBuckets {
		total += b.weight
	}
	x := r.Float64() * total
	for _, b := range googleBuckets {
		if x < b.weight {
			return b.lo + r.IntN(b.hi-b.lo+1)
		}
		x -= b.weight
	}
	b := googleBuckets[len(googleBuckets)-1]
	return b.lo + r.IntN(b.hi-b.lo+1)
}

// googleShape draws GoogleVariants lists of 1..k values (uniform, inclusive) from the Google
// distribution, redrawing a whole list whose total exceeds GoogleMaxTotal. The seed depends only
// on the shape name, so every run and every library measures the same messages.
func googleShape(name string, k int) Shape {
	var seed uint64
	for _, c := range []byte(name) {
		seed = seed*131 + uint64(c)
	}
	r := rand.New(rand.NewPCG(seed, 0x636f726e666c616b)) // "cornflak"
	vs := make([][]int, GoogleVariants)
	for i := range vs {
		for {
			n := 1 + r.IntN(k)
			sizes := make([]int, n)
			total := 0
			for j := range sizes {
				sizes[j] = googleSize(r)
				total += sizes[j]
			}
			if total <= GoogleMaxTotal {
				vs[i] = sizes
				break
			}
		}
	}
	return Shape{Name: name, Kind: KindList, Variants: vs}
}

// Values returns fresh Go-heap values for every variant of s (variant → values in schema order),
// filled with a deterministic pattern that differs per value so that mixed-up fields are caught.
func (s Shape) Values() [][][]byte {
	out := make([][][]byte, len(s.Variants))
	for v, sizes := range s.Variants {
		out[v] = make([][]byte, len(sizes))
		for i, n := range sizes {
			b := make([]byte, n)
			FillValue(b, v, i)
			out[v][i] = b
		}
	}
	return out
}

// FillValue fills b with the deterministic pattern of value i of variant v.
func FillValue(b []byte, v, i int) {
	x := uint32(v*7919+i*104729) | 1
	for j := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[j] = byte(x)
	}
}

// TotalBytes returns the sum of the value sizes of variant v.
func (s Shape) TotalBytes(v int) int {
	t := 0
	for _, n := range s.Variants[v] {
		t += n
	}
	return t
}

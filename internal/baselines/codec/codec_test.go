package codec

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"unsafe"

	"google.golang.org/protobuf/proto"

	"github.com/cornflakes-go/cornflakes/internal/baselines/pb"
)

// lib is one codec under test, behind closures (tests only: the benchmarks call the concrete
// types directly).
type lib struct {
	name   string
	encode func(vals [][]byte) ([]byte, error) // returns a copy
	decode func(in []byte) ([][]byte, error)
	close  func() error
}

func libs(t testing.TB, k Kind) []lib {
	t.Helper()
	var out []lib
	for _, vt := range []bool{false, true} {
		c, err := NewProtobuf(k, vt)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, lib{
			name: map[bool]string{false: "protobuf", true: "vtprotobuf"}[vt],
			encode: func(v [][]byte) ([]byte, error) {
				b, err := c.Encode(v)
				return bytes.Clone(b), err
			},
			decode: c.Decode,
			close:  func() error { return nil },
		})
	}
	f, err := NewFlatBuffers(k, 64)
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, lib{
		name: "flatbuffers",
		encode: func(v [][]byte) ([]byte, error) {
			b, err := f.Encode(v)
			return bytes.Clone(b), err
		},
		decode: f.Decode,
		close:  func() error { return nil },
	})
	cp, err := NewCapnp(k)
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, lib{
		name: "capnp",
		encode: func(v [][]byte) ([]byte, error) {
			hdr, seg, err := cp.Encode(v)
			return append(bytes.Clone(hdr), seg...), err
		},
		decode: cp.Decode,
		close:  cp.Close,
	})
	t.Cleanup(func() {
		for _, l := range out {
			if err := l.close(); err != nil {
				t.Error(err)
			}
		}
	})
	return out
}

// values returns n values of the given size with distinct contents.
func values(n, size int) [][]byte {
	vs := make([][]byte, n)
	for i := range vs {
		vs[i] = make([]byte, size)
		for j := range vs[i] {
			vs[i][j] = byte(i*7 + j)
		}
	}
	return vs
}

func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		kind Kind
		vals [][]byte
	}{
		{KindSingle, values(1, 0)},
		{KindSingle, values(1, 8192)},
		{KindList, values(0, 0)},
		{KindList, values(3, 7)},
		{KindList, values(8, 512)},
		{KindTree, values(TreeLeaves, 128)},
	} {
		for _, l := range libs(t, tc.kind) {
			t.Run(fmt.Sprintf("%v/%d/%s", tc.kind, len(tc.vals), l.name), func(t *testing.T) {
				msg, err := l.encode(tc.vals)
				if err != nil {
					t.Fatal(err)
				}
				for range 2 { // decoding twice checks the reset of reused state
					got, err := l.decode(msg)
					if err != nil {
						t.Fatal(err)
					}
					if len(got) != len(tc.vals) {
						t.Fatalf("%d values, want %d", len(got), len(tc.vals))
					}
					for i := range got {
						if !bytes.Equal(got[i], tc.vals[i]) {
							t.Fatalf("value %d differs", i)
						}
					}
				}
			})
		}
	}
}

func TestErrors(t *testing.T) {
	if _, err := NewProtobuf(Kind(7), false); !errors.Is(err, ErrKind) {
		t.Errorf("NewProtobuf(Kind(7)): %v, want ErrKind", err)
	}
	if _, err := NewFlatBuffers(-1, 0); !errors.Is(err, ErrKind) {
		t.Errorf("NewFlatBuffers(-1): %v, want ErrKind", err)
	}
	if _, err := NewCapnp(3); !errors.Is(err, ErrKind) {
		t.Errorf("NewCapnp(3): %v, want ErrKind", err)
	}
	// Encoding the wrong count is refused before touching the builders; garbage does not decode
	// (the empty input is a valid protobuf message, so it is only garbage for the others).
	for _, k := range []Kind{KindSingle, KindList, KindTree} {
		for _, l := range libs(t, k) {
			if k != KindList {
				if _, err := l.encode(values(2, 3)); !errors.Is(err, ErrCount) {
					t.Errorf("%v %s: encode of 2 values: %v, want ErrCount", k, l.name, err)
				}
			}
			bad := [][]byte{{1, 2, 3}, bytes.Repeat([]byte{0xff}, 64)}
			if l.name != "protobuf" && l.name != "vtprotobuf" {
				bad = append(bad, nil)
			}
			for _, in := range bad {
				if _, err := l.decode(in); !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrCount) {
					t.Errorf("%v %s: decode(%x): %v, want ErrMalformed or ErrCount", k, l.name, in, err)
				}
			}
		}
	}
	// A protobuf-go Tree5 missing its right half has the wrong count.
	full := newPBTree()
	half, err := proto.Marshal(&pb.Tree5{Left: full.Left})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := NewProtobuf(KindTree, false)
	if _, err := c.Decode(half); !errors.Is(err, ErrCount) {
		t.Errorf("half a tree: %v, want ErrCount", err)
	}
}

// TestNoAllocs pins the allocation-free paths: every encode, and every decode but
// protobuf-go's (which copies the values).
func TestNoAllocs(t *testing.T) {
	for _, k := range []Kind{KindSingle, KindList, KindTree} {
		n := map[Kind]int{KindSingle: 1, KindList: 4, KindTree: TreeLeaves}[k]
		vals := values(n, 256)
		pbc, _ := NewProtobuf(k, false)
		vtc, _ := NewProtobuf(k, true)
		fbc, _ := NewFlatBuffers(k, 1<<14)
		cpc, _ := NewCapnp(k)
		defer cpc.Close()
		in, _ := pbc.Encode(vals)
		in = bytes.Clone(in)
		fin, _ := fbc.Encode(vals)
		fin = bytes.Clone(fin)
		hdr, seg, _ := cpc.Encode(vals)
		cin := append(bytes.Clone(hdr), seg...)
		for _, tc := range []struct {
			name string
			f    func() error
		}{
			{"protobuf/encode", func() error { _, err := pbc.Encode(vals); return err }},
			{"vtprotobuf/encode", func() error { _, err := vtc.Encode(vals); return err }},
			{"vtprotobuf/decode", func() error { _, err := vtc.Decode(in); return err }},
			{"flatbuffers/encode", func() error { _, err := fbc.Encode(vals); return err }},
			{"flatbuffers/decode", func() error { _, err := fbc.Decode(fin); return err }},
			{"flatbuffers/decode-trusted", func() error { fbc.DecodeTrusted(fin); return nil }},
			{"capnp/encode", func() error { _, _, err := cpc.Encode(vals); return err }},
			{"capnp/decode", func() error { _, err := cpc.Decode(cin); return err }},
		} {
			if raceEnabled && tc.name == "capnp/encode" {
				continue // capnp's arenas come from a sync.Pool, which drops items at random under -race
			}
			var err error
			if a := testing.AllocsPerRun(100, func() { err = tc.f() }); a != 0 || err != nil {
				t.Errorf("%v %s: %v allocations per call, err %v", k, tc.name, a, err)
			}
		}
	}
}

// FuzzDecode feeds arbitrary bytes to every codec's Decode for every kind: each returns values
// (no more copied bytes than the input holds) or an error, never panics. Seeds are each library's
// messages (plus testdata/fuzz/FuzzDecode).
func FuzzDecode(f *testing.F) {
	targets := map[Kind][]lib{}
	for _, k := range []Kind{KindSingle, KindList, KindTree} {
		n := map[Kind]int{KindSingle: 1, KindList: 3, KindTree: TreeLeaves}[k]
		targets[k] = libs(f, k)
		for _, l := range targets[k] {
			msg, err := l.encode(values(n, 5))
			if err != nil {
				f.Fatal(err)
			}
			f.Add(msg)
		}
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		for k, ls := range targets {
			for _, l := range ls {
				vals, err := l.decode(msg)
				if err != nil {
					if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrCount) {
						t.Errorf("%v %s: untyped error %v", k, l.name, err)
					}
					continue
				}
				// A value either aliases the message (Cap'n Proto and FlatBuffers
				// pointers may share their target, so aliased values can add up to
				// more than the message: views, bounded by the library's traversal
				// limit, not allocations) or is counted against the message's size.
				copied := 0
				for _, v := range vals {
					if !aliases(v, msg) {
						copied += len(v)
					}
				}
				if copied > len(msg) && l.name != "protobuf" {
					t.Errorf("%v %s: %d bytes of copied values from a %d-byte message", k, l.name, copied, len(msg))
				}
			}
		}
	})
}

// aliases reports whether v lies inside msg's memory.
func aliases(v, msg []byte) bool {
	if len(v) == 0 || len(msg) == 0 {
		return len(v) == 0
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(msg)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(v)))
	return p >= lo && p+uintptr(len(v)) <= lo+uintptr(len(msg))
}

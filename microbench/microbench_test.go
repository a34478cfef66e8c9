package microbench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// testShapes is every standard shape plus a few odd sizes.
func testShapes(t testing.TB) []Shape {
	shapes := Shapes()
	for _, n := range []string{"1x1", "3x7", "2x513"} {
		s, err := ShapeByName(n)
		if err != nil {
			t.Fatal(err)
		}
		shapes = append(shapes, s)
	}
	return shapes
}

// checkRoundTrip runs every op on a case for two full cycles of variants and checks that the
// output of Serialize and Echo decodes (with the library's own Values) to the variant's values.
func checkRoundTrip(t *testing.T, lib Library, mode string, shape Shape) {
	t.Helper()
	c, err := lib.Prepare(shape, mode)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	want := shape.Values()
	n := len(shape.Variants)
	// The ops share one cycle over the variants: call k handles variant k mod n.
	ops := []Op{OpSerialize, OpEcho, OpDecode}
	for k := 0; k < 3*n+3; k++ {
		v, op := k%n, ops[k%len(ops)]
		if err := op.Run(c); err != nil {
			t.Fatalf("%s variant %d: %v", op, v, err)
		}
		if op == OpDecode {
			continue
		}
		out, err := c.Output()
		if err != nil {
			t.Fatalf("%s variant %d: Output: %v", op, v, err)
		}
		got, err := c.Values(out)
		if err != nil {
			t.Fatalf("%s variant %d: Values: %v", op, v, err)
		}
		if !equalValues(got, want[v]) {
			t.Fatalf("%s variant %d: decoded %s, want %s", op, v, describe(got), describe(want[v]))
		}
	}
}

func equalValues(a, b [][]byte) bool {
	return slices.EqualFunc(a, b, bytes.Equal)
}

func describe(vs [][]byte) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d values [", len(vs))
	for i, v := range vs {
		if i > 0 {
			sb.WriteString(" ")
		}
		if i == 8 {
			sb.WriteString("...")
			break
		}
		fmt.Fprintf(&sb, "%dB", len(v))
	}
	sb.WriteString("]")
	return sb.String()
}

func TestRoundTrip(t *testing.T) {
	for _, lib := range Libraries() {
		for _, mode := range lib.Modes() {
			for _, shape := range testShapes(t) {
				t.Run(label(lib.Name(), mode)+"/"+shape.Name, func(t *testing.T) {
					checkRoundTrip(t, lib, mode, shape)
				})
			}
		}
	}
}

// TestValuesRejectsGarbage feeds each library's Values malformed input: it must return an
// error or some values, never panic.
func TestValuesRejectsGarbage(t *testing.T) {
	inputs := [][]byte{nil, {0}, {1, 2, 3}, bytes.Repeat([]byte{0xff}, 64), {0, 0, 0, 0, 0xff, 0xff, 0xff, 0x0f}}
	for _, lib := range Libraries() {
		for _, mode := range lib.Modes() {
			for _, kind := range []string{"1x64", "4x64", "tree5"} {
				shape, _ := ShapeByName(kind)
				c, err := lib.Prepare(shape, mode)
				if err != nil {
					t.Fatal(err)
				}
				for _, in := range inputs {
					func() {
						defer func() {
							if p := recover(); p != nil {
								t.Errorf("%s %s: Values(%x) panicked: %v", label(lib.Name(), mode), kind, in, p)
							}
						}()
						_, _ = c.Values(in)
					}()
				}
				if err := c.Close(); err != nil {
					t.Error(err)
				}
			}
		}
	}
}

func TestShapes(t *testing.T) {
	names := ShapeNames()
	if len(names) != 22 {
		t.Errorf("%d shapes, want 22: %v", len(names), names)
	}
	for _, s := range Shapes() {
		if err := checkShape(s); err != nil {
			t.Error(err)
		}
		for v := range s.Variants {
			if s.TotalBytes(v) > GoogleMaxTotal && strings.HasPrefix(s.Name, "google") {
				t.Errorf("%s variant %d: %d bytes > %d", s.Name, v, s.TotalBytes(v), GoogleMaxTotal)
			}
		}
	}
	tests := []struct {
		name   string
		kind   Kind
		counts []int // allowed value counts
		sizes  []int // every value size (nil: not checked)
	}{
		{"1x1024", KindSingle, []int{1}, []int{1024}},
		{"2x2048", KindList, []int{2}, []int{2048}},
		{"8x512", KindList, []int{8}, []int{512}},
		{"sweep-65536", KindSingle, []int{1}, []int{65536}},
		{"tree5", KindTree, []int{32}, []int{TreeLeafSize}},
		{"google-1", KindList, []int{1}, nil},
		{"google-1-4", KindList, []int{1, 2, 3, 4}, nil},
		{"google-1-16", KindList, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, nil},
	}
	for _, tt := range tests {
		s, err := ShapeByName(tt.name)
		if err != nil {
			t.Fatal(err)
		}
		if s.Kind != tt.kind {
			t.Errorf("%s: kind %v, want %v", tt.name, s.Kind, tt.kind)
		}
		seen := map[int]bool{}
		for _, v := range s.Variants {
			if !slices.Contains(tt.counts, len(v)) {
				t.Errorf("%s: variant with %d values", tt.name, len(v))
			}
			seen[len(v)] = true
			for _, n := range v {
				if tt.sizes != nil && !slices.Contains(tt.sizes, n) || n < 1 || n > GoogleMaxTotal && tt.sizes == nil {
					t.Errorf("%s: value of %d bytes", tt.name, n)
				}
			}
		}
		if len(tt.counts) > 1 && len(seen) < 2 {
			t.Errorf("%s: all %d variants have the same length", tt.name, len(s.Variants))
		}
	}
	// Determinism: the same name gives the same variants.
	a, _ := ShapeByName("google-1-8")
	b, _ := ShapeByName("google-1-8")
	if !slices.EqualFunc(a.Variants, b.Variants, slices.Equal) {
		t.Error("google-1-8 differs between two calls")
	}
	for _, bad := range []string{"", "x", "0x10", "2x0", "google-2", "google-1-0", "sweep-", "sweep-0", "tree4", "1x99999999", "1024x1048576", "x1", "1x", "-1x4", "sweep-x"} {
		if _, err := ShapeByName(bad); !errors.Is(err, ErrUnknownShape) {
			t.Errorf("ShapeByName(%q) = %v, want ErrUnknownShape", bad, err)
		}
	}
}

// TestGoogleDistribution checks that the drawn sizes follow the bucket weights roughly: about a
// third of values are at most 8 bytes and few exceed 512.
func TestGoogleDistribution(t *testing.T) {
	s, _ := ShapeByName("google-1-16")
	var n, small, large int
	for _, v := range s.Variants {
		for _, sz := range v {
			n++
			if sz <= 8 {
				small++
			}
			if sz > 512 {
				large++
			}
		}
	}
	if f := float64(small) / float64(n); f < 0.2 || f > 0.5 {
		t.Errorf("%.2f of %d values are <= 8 B, want about 0.34", f, n)
	}
	if f := float64(large) / float64(n); f > 0.15 {
		t.Errorf("%.2f of %d values are > 512 B, want about 0.05", f, n)
	}
}

func TestRunJSON(t *testing.T) {
	shapes := []Shape{}
	for _, n := range []string{"2x2048", "google-1-4", "tree5"} {
		s, _ := ShapeByName(n)
		shapes = append(shapes, s)
	}
	var progress bytes.Buffer
	recs, err := Run(Config{Shapes: shapes, Budget: 2 * time.Millisecond, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteJSON(&out, recs); err != nil {
		t.Fatal(err)
	}
	var parsed []map[string]any
	if err := json.Unmarshal(out.Bytes(), &parsed); err != nil {
		t.Fatalf("output is not a JSON array: %v\n%s", err, out.String())
	}
	want := map[string]bool{}
	for _, lib := range Libraries() {
		for _, mode := range lib.Modes() {
			for _, s := range shapes {
				for _, op := range Ops() {
					want[lib.Name()+"|"+mode+"|"+s.Name+"|"+string(op)] = true
				}
			}
		}
	}
	if len(parsed) != len(want) {
		t.Errorf("%d records, want %d", len(parsed), len(want))
	}
	for _, r := range parsed {
		if len(r) != 8 {
			t.Errorf("record has %d fields, want 8: %v", len(r), r)
		}
		key := fmt.Sprintf("%v|%v|%v|%v", r["library"], r["mode"], r["shape"], r["op"])
		if !want[key] {
			t.Errorf("unexpected or duplicate record %s", key)
		}
		delete(want, key)
		for _, f := range []string{"ns_per_op", "allocs_per_op", "bytes_per_op", "vs_best_baseline"} {
			x, ok := r[f].(float64)
			if !ok || x < 0 || (f == "ns_per_op" || f == "vs_best_baseline") && x <= 0 {
				t.Errorf("%s: %s = %v", key, f, r[f])
			}
		}
	}
	for k := range want {
		t.Errorf("missing record %s", k)
	}
	if !strings.Contains(progress.String(), "tree5") {
		t.Errorf("no progress for tree5: %q", progress.String())
	}
	var table bytes.Buffer
	if err := WriteTable(&table, recs); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"2x2048", "vtprotobuf", "echo", "ratio"} {
		if !strings.Contains(table.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, table.String())
		}
	}
}

func TestFilters(t *testing.T) {
	libs := Libraries()
	if err := CheckFilters(libs, []string{"protobuf", "capnp"}); err != nil {
		t.Error(err)
	}
	if err := CheckFilters(libs, []string{"nope"}); !errors.Is(err, ErrUnknownLibrary) {
		t.Errorf("got %v, want ErrUnknownLibrary", err)
	}
	if err := CheckFilters(libs, []string{"protobuf/fast"}); !errors.Is(err, ErrUnknownMode) {
		t.Errorf("got %v, want ErrUnknownMode", err)
	}
	if !selected([]string{"capnp"}, "capnp", "") || selected([]string{"capnp"}, "protobuf", "") {
		t.Error("library filter")
	}
	if !selected([]string{"cornflakes/copy"}, "cornflakes", "copy") || selected([]string{"cornflakes/copy"}, "cornflakes", "hybrid") {
		t.Error("mode filter")
	}
	if _, err := ParseOp("bogus"); !errors.Is(err, ErrUnknownOp) {
		t.Errorf("ParseOp: %v", err)
	}
}

func TestMeasure(t *testing.T) {
	calls := 0
	sink := [][]byte{}
	res, err := Measure(func() error {
		calls++
		sink = append(sink[:0], make([]byte, 64))
		return nil
	}, 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if res.N < 1 || calls <= res.N || res.NsPerOp <= 0 {
		t.Errorf("res %+v after %d calls", res, calls)
	}
	if res.AllocsPerOp < 0.9 || res.BytesPerOp < 60 {
		t.Errorf("an allocating function measured %v allocs, %v B per op", res.AllocsPerOp, res.BytesPerOp)
	}
	boom := errors.New("boom")
	n := 0
	if _, err := Measure(func() error {
		n++
		if n == 3 {
			return boom
		}
		return nil
	}, time.Millisecond); !errors.Is(err, boom) {
		t.Errorf("Measure error = %v, want boom", err)
	}
}

// TestBaselinesDoNotAllocate pins the fastest-API use: the aliasing decoders and reused
// builders and arenas allocate nothing per op (protobuf-go decode necessarily does: it copies).
func TestBaselinesDoNotAllocate(t *testing.T) {
	shape, _ := ShapeByName("2x2048")
	zero := map[string][]Op{
		"protobuf":    {OpSerialize},
		"vtprotobuf":  {OpSerialize, OpDecode, OpEcho},
		"flatbuffers": {OpSerialize, OpDecode, OpEcho},
		"capnp":       {OpSerialize, OpDecode, OpEcho},
	}
	for _, lib := range Baselines() {
		c, err := lib.Prepare(shape, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range zero[lib.Name()] {
			if raceEnabled && lib.Name() == "capnp" && op != OpDecode {
				continue // capnp's arenas come from a sync.Pool, which drops items at random under -race
			}
			var rerr error
			allocs := testing.AllocsPerRun(100, func() {
				if err := op.Run(c); err != nil {
					rerr = err
				}
			})
			if rerr != nil {
				t.Fatal(rerr)
			}
			if allocs != 0 {
				t.Errorf("%s %s: %v allocs per op, want 0", lib.Name(), op, allocs)
			}
		}
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}
}

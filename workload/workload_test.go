package workload

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"math"
	"strings"
	"testing"
)

func TestFNVHash64(t *testing.T) {
	// Java YCSB: Utils.fnvhash64(0) — FNV-1a over eight zero bytes, positive.
	// Cross-checked against hash/fnv over the little-endian bytes.
	for _, v := range []int64{0, 1, 2, 255, 256, 1 << 40, 999_999, math.MaxInt64, -1} {
		h := fnv.New64a()
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(v))
		h.Write(b[:])
		want := int64(h.Sum64())
		if want < 0 {
			want = -want
		}
		if got := FNVHash64(v); got != want {
			t.Errorf("FNVHash64(%d) = %d, want %d", v, got, want)
		}
	}
	// Known vectors (FNV-1a 64 of eight zero bytes is 0xa8c7f832281a39c5,
	// negative as a Java long; Math.abs gives 6284781860667377211 — the
	// "user6284781860667377211" key YCSB users see first).
	if got := FNVHash64(0); got != 6284781860667377211 {
		t.Errorf("FNVHash64(0) = %d, want 6284781860667377211", got)
	}
	if got := string(YCSBKey(nil, 0)); got != "user6284781860667377211" {
		t.Errorf("YCSBKey(0) = %q", got)
	}
}

func TestZipfianHeadFrequencies(t *testing.T) {
	const n = 1000
	z := NewZipfian(0, n-1, ZipfianConstant)
	r := newRand(1, 1)
	const draws = 400_000
	var c0, c1 int
	for range draws {
		switch z.Next(r) {
		case 0:
			c0++
		case 1:
			c1++
		}
	}
	zetan := Zeta(n, ZipfianConstant)
	// Gray's algorithm returns item 0 with probability exactly 1/zetan and
	// item 1 with 0.5^theta/zetan.
	check := func(name string, got int, p float64) {
		sd := math.Sqrt(draws * p * (1 - p))
		if math.Abs(float64(got)-draws*p) > 5*sd {
			t.Errorf("%s: %d draws, want %.0f ± %.0f", name, got, draws*p, 5*sd)
		}
	}
	check("item 0", c0, 1/zetan)
	check("item 1", c1, math.Pow(0.5, ZipfianConstant)/zetan)
}

func TestScrambledZipfianHotKey(t *testing.T) {
	const records = 1000
	s := NewScrambledZipfian(0, records)
	r := newRand(7, 0)
	counts := make([]int, records+1)
	const draws = 300_000
	for range draws {
		counts[s.Next(r)]++
	}
	hot := 0
	for i, c := range counts {
		if c > counts[hot] {
			hot = i
		}
	}
	if want := int(FNVHash64(0) % (records + 1)); hot != want {
		t.Fatalf("hottest keynum %d, want fnvhash64(0) %% %d = %d", hot, records+1, want)
	}
	// P(zipf sample 0) = 1/ZETAN; other samples colliding into the same
	// bucket add about 1/(records+1) of the rest.
	p := 1/ScrambledZetan + (1-1/ScrambledZetan)/(records+1)
	got := float64(counts[hot]) / draws
	if got < 0.9*p || got > 1.1*p {
		t.Errorf("hot key frequency %.4f, want ≈ %.4f", got, p)
	}
}

func TestGoogleBucketShares(t *testing.T) {
	s := newBucketSampler(GoogleFieldSizes)
	r := newRand(3, 0)
	const draws = 200_000
	counts := make([]int, len(GoogleFieldSizes))
	total := 0.0
	for _, b := range GoogleFieldSizes {
		total += b.Weight
	}
	for range draws {
		z := s.draw(r)
		for i, b := range GoogleFieldSizes {
			if z >= b.Lo && z <= b.Hi {
				counts[i]++
			}
		}
	}
	for i, b := range GoogleFieldSizes {
		want := b.Weight / total
		got := float64(counts[i]) / draws
		if math.Abs(got-want) > 0.005 {
			t.Errorf("bucket %d-%d: share %.4f, want %.4f", b.Lo, b.Hi, got, want)
		}
	}
}

func TestGoogleLists(t *testing.T) {
	g, err := NewGoogle(GoogleConfig{Keys: 5000})
	if err != nil {
		t.Fatal(err)
	}
	hist := map[int]int{}
	var key []byte
	for i := range 5000 {
		key = GoogleKey(key[:0], i, 64)
		if len(key) != 64 || !strings.HasPrefix(string(key), "key_") {
			t.Fatalf("key %q", key)
		}
		sizes, ok := g.Model().Sizes(key)
		if !ok {
			t.Fatalf("key %d missing", i)
		}
		sum := 0
		for _, z := range sizes {
			sum += int(z)
		}
		if sum > 8192 || len(sizes) < 1 || len(sizes) > 7 {
			t.Fatalf("key %d: %d values totalling %d", i, len(sizes), sum)
		}
		hist[len(sizes)]++
	}
	for n := 1; n <= 7; n++ {
		if hist[n] < 5000/7*8/10 { // uniform count, loose
			t.Errorf("lists of %d values: %d of 5000", n, hist[n])
		}
	}
}

func TestCDNSegments(t *testing.T) {
	d, err := NewCDN(CDNConfig{Objects: 300})
	if err != nil {
		t.Fatal(err)
	}
	var key []byte
	for i := range 300 {
		key = GoogleKey(key[:0], i, 64)
		sizes, ok := d.Model().Sizes(key)
		if !ok || len(sizes) == 0 {
			t.Fatalf("object %d missing", i)
		}
		sum := 0
		for j, z := range sizes {
			if j < len(sizes)-1 && z != 8000 {
				t.Fatalf("object %d segment %d has %d bytes", i, j, z)
			}
			if z == 0 || z > 8000 {
				t.Fatalf("object %d segment %d has %d bytes", i, j, z)
			}
			sum += int(z)
		}
		if sum%1000 != 0 || sum < 1000 || sum > 4096000 {
			t.Fatalf("object %d has %d bytes", i, sum)
		}
	}
	// a stream walks whole objects in order; Units mark object ends
	st := d.NewStream(0, 1, 1)
	var req Request
	objects := 0
	for range 2000 {
		st.Next(&req)
		if req.Op != OpGetFromList || len(req.Keys) != 1 {
			t.Fatalf("request %v", req.Op)
		}
		sizes, _ := d.Model().Sizes(req.Keys[0])
		last := req.Index == len(sizes)-1
		if (req.Units == 1) != last {
			t.Fatalf("segment %d of %d: units %d", req.Index, len(sizes), req.Units)
		}
		objects += req.Units
	}
	if objects == 0 {
		t.Fatal("no object completed in 2000 requests")
	}
}

func TestTwitterModel(t *testing.T) {
	w, err := NewTwitter(TwitterConfig{Keys: 20000})
	if err != nil {
		t.Fatal(err)
	}
	if m := w.ExpectedMeanValueSize(); math.Abs(m-2439)/2439 > 0.01 {
		t.Errorf("request-weighted mean value %.1f, want 2439 ± 1%%", m)
	}
	// share of requests for values > 512 B, and key sizes
	h, big := 0.0, 0.0
	for k := range 20000 {
		p := math.Pow(float64(k+1), -1.1004)
		h += p
		if w.ValueSize(k) > 512 {
			big += p
		}
	}
	if f := big / h; f < 0.25 || f > 0.40 {
		t.Errorf("request share of values > 512 B: %.3f, want ≈ 0.32", f)
	}
	st := w.NewStream(0, 1, 5)
	var req Request
	gets, n, keyBytes := 0, 20000, 0
	for range n {
		st.Next(&req)
		if req.Op == OpGet {
			gets++
		}
		keyBytes += len(req.Keys[0])
		if _, ok := w.Model().Sizes(req.Keys[0]); !ok {
			t.Fatalf("key %q not in model", req.Keys[0])
		}
	}
	if f := float64(gets) / float64(n); math.Abs(f-0.93) > 0.02 {
		t.Errorf("get fraction %.3f, want 0.93", f)
	}
	if m := float64(keyBytes) / float64(n); m < 60 || m > 75 {
		t.Errorf("mean key %.1f B, want ≈ 67", m)
	}
}

// runAgainstStore preloads w into a MemStore and checks n requests per stream.
func runAgainstStore(t *testing.T, w Workload, clients, n int) {
	t.Helper()
	s := NewMemStore()
	var resp Response
	err := w.Preload(func(r *Request) error {
		s.Apply(r, &resp)
		if resp.Status != StatusOK {
			t.Fatalf("preload %s: %s", r.Op, resp.Status)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	m := w.Model()
	for c := range clients {
		st := w.NewStream(c, clients, 42)
		var req Request
		for i := range n {
			st.Next(&req)
			s.Apply(&req, &resp)
			if resp.Status != StatusOK {
				t.Fatalf("%s request %d (%s %q): %s", w.Name(), i, req.Op, req.Keys[0], resp.Status)
			}
			if err := m.Check(&req, &resp); err != nil {
				t.Fatalf("%s request %d: %v", w.Name(), i, err)
			}
			// a corrupted response is caught
			if req.Op.IsRead() && len(resp.Values) > 0 && len(resp.Values[0]) > 0 {
				bad := append([]byte(nil), resp.Values[0]...)
				bad[len(bad)/2] ^= 1
				saved := resp.Values[0]
				resp.Values[0] = bad
				if err := m.Check(&req, &resp); !errors.Is(err, ErrMismatch) {
					t.Fatalf("%s: corrupted value not detected (err %v)", w.Name(), err)
				}
				resp.Values[0] = saved
				resp.Values = resp.Values[:len(resp.Values)-1]
				if err := m.Check(&req, &resp); !errors.Is(err, ErrMismatch) {
					t.Fatalf("%s: missing value not detected (err %v)", w.Name(), err)
				}
			}
		}
	}
}

func TestWorkloadsAgainstMemStore(t *testing.T) {
	specs := []string{
		"ycsb:records=2000",
		"ycsb:records=2000,shape=2x2048",
		"ycsb:records=2000,shape=2x2048,layout=multi,update=0.1",
		"ycsb:records=500,shape=4x1024,update=0.2",
		"google:keys=2000",
		"google:keys=500,values=1-15",
		"twitter:keys=3000",
		"cdn:objects=200",
		"cdn:objects=50,popularity=false",
		"cdn:objects=50,preloadbatch=8000",
	}
	for _, spec := range specs {
		t.Run(spec, func(t *testing.T) {
			w, err := Parse(spec)
			if err != nil {
				t.Fatal(err)
			}
			w2, err := Parse(w.Name())
			if err != nil || w2.Name() != w.Name() {
				t.Fatalf("Parse(Name()) = %v, %v", w2, err)
			}
			runAgainstStore(t, w, 3, 1500)
		})
	}
}

func TestStreamsDeterministic(t *testing.T) {
	for _, spec := range []string{"ycsb:records=1000,shape=2x100,layout=multi,update=0.5", "google:keys=100", "twitter:keys=1000", "cdn:objects=100"} {
		w, err := Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		a, b := w.NewStream(1, 2, 9), w.NewStream(1, 2, 9)
		var ra, rb Request
		for i := range 500 {
			a.Next(&ra)
			b.Next(&rb)
			if ra.Op != rb.Op || ra.Index != rb.Index || len(ra.Keys) != len(rb.Keys) || string(ra.Keys[0]) != string(rb.Keys[0]) {
				t.Fatalf("%s: request %d differs", spec, i)
			}
		}
	}
}

func TestStreamNextAllocs(t *testing.T) {
	for _, spec := range []string{"ycsb:records=1000,shape=2x2048,update=0.5", "ycsb:records=100,shape=4x64,layout=multi", "google:keys=100", "twitter:keys=1000", "cdn:objects=100", "twitter-trace:path=testdata/twitter_sample.csv"} {
		w, err := Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		st := w.NewStream(0, 1, 1)
		var req Request
		var resp Response
		s := NewMemStore()
		_ = w.Preload(func(r *Request) error { s.Apply(r, &resp); return nil })
		for range 2000 { // grow scratch
			st.Next(&req)
		}
		m := w.Model()
		allocs := testing.AllocsPerRun(1000, func() {
			st.Next(&req)
			if req.Op.IsRead() {
				s.Apply(&req, &resp)
				if err := m.Check(&req, &resp); err != nil {
					t.Fatal(err)
				}
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %.1f allocs per Next+Check", spec, allocs)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, spec := range []string{
		"nope", "ycsb:shape=2", "ycsb:shape=0x10", "ycsb:records=abc", "ycsb:bogus=1",
		"ycsb:layout=single,shape=2x10", "ycsb:update=2", "google:values=5-2", "google:values=x",
		"twitter:zipf=0.5", "twitter:valuesize=10", "cdn:segment=1", "cdn:popularity=maybe",
		"twitter-trace", "twitter-trace:path=/nonexistent/file", "ycsb:records=1,records=2", "ycsb:records",
	} {
		if _, err := Parse(spec); err == nil {
			t.Errorf("Parse(%q) succeeded", spec)
		}
	}
}

func TestFillVerify(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 9, 100, 4096} {
		b := make([]byte, n)
		Fill(b, []byte("k"), 3)
		if !Verify(b, []byte("k"), 3) {
			t.Fatalf("n=%d: Verify(Fill) false", n)
		}
		if n > 0 {
			if Verify(b, []byte("k"), 4) && n >= 8 {
				t.Fatalf("n=%d: other index verifies", n)
			}
			b[n-1] ^= 0x80
			if Verify(b, []byte("k"), 3) {
				t.Fatalf("n=%d: corrupted verifies", n)
			}
		}
	}
}

// TestVerifyEveryByte: Verify accepts Fill's content at every length up
// to 100 bytes and rejects a flip of any single bit position's byte,
// whichever word (the four-word loop, the word loop, the partial tail)
// holds it.
func TestVerifyEveryByte(t *testing.T) {
	key := []byte("user42")
	for n := 0; n <= 100; n++ {
		b := make([]byte, n)
		Fill(b, key, 2)
		if !Verify(b, key, 2) {
			t.Fatalf("n=%d: Verify(Fill) false", n)
		}
		for i := range b {
			for _, bit := range []byte{0x01, 0x80} {
				b[i] ^= bit
				if Verify(b, key, 2) {
					t.Fatalf("n=%d: byte %d ^ %#x verifies", n, i, bit)
				}
				b[i] ^= bit
			}
		}
	}
}

// BenchmarkNext measures request generation per workload.
func BenchmarkNext(b *testing.B) {
	for _, spec := range []string{"ycsb:records=10000", "ycsb:records=10000,shape=4x1024,layout=multi", "google:keys=10000", "twitter:keys=10000", "cdn:objects=1000"} {
		b.Run(spec, func(b *testing.B) {
			w, err := Parse(spec)
			if err != nil {
				b.Fatal(err)
			}
			st := w.NewStream(0, 1, 1)
			var req Request
			b.ReportAllocs()
			for range b.N {
				st.Next(&req)
			}
		})
	}
}

// TestVerifySpot: the spot check accepts Fill's content of every length,
// rejects another key's or element's content and a corrupted first,
// middle or last word, and (by design) misses a byte between them.
func TestVerifySpot(t *testing.T) {
	key := []byte("key")
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 100, 2048, 4096, 4099} {
		b := make([]byte, n)
		Fill(b, key, 2)
		if !VerifySpot(b, key, 2) {
			t.Fatalf("n=%d: VerifySpot(Fill) false", n)
		}
		if n == 0 {
			continue
		}
		if VerifySpot(b, key, 3) || VerifySpot(b, []byte("kez"), 2) {
			t.Fatalf("n=%d: another element's or key's content passes", n)
		}
		last := (n - 1) / 8
		for _, off := range []int{0, 8 * (last / 2), n - 1} {
			b[off] ^= 0x01
			if VerifySpot(b, key, 2) {
				t.Fatalf("n=%d: byte %d corrupted passes", n, off)
			}
			b[off] ^= 0x01
		}
		if n >= 4096 {
			b[3*n/4] ^= 0x01 // between the middle and the last word
			if !VerifySpot(b, key, 2) || Verify(b, key, 2) {
				t.Fatalf("n=%d: VerifySpot should miss byte %d, Verify catch it", n, 3*n/4)
			}
		}
	}
}

// TestCheckSpotAgreesOnShape: CheckSpot reports the same status, count and
// length mismatches as Check.
func TestCheckSpotAgreesOnShape(t *testing.T) {
	m := NewModel()
	m.Set([]byte("a"), 4096)
	m.Set([]byte("l"), 100, 200)
	val := func(key string, idx, n int) []byte {
		v := make([]byte, n)
		Fill(v, []byte(key), idx)
		return v
	}
	get := &Request{Op: OpGet, Keys: [][]byte{[]byte("a")}}
	list := &Request{Op: OpGetList, Keys: [][]byte{[]byte("l")}}
	getm := &Request{Op: OpGetM, Keys: [][]byte{[]byte("a"), []byte("a")}}
	m.MarkMutable([]byte("m"))
	mut := &Request{Op: OpGet, Keys: [][]byte{[]byte("m")}}
	getu := &Request{Op: OpGet, Keys: [][]byte{[]byte("unknown")}}
	for i, tc := range []struct {
		req  *Request
		resp Response
		ok   bool
	}{
		{get, Response{Values: [][]byte{val("a", 0, 4096)}}, true},
		{get, Response{Values: [][]byte{val("a", 0, 4095)}}, false},
		{get, Response{Values: [][]byte{val("a", 1, 4096)}}, false},
		{get, Response{Status: StatusNotFound}, false},
		{list, Response{Values: [][]byte{val("l", 0, 100), val("l", 1, 200)}}, true},
		{list, Response{Values: [][]byte{val("l", 1, 100), val("l", 0, 200)}}, false},
		{list, Response{Values: [][]byte{val("l", 0, 100)}}, false},
		{getm, Response{Values: [][]byte{val("a", 0, 4096), val("a", 0, 4096)}}, true},
		{getm, Response{Values: [][]byte{val("a", 0, 4096), val("l", 0, 4096)}}, false},
		// Another key's content of the right size (the seed comes from
		// the model's hash of the key, and from the key when the model
		// does not hold it).
		{get, Response{Values: [][]byte{val("b", 0, 4096)}}, false},
		{mut, Response{Values: [][]byte{val("m", 0, 10)}}, true},
		{mut, Response{Values: [][]byte{val("a", 0, 10)}}, false},
		{getu, Response{Status: StatusNotFound}, true},
	} {
		full, spot := m.Check(tc.req, &tc.resp), m.CheckSpot(tc.req, &tc.resp)
		if (full == nil) != tc.ok || (spot == nil) != tc.ok {
			t.Fatalf("case %d: Check %v, CheckSpot %v, want ok=%v", i, full, spot, tc.ok)
		}
	}
}

// BenchmarkCheck compares the full and the spot check of a 2x2048 GetM
// response.
func BenchmarkCheck(b *testing.B) {
	m := NewModel()
	keys := [][]byte{[]byte("user1234"), []byte("user5678")}
	req := &Request{Op: OpGetM, Keys: keys}
	resp := &Response{}
	for _, k := range keys {
		m.Set(k, 2048)
		v := make([]byte, 2048)
		Fill(v, k, 0)
		resp.Values = append(resp.Values, v)
	}
	for _, bc := range []struct {
		name string
		fn   func(*Request, *Response) error
	}{{"full", m.Check}, {"spot", m.CheckSpot}} {
		b.Run(bc.name, func(b *testing.B) {
			for range b.N {
				if err := bc.fn(req, resp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestStreamsRecordModelIndex: the synthetic workloads' streams record, for
// every key they draw, the model entry the model's own lookup finds, so
// Check skips the lookup; a key slice replaced after Next is looked up
// again, and CopyFrom keeps the indexes.
func TestStreamsRecordModelIndex(t *testing.T) {
	for _, spec := range []string{"ycsb:records=1000", "ycsb:records=1000,shape=2x100", "ycsb:records=1000,shape=3x100,layout=multi,update=0.3",
		"google:keys=300", "twitter:keys=2000", "cdn:objects=100", "cdn:objects=40,popularity=false"} {
		w, err := Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		m := w.Model()
		st := w.NewStream(0, 1, 3)
		var req, cp Request
		for n := range 2000 {
			st.Next(&req)
			if req.model != m {
				t.Fatalf("%s: request %d names model %p, want %p", spec, n, req.model, m)
			}
			for i, k := range req.Keys {
				x := req.modelIndex(i)
				want, ok := m.index[string(k)]
				if !ok || x != want {
					t.Fatalf("%s: request %d key %q: index %d, model has %d (%v)", spec, n, k, x, want, ok)
				}
				if e, ok := m.find(&req, i); !ok || e != m.entries[want] {
					t.Fatalf("%s: find(%q) = %+v, %v", spec, k, e, ok)
				}
			}
			cp.CopyFrom(&req)
			for i := range cp.Keys {
				if cp.model != m || cp.modelIndex(i) != req.modelIndex(i) {
					t.Fatalf("%s: CopyFrom lost key %d's index", spec, i)
				}
			}
		}
	}
	// A key replaced after Next is not checked under its old index.
	w, err := Parse("google:keys=50")
	if err != nil {
		t.Fatal(err)
	}
	s := NewMemStore()
	var resp Response
	if err := w.Preload(func(r *Request) error { s.Apply(r, &resp); return nil }); err != nil {
		t.Fatal(err)
	}
	var req Request
	w.NewStream(0, 1, 1).Next(&req)
	other := GoogleKey(nil, 51, w.(*Google).cfg.KeySize) // not in the model
	if string(other) == string(req.Keys[0]) {
		t.Fatal("test key collides")
	}
	s.Apply(&req, &resp) // the drawn key's values
	req.Keys[0] = other
	if req.modelIndex(0) != -1 {
		t.Fatal("a replaced key keeps its model index")
	}
	if err := w.Model().Check(&req, &resp); !errors.Is(err, ErrMismatch) {
		t.Fatalf("values of another key for an unknown key: Check = %v, want a mismatch", err)
	}
}

// TestModelIndexVerifiedInCheckedBuild: in cfcheck builds a request whose
// recorded model index names another key's entry panics in Check (a
// stream bug); other builds trust the index.
func TestModelIndexVerifiedInCheckedBuild(t *testing.T) {
	if !checked {
		t.Skip("cfcheck builds only")
	}
	w, err := Parse("google:keys=50")
	if err != nil {
		t.Fatal(err)
	}
	var req Request
	w.NewStream(0, 1, 1).Next(&req)
	req.mix[0].x = (req.mix[0].x + 1) % int32(w.Model().Len())
	defer func() {
		if recover() == nil {
			t.Fatal("a wrong model index was not detected")
		}
	}()
	_ = w.Model().Check(&req, &Response{})
}

// TestVerifySpotMatchesWords: the straight-line spot check accepts and
// rejects exactly what checking its three words one by one does, for
// every length up to 80 and every single corrupted byte.
func TestVerifySpotMatchesWords(t *testing.T) {
	ref := func(v []byte, seed uint64) bool {
		if len(v) == 0 {
			return true
		}
		last := (len(v) - 1) / 8
		return spotWord(v, seed, 0) && spotWord(v, seed, last/2) && spotWord(v, seed, last)
	}
	key := []byte("spot")
	for n := 0; n <= 80; n++ {
		b := make([]byte, n)
		Fill(b, key, 1)
		seed := fillSeed(key, 1)
		if !verifySpotSeed(b, seed) || verifySpotSeed(b, seed+1) != ref(b, seed+1) {
			t.Fatalf("n=%d: spot check of the filled value disagrees with the word-by-word check", n)
		}
		for i := range b {
			b[i] ^= 0x80
			if got, want := verifySpotSeed(b, seed), ref(b, seed); got != want {
				t.Fatalf("n=%d, byte %d corrupted: spot check %v, word by word %v", n, i, got, want)
			}
			b[i] ^= 0x80
		}
	}
}

// TestFillIsTheSplitmixStream: Fill (four words per iteration) writes
// splitmix64's outputs from the value's seed, word by word, for every
// length up to 100 bytes.
func TestFillIsTheSplitmixStream(t *testing.T) {
	key := []byte("fill")
	for n := 0; n <= 100; n++ {
		got := make([]byte, n)
		Fill(got, key, 4)
		want := make([]byte, n+8)
		x := fillSeed(key, 4)
		for i := 0; i < n; i += 8 {
			binary.LittleEndian.PutUint64(want[i:], splitmix(&x))
		}
		if !bytes.Equal(got, want[:n]) {
			t.Fatalf("n=%d: Fill differs from the word-by-word stream", n)
		}
	}
}

// FuzzVerifySpot: the straight-line spot check agrees with checking its
// three words one by one (spotWord) on a value of n bytes of seed's stream
// with byte pos xored with x (x = 0: intact), and on the fuzzer's own
// bytes; it never panics.
func FuzzVerifySpot(f *testing.F) {
	f.Add([]byte("raw"), uint16(100), uint16(50), byte(1), uint64(7))
	f.Add([]byte{}, uint16(9), uint16(8), byte(0x80), uint64(1))
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, uint16(4096), uint16(3000), byte(0), uint64(3))
	ref := func(v []byte, seed uint64) bool {
		if len(v) == 0 {
			return true
		}
		last := (len(v) - 1) / 8
		return spotWord(v, seed, 0) && spotWord(v, seed, last/2) && spotWord(v, seed, last)
	}
	f.Fuzz(func(t *testing.T, raw []byte, n, pos uint16, x byte, seed uint64) {
		v := make([]byte, int(n)%5000)
		st := seed
		for i := 0; i < len(v); i += 8 {
			var w [8]byte
			binary.LittleEndian.PutUint64(w[:], splitmix(&st))
			copy(v[i:], w[:])
		}
		if len(v) > 0 {
			v[int(pos)%len(v)] ^= x
		}
		if got, want := verifySpotSeed(v, seed), ref(v, seed); got != want || (x == 0 && !got) {
			t.Fatalf("%d bytes, byte %d ^ %#x: spot check %v, word by word %v", len(v), int(pos)%max(len(v), 1), x, got, want)
		}
		if got, want := verifySpotSeed(raw, seed), ref(raw, seed); got != want {
			t.Fatalf("raw %d bytes: spot check %v, word by word %v", len(raw), got, want)
		}
	})
}

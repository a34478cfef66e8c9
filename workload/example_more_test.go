package workload_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/cornflakes-go/cornflakes/workload"
)

// YCSB-C with the "mget-2" layout: every request is a GetM of two keys,
// each drawn from Java YCSB's scrambled Zipfian. A stream is a pure
// function of (client, clients, seed), so these are always the same keys.
func ExampleNewYCSB() {
	y, err := workload.NewYCSB(workload.YCSBConfig{Records: 1000, NumValues: 2, ValueSize: 2048, Layout: workload.LayoutMulti})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(y.Name(), y.Unit())
	fmt.Printf("%+v\n", y.Model().Stats())

	s := y.NewStream(0, 1, 42) // client 0 of 1, seed 42
	var req workload.Request   // reused: Next fills its scratch memory
	for range 3 {
		s.Next(&req)
		fmt.Printf("%v %s %s\n", req.Op, req.Keys[0], req.Keys[1])
	}
	// Output:
	// ycsb:records=1000,shape=2x2048,layout=multi requests
	// {Keys:1000 Elements:1000 Bytes:2048000 MaxElement:2048}
	// getm user4152828024211893584 user427124512099633072
	// getm user1593633823486629950 user5349475954545216457
	// getm user6178832502329564735 user2634547442652304615
}

// The synthetic Twitter cache cluster-4 workload: 93% Get, 7% Put of the
// same bytes, Zipf(1.1004) popularity. Values over ChunkSize are split
// into several keys, so one object may take several requests.
func ExampleNewTwitter() {
	t, err := workload.NewTwitter(workload.TwitterConfig{Keys: 1000})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(t.Name())
	fmt.Printf("request-weighted mean value: %.0f B\n", t.ExpectedMeanValueSize())
	fmt.Println("objects 0 and 1:", t.ValueSize(0), "B and", t.ValueSize(1), "B")

	short := func(k []byte) string { // "tw4_1_xx…x0" -> "tw4_1_…0"
		s := string(k)
		i := strings.IndexByte(s, 'x')
		return s[:i] + "…" + strings.TrimLeft(s[i:], "x")
	}
	s := t.NewStream(0, 1, 7)
	var req workload.Request
	for range 5 {
		s.Next(&req)
		sizes, _ := t.Model().Sizes(req.Keys[0])
		fmt.Printf("%v %s %d B\n", req.Op, short(req.Keys[0]), sizes[0])
	}
	// Output:
	// twitter:keys=1000,get=0.93,zipf=1.1004,keysize=67,valuesize=2439,chunk=8192
	// request-weighted mean value: 2439 B
	// objects 0 and 1: 399 B and 9993 B
	// get tw4_1_…0 8192 B
	// get tw4_1_…1 1801 B
	// get tw4_36_… 195 B
	// get tw4_5_… 23 B
	// get tw4_140_… 1031 B
}

// The Google protobuf field-size workload: each key holds a list of 1-3
// values whose sizes follow the fleet's bytes-field distribution; every
// request is a GetList of a uniformly chosen key.
func ExampleNewGoogle() {
	g, err := workload.NewGoogle(workload.GoogleConfig{Keys: 100, MaxValues: 3})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(g.Name())

	s := g.NewStream(0, 1, 1)
	var req workload.Request
	for range 3 {
		s.Next(&req)
		sizes, _ := g.Model().Sizes(req.Keys[0])
		fmt.Printf("%v %s %v\n", req.Op, bytes.TrimRight(req.Keys[0], "a"), sizes)
	}
	// Output:
	// google:keys=100,values=1-3,keysize=64,maxtotal=8192
	// getlist key_59 [8]
	// getlist key_47 [4 6 47]
	// getlist key_75 [8 6 6]
}

// The CDN images workload: an object is a list of 8000-byte segments, and
// fetching it is one GetFromList per segment. Only the last segment's
// request counts a unit, so throughput is in objects per second.
func ExampleNewCDN() {
	d, err := workload.NewCDN(workload.CDNConfig{Objects: 50})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(d.Name(), d.Unit())

	s := d.NewStream(0, 1, 3)
	var req workload.Request
	for objects := 0; objects < 2; objects += req.Units {
		s.Next(&req)
		sizes, _ := d.Model().Sizes(req.Keys[0])
		fmt.Printf("%v %s index %d (%d B) units %d\n", req.Op, bytes.TrimRight(req.Keys[0], "a"), req.Index, sizes[req.Index], req.Units)
	}
	// Output:
	// cdn:objects=50,segment=8000,keysize=64,maxobject=4096000,popularity=true,preloadbatch=65536 objects
	// getfromlist key_37 index 0 (8000 B) units 0
	// getfromlist key_37 index 1 (1000 B) units 1
	// getfromlist key_33 index 0 (8000 B) units 0
	// getfromlist key_33 index 1 (6000 B) units 1
}

// NewTwitterTrace replays the real trace format. Requests keep trace
// order and are sharded to clients by client id; the first keys seen are
// preloaded with their first size.
func ExampleNewTwitterTrace() {
	tr, err := workload.NewTwitterTrace(workload.TraceConfig{Reader: strings.NewReader(`0,key_a,5,300,1,get,0
0,key_b,5,100,2,set,3600
1,key_a,5,300,1,gets,0
1,key_c,5,10,1,delete,0
`)})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(tr.Requests(), "requests,", tr.Skipped(), "skipped")
	_ = tr.Preload(func(r *workload.Request) error {
		fmt.Println("preload:", r.Op, string(r.Keys[0]), len(r.Values[0]))
		return nil
	})
	s := tr.NewStream(0, 1, 0)
	var req workload.Request
	for range 4 { // the stream loops over the trace
		s.Next(&req)
		fmt.Println(req.Op, string(req.Keys[0]))
	}
	// Output:
	// 3 requests, 1 skipped
	// preload: put key_a 300
	// preload: put key_b 100
	// get key_a
	// put key_b
	// get key_a
	// get key_a
}

// Zipfian is YCSB's ZipfianGenerator: item min is the most popular.
// Value maps a uniform number to a sample; Next draws one from a *rand.Rand.
func ExampleZipfian() {
	z := workload.NewZipfian(0, 99, workload.ZipfianConstant)
	var samples []int64
	for _, u := range []float64{0.01, 0.1, 0.5, 0.9, 0.99} {
		samples = append(samples, z.Value(u))
	}
	fmt.Println(samples)

	r := rand.New(rand.NewPCG(1, 2)) // a fixed seed: the same samples every run
	counts := make([]int, 100)
	for range 10000 {
		counts[z.Next(r)]++
	}
	fmt.Println(counts[0] > counts[1], counts[1] > counts[10], counts[10] > counts[99])
	// Output:
	// [0 0 6 58 94]
	// true true true
}

// ScrambledZipfian is the key chooser of YCSB's CoreWorkload: the same
// skew as Zipfian, but the popular items are hashed over the whole range.
func ExampleScrambledZipfian() {
	z := workload.NewScrambledZipfian(0, 999)
	var samples []int64
	for _, u := range []float64{0.01, 0.1, 0.5, 0.9, 0.99} {
		samples = append(samples, z.Value(u))
	}
	fmt.Println(samples)
	// Output:
	// [211 587 260 670 521]
}

// ParseShape reads the "NxM" value shapes of the paper's YCSB runs.
func ExampleParseShape() {
	for _, s := range []string{"1x4096", "2x2048", "4x1024", "4by1024"} {
		n, m, err := workload.ParseShape(s)
		fmt.Println(n, m, err)
	}
	// Output:
	// 1 4096 <nil>
	// 2 2048 <nil>
	// 4 1024 <nil>
	// 0 0 workload: bad workload spec: shape "4by1024": want NxM, e.g. 2x2048
}

// A value's content is a pure function of its key and list index, so a
// client checks any response without keeping the data it stored.
func ExampleVerify() {
	key := []byte("user42")
	v := make([]byte, 16)
	workload.Fill(v, key, 0)
	fmt.Println(workload.Verify(v, key, 0), workload.Verify(v[:5], key, 0)) // any prefix verifies
	fmt.Println(workload.Verify(v, key, 1), workload.Verify(v, []byte("user43"), 0))
	v[3] ^= 1
	fmt.Println(workload.Verify(v, key, 0))
	// Output:
	// true true
	// false false
	// false
}

// MemStore is the executable specification of the key-value operations:
// lists, multi-key requests, and not-found answers.
func ExampleMemStore() {
	s := workload.NewMemStore()
	b := func(ss ...string) [][]byte {
		out := make([][]byte, len(ss))
		for i, x := range ss {
			out[i] = []byte(x)
		}
		return out
	}
	var resp workload.Response
	for _, req := range []workload.Request{
		{Op: workload.OpPutM, Keys: b("a", "b"), Values: b("1", "2")},
		{Op: workload.OpGetM, Keys: b("b", "a")},
		{Op: workload.OpGetM, Keys: b("a", "zz")},
		{Op: workload.OpPutList, Keys: b("l"), Values: b("x", "y")},
		{Op: workload.OpAppendToList, Keys: b("l"), Values: b("z")},
		{Op: workload.OpGetList, Keys: b("l")},
		{Op: workload.OpGetFromList, Keys: b("l"), Index: 2},
		{Op: workload.OpGet, Keys: b("l")}, // a list of 3 is not a single value
		{Op: workload.OpDelete, Keys: b("a")},
		{Op: workload.OpGet, Keys: b("a")},
	} {
		s.Apply(&req, &resp)
		fmt.Printf("%-12v %-9v %q\n", req.Op, resp.Status, resp.Values)
	}
	fmt.Println(s.Len(), "keys")
	// Output:
	// putm         ok        []
	// getm         ok        ["2" "1"]
	// getm         not-found []
	// putlist      ok        []
	// appendtolist ok        []
	// getlist      ok        ["x" "y" "z"]
	// getfromlist  ok        ["z"]
	// get          error     []
	// delete       ok        []
	// get          not-found []
	// 2 keys
}

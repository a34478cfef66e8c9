package workload_test

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/cornflakes-go/cornflakes/workload"
)

// The workloads Parse knows; anything else is ErrBadSpec.
func ExampleNames() {
	fmt.Println(workload.Names())
	_, err := workload.Parse("memcached:keys=10")
	fmt.Println(errors.Is(err, workload.ErrBadSpec))
	fmt.Println(err)
	// Output:
	// [cdn google twitter twitter-trace ycsb]
	// true
	// workload: bad workload spec: unknown workload "memcached" (have cdn, google, twitter, twitter-trace, ycsb)
}

// FNVHash64 is Java YCSB's key hash: YCSB names record i
// "user"+FNVHash64(i), and the scrambled Zipfian spreads popular items
// with it.
func ExampleFNVHash64() {
	for i := range int64(3) {
		h := workload.FNVHash64(i)
		fmt.Println(h, string(workload.YCSBKey(nil, i)) == "user"+strconv.FormatInt(h, 10))
	}
	// Output:
	// 6284781860667377211 true
	// 8517097267634966620 true
	// 1820151046732198393 true
}

// Fill writes a value's content, a pure function of (key, list index):
// a longer value extends a shorter one, and every element of a list
// differs.
func ExampleFill() {
	key := []byte("key_7")
	short, long, next := make([]byte, 8), make([]byte, 20), make([]byte, 8)
	workload.Fill(short, key, 0)
	workload.Fill(long, key, 0)
	workload.Fill(next, key, 1)
	fmt.Printf("%x\n%x\n%x\n", short, long, next)
	fmt.Println(bytes.HasPrefix(long, short), bytes.Equal(short, next))
	// Output:
	// 58be40831431d997
	// 58be40831431d997e1bdad0599b3c9b50c8ea534
	// c3ef8c5015e2ba38
	// true false
}

// GoogleKey builds the keys of the google and cdn workloads: "key_<i>"
// padded with 'a' to the key size (never truncated), appended to dst.
func ExampleGoogleKey() {
	fmt.Println(string(workload.GoogleKey(nil, 42, 16)))
	fmt.Println(string(workload.GoogleKey(nil, 123456, 4)))
	buf := workload.GoogleKey([]byte("prefix:"), 7, 8)
	fmt.Println(string(buf))
	// Output:
	// key_42aaaaaaaaaa
	// key_123456
	// prefix:key_7aaa
}

// Zeta is the normaliser of a Zipf law: the generalised harmonic number.
func ExampleZeta() {
	fmt.Println(workload.Zeta(1, workload.ZipfianConstant))
	fmt.Println(workload.Zeta(2, 1))
	fmt.Printf("%.6f\n", workload.Zeta(1000, workload.ZipfianConstant))
	// Output:
	// 1
	// 1.5
	// 7.728953
}

// ZipfPMF gives the popularity of a rank: with the Twitter workload's
// exponent over 1000 objects, the top few take a large share.
func ExampleZipfPMF() {
	const n, s = 1000, 1.1004
	top := 0.0
	for k := int64(1); k <= 3; k++ {
		p := workload.ZipfPMF(k, n, s)
		top += p
		fmt.Printf("rank %d: %.4f\n", k, p)
	}
	fmt.Printf("top 3: %.4f, rank %d: %.6f\n", top, n, workload.ZipfPMF(n, n, s))
	// Output:
	// rank 1: 0.1796
	// rank 2: 0.0838
	// rank 3: 0.0536
	// top 3: 0.3170, rank 1000: 0.000090
}

// The Op of a request says what it does and whether its response carries
// values.
func ExampleOp() {
	for op := workload.OpGet; op <= workload.OpDelete; op++ {
		fmt.Println(op, op.IsRead())
	}
	fmt.Println(workload.Op(42))
	// Output:
	// get true
	// put false
	// getm true
	// putm false
	// getlist true
	// putlist false
	// appendtolist false
	// getfromlist true
	// delete false
	// op(42)
}

// A Status is how the server answered.
func ExampleStatus() {
	for _, s := range []workload.Status{workload.StatusOK, workload.StatusNotFound, workload.StatusError, 9} {
		fmt.Println(uint8(s), s)
	}
	// Output:
	// 0 ok
	// 1 not-found
	// 2 error
	// 9 status(9)
}

// A Stream is a pure function of (client, clients, seed): the same
// arguments replay the same requests, another seed or client differs.
func ExampleStream() {
	w, err := workload.Parse("ycsb:records=1000,shape=1x64")
	if err != nil {
		panic(err)
	}
	keys := func(client int, seed uint64) string {
		s := w.NewStream(client, 2, seed)
		var req workload.Request
		var out []string
		for range 3 {
			s.Next(&req)
			out = append(out, string(req.Keys[0]))
		}
		return strings.Join(out, " ")
	}
	first, again := keys(0, 1), keys(0, 1)
	fmt.Println(first)
	fmt.Println(again == first, keys(0, 2) == first, keys(1, 1) == first)
	// Output:
	// user4414170048423055703 user3353610095373871301 user5817347222824138717
	// true false false
}

// A Request's Keys and Values alias its own scratch memory, which the next
// Stream.Next reuses: CopyFrom keeps a request (e.g. for a retry) past
// that. Bytes is its payload.
func ExampleRequest() {
	w, _ := workload.Parse("ycsb:records=100,shape=1x100,update=1")
	s := w.NewStream(0, 1, 5)
	var req, kept workload.Request
	s.Next(&req)
	kept.CopyFrom(&req)
	first := string(req.Keys[0])
	s.Next(&req) // overwrites req's keys and values
	fmt.Println(kept.Op, string(kept.Keys[0]) == first, len(kept.Values[0]), kept.Bytes())
	fmt.Println(workload.Verify(kept.Values[0], kept.Keys[0], 0))
	// Output:
	// put true 100 123
	// true
}

// A Response is what a server returned; the model checks it without any
// stored data, since values are Fill's content.
func ExampleResponse() {
	m := workload.NewModel()
	key := []byte("obj")
	m.Set(key, 8000, 3000) // a two-segment list
	req := workload.Request{Op: workload.OpGetFromList, Keys: [][]byte{key}, Index: 1}
	seg := make([]byte, 3000)
	workload.Fill(seg, key, 1)
	fmt.Println(m.Check(&req, &workload.Response{Status: workload.StatusOK, Values: [][]byte{seg}}))
	fmt.Println(m.Check(&req, &workload.Response{Status: workload.StatusNotFound}))
	req.Index = 2 // past the end: not-found is the right answer
	fmt.Println(m.Check(&req, &workload.Response{Status: workload.StatusNotFound}))
	// Output:
	// <nil>
	// workload: getfromlist "obj": status not-found, want ok
	// <nil>
}

// A Model records sizes, not bytes: it checks lengths and Fill content,
// and accepts anything consistent for keys marked mutable.
func ExampleModel() {
	m := workload.NewModel()
	m.Set([]byte("a"), 5)
	m.Set([]byte("l"), 3, 4)
	m.MarkMutable([]byte("m")) // written during the run with sizes unknown
	fmt.Println(m.Len(), fmt.Sprintf("%+v", m.Stats()))
	sizes, ok := m.Sizes([]byte("l"))
	fmt.Println(sizes, ok)

	get := func(key string) *workload.Request {
		return &workload.Request{Op: workload.OpGet, Keys: [][]byte{[]byte(key)}}
	}
	value := func(key string, n int) [][]byte {
		v := make([]byte, n)
		workload.Fill(v, []byte(key), 0)
		return [][]byte{v}
	}
	fmt.Println(m.Check(get("a"), &workload.Response{Values: value("a", 5)}))
	fmt.Println(m.Check(get("a"), &workload.Response{Values: value("a", 4)}))
	fmt.Println(m.Check(get("a"), &workload.Response{Values: value("b", 5)}))
	fmt.Println(m.Check(get("m"), &workload.Response{Values: value("m", 77)}))
	fmt.Println(m.Check(get("m"), &workload.Response{Status: workload.StatusNotFound}))
	fmt.Println(m.Check(get("zz"), &workload.Response{Values: value("zz", 1)}))
	// Output:
	// 3 {Keys:2 Elements:3 Bytes:12 MaxElement:5}
	// [3 4] true
	// <nil>
	// workload: get "a": element 0 has 4 bytes, want 5
	// workload: get "a": element 0 content differs
	// <nil>
	// <nil>
	// workload: get "zz": status ok for a key the model does not hold
}

// Check returns a *MismatchError, which wraps ErrMismatch.
func ExampleMismatchError() {
	m := workload.NewModel()
	m.Set([]byte("user1"), 4096)
	req := workload.Request{Op: workload.OpGet, Keys: [][]byte{[]byte("user1")}}
	err := m.Check(&req, &workload.Response{Status: workload.StatusNotFound})
	var me *workload.MismatchError
	if errors.As(err, &me) {
		fmt.Printf("op %v key %s: %s\n", me.Op, me.Key, me.Reason)
	}
	fmt.Println(errors.Is(err, workload.ErrMismatch))
	fmt.Println(err)
	// Output:
	// op get key user1: status not-found, want ok
	// true
	// workload: get "user1": status not-found, want ok
}

// YCSBConfig's zero fields take the defaults (one 4096-byte value per
// record); UpdateFraction turns YCSB-C into a read/update mix.
func ExampleYCSBConfig() {
	y, err := workload.NewYCSB(workload.YCSBConfig{Records: 100, UpdateFraction: 0.25})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%+v\n", y.Config())
	fmt.Println(y.Name())
	counts := countOps(y, 1000)
	fmt.Println(counts[workload.OpGet], "gets,", counts[workload.OpPut], "puts")
	// Output:
	// {Records:100 NumValues:1 ValueSize:4096 Layout:single UpdateFraction:0.25}
	// ycsb:records=100,shape=1x4096,layout=single,update=0.25
	// 747 gets, 253 puts
}

// YCSB's Preload writes every record once: a PutList per record in the
// list layout ("lrange-N").
func ExampleYCSB() {
	y, _ := workload.NewYCSB(workload.YCSBConfig{Records: 3, NumValues: 4, ValueSize: 1024})
	_ = y.Preload(func(r *workload.Request) error {
		fmt.Println(r.Op, string(r.Keys[0]), len(r.Values), r.Bytes())
		return nil
	})
	fmt.Println(y.Unit(), fmt.Sprintf("%+v", y.Model().Stats()))
	// Output:
	// putlist user6284781860667377211 4 4119
	// putlist user8517097267634966620 4 4119
	// putlist user1820151046732198393 4 4119
	// requests {Keys:3 Elements:12 Bytes:12288 MaxElement:1024}
}

// GoogleConfig's zero fields take Cornflakes' defaults; Config returns the
// effective ones.
func ExampleGoogleConfig() {
	g, err := workload.NewGoogle(workload.GoogleConfig{Keys: 1000})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%+v\n", g.Config())
	st := g.Model().Stats()
	fmt.Println(st.Keys, st.Elements, st.MaxElement <= g.Config().MaxTotal)
	// Output:
	// {Keys:1000 MinValues:1 MaxValues:7 KeySize:64 MaxTotal:8192}
	// 1000 4027 true
}

// Google's Preload writes one PutList per key, with the list shape the
// model expects.
func ExampleGoogle() {
	g, _ := workload.NewGoogle(workload.GoogleConfig{Keys: 3, KeySize: 8})
	_ = g.Preload(func(r *workload.Request) error {
		sizes := make([]int, len(r.Values))
		for i, v := range r.Values {
			sizes[i] = len(v)
		}
		model, _ := g.Model().Sizes(r.Keys[0])
		fmt.Println(r.Op, string(r.Keys[0]), sizes, model)
		return nil
	})
	// Output:
	// putlist key_0aaa [57 8 1125 14] [57 8 1125 14]
	// putlist key_1aaa [2 159 3 5] [2 159 3 5]
	// putlist key_2aaa [41] [41]
}

// TwitterConfig's zero fields take the cluster-4 defaults.
func ExampleTwitterConfig() {
	t, err := workload.NewTwitter(workload.TwitterConfig{Keys: 1000, GetFraction: 0.5})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%+v\n", t.Config())
	counts := countOps(t, 1000)
	fmt.Println(counts[workload.OpGet], "gets,", counts[workload.OpPut], "puts")
	// Output:
	// {Keys:1000 GetFraction:0.5 ZipfS:1.1004 MeanKeySize:67 MeanValueSize:2439 ChunkSize:8192}
	// 510 gets, 490 puts
}

// Twitter's Preload writes one Put per chunk: an object larger than
// ChunkSize becomes several keys.
func ExampleTwitter() {
	t, _ := workload.NewTwitter(workload.TwitterConfig{Keys: 100, ChunkSize: 1024})
	puts, big := 0, 0
	_ = t.Preload(func(r *workload.Request) error {
		puts++
		return nil
	})
	for i := range 100 {
		if t.ValueSize(i) > 1024 {
			big++
		}
	}
	fmt.Println(puts, "puts for 100 objects,", big, "of them over 1024 B;", t.Model().Len(), "keys")
	// Output:
	// 300 puts for 100 objects, 27 of them over 1024 B; 300 keys
}

// CDNConfig's zero fields take the Table 2 defaults; NoPopularity picks
// objects uniformly instead.
func ExampleCDNConfig() {
	d, err := workload.NewCDN(workload.CDNConfig{Objects: 20, SegmentSize: 4000, NoPopularity: true})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%+v\n", d.Config())
	fmt.Println(d.Name())
	// Output:
	// {Objects:20 SegmentSize:4000 KeySize:64 MaxObjectBytes:4096000 NoPopularity:true PreloadBatchBytes:65536}
	// cdn:objects=20,segment=4000,keysize=64,maxobject=4096000,popularity=false,preloadbatch=65536
}

// An object is a list of segments under one key; Preload writes one
// larger than PreloadBatchBytes as a PutList followed by AppendToLists.
func ExampleCDN() {
	d, _ := workload.NewCDN(workload.CDNConfig{Objects: 2, SegmentSize: 1000, PreloadBatchBytes: 4000})
	for i := range 2 {
		fmt.Print(d.Segments(i), " ")
	}
	fmt.Println("segments")
	_ = d.Preload(func(r *workload.Request) error {
		fmt.Println(r.Op, string(bytes.TrimRight(r.Keys[0], "a")), len(r.Values), r.Bytes()-len(r.Keys[0]))
		return nil
	})
	// Output:
	// 9 4 segments
	// putlist key_0 4 4000
	// appendtolist key_0 4 4000
	// appendtolist key_0 1 1000
	// putlist key_1 4 4000
}

// TraceConfig reads a trace file (here the package's test sample) and
// bounds what is kept. Values over ChunkSize are split into numbered chunk
// keys. A key that is written with another size than it was preloaded
// with, or never preloaded, is mutable in the model: a read of it may miss.
func ExampleTraceConfig() {
	tr, err := workload.NewTwitterTrace(workload.TraceConfig{Path: "testdata/twitter_sample.csv", MaxRequests: 8, PreloadKeys: 3})
	if err != nil {
		panic(err)
	}
	fmt.Println(tr.Name())
	fmt.Println(tr.Requests(), "requests,", tr.Skipped(), "skipped")
	_ = tr.Preload(func(r *workload.Request) error {
		fmt.Println(r.Op, string(r.Keys[0]), len(r.Values[0]))
		return nil
	})
	miss := &workload.Response{Status: workload.StatusNotFound}
	for _, key := range []string{"nz_u_eeW511W3dcH3de3d15ec", "nz_u_bbbb11W3dcH3de3d15ec"} { // stable; rewritten with 500 B
		req := workload.Request{Op: workload.OpGet, Keys: [][]byte{[]byte(key)}}
		fmt.Println(tr.Model().Check(&req, miss))
	}
	_, err = workload.NewTwitterTrace(workload.TraceConfig{Path: "testdata/twitter_sample.csv", Strict: true})
	fmt.Println(err)
	// Output:
	// twitter-trace:path=testdata/twitter_sample.csv,requests=8,preload=3,chunk=8192
	// 8 requests, 1 skipped
	// put nz_u_eeW511W3dcH3de3d15ec 120
	// put nz_u_aaaa11W3dcH3de3d15ec0 8192
	// put nz_u_aaaa11W3dcH3de3d15ec1 808
	// put nz_u_bbbb11W3dcH3de3d15ec 300
	// workload: get "nz_u_eeW511W3dcH3de3d15ec": status not-found, want ok
	// <nil>
	// workload: bad trace: line 8: op delete is not supported (get, gets, set, add)
}

// TwitterTrace shards the trace to the load generator's clients by
// client_id modulo their count: each replays its share in trace order,
// looping.
func ExampleTwitterTrace() {
	tr, err := workload.NewTwitterTrace(workload.TraceConfig{Reader: strings.NewReader(`0,k1,2,100,1,get,0
0,k2,2,100,2,get,0
1,k3,2,100,1,set,60
1,k4,2,100,2,get,0
2,k1,2,100,3,get,0
`)})
	if err != nil {
		panic(err)
	}
	for client := range 2 {
		s := tr.NewStream(client, 2, 0)
		var req workload.Request
		fmt.Printf("client %d:", client)
		for range 3 {
			s.Next(&req)
			fmt.Printf(" %v %s", req.Op, req.Keys[0])
		}
		fmt.Println()
	}
	// Output:
	// client 0: get k2 get k4 get k2
	// client 1: get k1 put k3 get k1
}

// A TraceRecord is one parsed line of the trace: time, key, sizes,
// client, operation and TTL.
func ExampleTraceRecord() {
	r := workload.NewTraceReader(strings.NewReader("time,key,key_size,value_size,client_id,op,ttl\n17,nz_u_abc,8,2439,5,set,3600\n"))
	var rec workload.TraceRecord
	if err := r.Next(&rec); err != nil {
		panic(err)
	}
	fmt.Println(r.Line(), rec.Time, string(rec.Key), rec.KeySize, rec.ValueSize, rec.ClientID, rec.Op, rec.TTL, rec.Op.KVOp())
	// Output:
	// 2 17 nz_u_abc 8 2439 5 set 3600 put
}

// countOps counts the operations of the first n requests of w's stream
// for client 0 of 1.
func countOps(w workload.Workload, n int) map[workload.Op]int {
	counts := map[workload.Op]int{}
	s := w.NewStream(0, 1, 1)
	var req workload.Request
	for range n {
		s.Next(&req)
		counts[req.Op]++
	}
	return counts
}

// CheckSpot checks a response's shape and a few words of each value at a
// cost independent of the value sizes; Check reads every byte.
func ExampleModel_CheckSpot() {
	m := workload.NewModel()
	key := []byte("big")
	m.Set(key, 1<<16)
	v := make([]byte, 1<<16)
	workload.Fill(v, key, 0)
	req := &workload.Request{Op: workload.OpGet, Keys: [][]byte{key}}
	resp := &workload.Response{Values: [][]byte{v}}
	fmt.Println(m.CheckSpot(req, resp), m.Check(req, resp))
	v[1000] ^= 1 // neither the first, middle nor last word
	fmt.Println(m.CheckSpot(req, resp), m.Check(req, resp))
	fmt.Println(m.CheckSpot(req, &workload.Response{Values: [][]byte{v[:100]}}))
	// Output:
	// <nil> <nil>
	// <nil> workload: get "big": element 0 content differs
	// workload: get "big": element 0 has 100 bytes, want 65536
}

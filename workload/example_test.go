package workload_test

import (
	"fmt"
	"io"
	"strings"

	"github.com/cornflakes-go/cornflakes/workload"
)

// Parse a workload, preload a reference store, and check a response.
func ExampleParse() {
	w, err := workload.Parse("ycsb:records=1000,shape=2x2048")
	if err != nil {
		panic(err)
	}
	fmt.Println(w.Name())

	store := workload.NewMemStore()
	var resp workload.Response
	_ = w.Preload(func(r *workload.Request) error {
		store.Apply(r, &resp)
		return nil
	})

	var req workload.Request
	s := w.NewStream(0, 1, 42)
	s.Next(&req)
	store.Apply(&req, &resp)
	fmt.Println(req.Op, len(resp.Values), len(resp.Values[0]), w.Model().Check(&req, &resp))
	// Output:
	// ycsb:records=1000,shape=2x2048,layout=list
	// getlist 2 2048 <nil>
}

// The first keys YCSB's CoreWorkload builds (insertorder=hashed).
func ExampleYCSBKey() {
	for i := range int64(3) {
		fmt.Println(string(workload.YCSBKey(nil, i)))
	}
	// Output:
	// user6284781860667377211
	// user8517097267634966620
	// user1820151046732198393
}

// Read the Twitter cache trace's CSV format (the published traces, after
// zstd decompression): each line becomes a TraceRecord, and its operation
// maps to the key-value store's (get and gets are Get; set and add, Put).
func ExampleTraceReader() {
	trace := strings.NewReader(`0,key_a,5,2439,17,get,0
0,key_b,5,100,3,set,3600
1,key_a,5,2439,17,gets,0
`)
	r := workload.NewTraceReader(trace)
	var rec workload.TraceRecord
	for {
		err := r.Next(&rec)
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(rec.Time, string(rec.Key), rec.ValueSize, rec.ClientID, rec.Op.KVOp())
	}
	// Output:
	// 0 key_a 2439 17 get
	// 0 key_b 100 3 put
	// 1 key_a 2439 17 get
}

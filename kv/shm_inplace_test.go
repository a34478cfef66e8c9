package kv

import (
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath/memnet"

	"github.com/cornflakes-go/cornflakes/workload"
)

// TestShmReceiveInPlace: on shm, a Cornflakes GET of a value above the
// threshold is delivered to the client in place (its value read in the
// server's memory, nothing gathered), a baseline's response is received
// as one copied packet, and every packet the client held is given back to
// the server (its store's references return when the server closes: env's
// cleanup checks the pool accounting).
func TestShmReceiveInPlace(t *testing.T) {
	e := newEnv(t, DatapathShm, memnet.Faults{}, 1)
	big, small := val(4000, 3), val(100, 5)
	for _, tc := range []struct {
		codec   Codec
		inPlace bool
	}{
		{CodecCFHybrid, true},
		{CodecCFZeroCopy, true},
		{CodecCFCopy, false},
		{CodecProtobuf, false},
	} {
		t.Run(tc.codec.String(), func(t *testing.T) {
			if err := e.srv.Clear(); err != nil {
				t.Fatal(err)
			}
			cn := e.dial(t, tc.codec)
			for i, v := range []string{big, small} {
				k := string(rune('a' + i))
				if got := call(t, cn, req(workload.OpPut, []string{k}, []string{v}, 0)); got.Status != workload.StatusOK {
					t.Fatal(got.Status)
				}
				for j := 0; j < 3; j++ {
					got := call(t, cn, req(workload.OpGet, []string{k}, nil, 0))
					if got.Status != workload.StatusOK || len(got.Values) != 1 || string(got.Values[0]) != v {
						t.Fatalf("GET %s: %v, %d values", k, got.Status, len(got.Values))
					}
				}
			}
			got := call(t, cn, req(workload.OpGetM, []string{"a", "b", "a"}, nil, 0))
			if got.Status != workload.StatusOK || len(got.Values) != 3 || string(got.Values[0]) != big || string(got.Values[1]) != small || string(got.Values[2]) != big {
				t.Fatalf("GETM: %v, %d values", got.Status, len(got.Values))
			}
			ts := transportOf(cn.ep, cn.dp)
			if tc.inPlace && (ts.RxInPlace < 4 || ts.RxGathered != 0) {
				t.Fatalf("%v: %d responses in place, %d gathered; want >= 4 and 0", tc.codec, ts.RxInPlace, ts.RxGathered)
			}
			if !tc.inPlace && ts.RxInPlace+ts.RxGathered != 0 {
				t.Fatalf("%v: %d responses in place, %d gathered; want none", tc.codec, ts.RxInPlace, ts.RxGathered)
			}
			if err := cn.Close(); err != nil {
				t.Fatal(err)
			}
			if ts := transportOf(cn.ep, cn.dp); ts.RxHeld != 0 {
				t.Fatalf("client still holds %d server packets after close", ts.RxHeld)
			}
		})
	}
}

// TestShmInPlaceBatch: many GETs in flight on shm, so that one Poll
// receives several responses in place (the client's endpoint touches the
// batch's segments first: shm.Options.TouchSegments): each response reaches
// its own request id with its own key's value (single values and a GETM's
// three), with and without the touch, and the client holds none of the
// server's packets afterwards.
func TestShmInPlaceBatch(t *testing.T) {
	for _, touch := range []bool{true, false} {
		t.Run(map[bool]string{true: "touch", false: "plain"}[touch], func(t *testing.T) {
			defer func(old bool) { touchSegmentsOn = old }(touchSegmentsOn)
			touchSegmentsOn = touch
			e := newEnv(t, DatapathShm, memnet.Faults{}, 1)
			cn := e.dial(t, CodecCFHybrid)
			const keys = 40
			want := make([]string, keys)
			for i := range want {
				want[i] = val(3000+97*i, byte(i))
				if got := call(t, cn, req(workload.OpPut, []string{string(rune('a' + i))}, []string{want[i]}, 0)); got.Status != workload.StatusOK {
					t.Fatal(got.Status)
				}
			}
			multi := 0 // polls that delivered more than one response
			for round := 0; round < 3; round++ {
				reqs := make([]*workload.Request, keys)
				for i := range reqs {
					k := string(rune('a' + i))
					if i%5 == 4 {
						j := string(rune('a' + (i+1)%keys))
						reqs[i] = req(workload.OpGetM, []string{k, j, k}, nil, 0)
					} else {
						reqs[i] = req(workload.OpGet, []string{k}, nil, 0)
					}
					if err := cn.Send(uint64(i), reqs[i]); err != nil {
						t.Fatal(err)
					}
				}
				seen := make([]bool, keys)
				left := keys
				deadline := time.Now().Add(10 * time.Second)
				for left > 0 {
					if time.Now().After(deadline) {
						t.Fatalf("round %d: %d responses missing", round, left)
					}
					n, err := cn.Poll(func(id uint64, r *workload.Response) {
						if id >= keys || seen[id] {
							t.Errorf("unexpected or repeated id %d", id)
							return
						}
						seen[id] = true
						left--
						exp := []string{want[id]}
						if id%5 == 4 {
							exp = []string{want[id], want[(id+1)%keys], want[id]}
						}
						if r.Status != workload.StatusOK || len(r.Values) != len(exp) {
							t.Errorf("id %d: %v, %d values, want %d", id, r.Status, len(r.Values), len(exp))
							return
						}
						for k, v := range r.Values {
							if string(v) != exp[k] {
								t.Errorf("id %d: value %d differs", id, k)
							}
						}
					})
					if err != nil {
						t.Fatal(err)
					}
					if n > 1 {
						multi++
					}
				}
			}
			if multi == 0 {
				t.Fatal("no poll delivered more than one response: no batch was received")
			}
			if ts := transportOf(cn.ep, cn.dp); ts.RxInPlace < keys {
				t.Fatalf("%d responses in place, want >= %d", ts.RxInPlace, keys)
			}
			if err := cn.Close(); err != nil {
				t.Fatal(err)
			}
			if ts := transportOf(cn.ep, cn.dp); ts.RxHeld != 0 {
				t.Fatalf("client still holds %d server packets after close", ts.RxHeld)
			}
		})
	}
}

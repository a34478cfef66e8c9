package kv

import (
	"testing"

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

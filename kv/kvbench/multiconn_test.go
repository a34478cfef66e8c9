package kvbench

import (
	"context"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/bench"
	"github.com/cornflakes-go/cornflakes/kv"
	"github.com/cornflakes-go/cornflakes/workload"
)

// TestConnsPerClientShm drives a shared-memory kv server the way a busy-polling
// saturation point does: one spinning client goroutine sending on four
// connections (each its own RPC endpoint and shared-memory rings) in turn, every
// response checked, for each codec of the comparison's extremes.
func TestConnsPerClientShm(t *testing.T) {
	w, err := workload.Parse("ycsb:records=500,shape=2x2048")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []kv.Codec{kv.CodecCFHybrid, kv.CodecVTProtobuf} {
		t.Run(c.String(), func(t *testing.T) {
			srv, err := kv.NewServer(kv.ServerConfig{Datapath: kv.DatapathShm, PoolBytes: 64 << 20, Codecs: []kv.Codec{kv.CodecCFHybrid, c}})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			cl, err := kv.NewClient(kv.ClientConfig{Server: srv.Addr(), Endpoints: 1, Datapath: kv.DatapathShm})
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			if err := preload(context.Background(), cl, w); err != nil {
				t.Fatal(err)
			}
			// A loaded machine may answer nothing inside a short window:
			// lengthen it (bounded) until responses are measured. The drain
			// is long, so a slow response is late, never lost.
			var r bench.Result
			for d := 200 * time.Millisecond; d <= 6400*time.Millisecond; d *= 2 {
				r, err = bench.Run(context.Background(), bench.Config{Workload: w, Target: cl.Target(c), ConnsPerClient: 4,
					Outstanding: bench.SaturationOutstanding, Spin: true, Duration: d, Drain: 30 * time.Second, Check: true})
				if err != nil {
					t.Fatal(err)
				}
				if r.Received > 0 {
					break
				}
			}
			if r.Received == 0 || r.Errors != 0 || r.Mismatches != 0 || r.Lost != 0 || r.Unexpected != 0 {
				t.Fatalf("result %+v (received %d, lost %d, errors %d, mismatches %d, unexpected %d)", r, r.Received, r.Lost, r.Errors, r.Mismatches, r.Unexpected)
			}
		})
	}
}

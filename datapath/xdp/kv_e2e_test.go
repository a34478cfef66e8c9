package xdp_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/kv"
	_ "github.com/cornflakes-go/cornflakes/kv/kvbench" // the baseline serializers
	"github.com/cornflakes-go/cornflakes/workload"
)

// TestKV runs the key-value server and client unchanged with Datapath
// "xdp": both open their endpoints through the process-wide AutoTopology.
func TestKV(t *testing.T) {
	useAutoTopology(t)
	srv, err := kv.NewServer(kv.ServerConfig{Datapath: "xdp", PoolBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cl, err := kv.NewClient(kv.ClientConfig{Server: srv.Addr(), Datapath: "xdp"})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, codec := range []kv.Codec{kv.CodecCFHybrid, kv.CodecProtobuf} {
		conn, err := cl.Dial(codec)
		if err != nil {
			t.Fatal(err)
		}
		big := pattern(20000, 7)
		do := func(r *workload.Request) (status string, vals [][]byte) {
			t.Helper()
			if err := conn.Send(1, r); err != nil {
				t.Fatal(err)
			}
			done := false
			for deadline := time.Now().Add(10 * time.Second); !done && time.Now().Before(deadline); {
				_, err := conn.Poll(func(id uint64, resp *workload.Response) {
					done = true
					status = resp.Status.String()
					for _, v := range resp.Values {
						vals = append(vals, append([]byte(nil), v...))
					}
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			if !done {
				t.Fatalf("%v: no response within 10s", codec)
			}
			return status, vals
		}
		if st, _ := do(&workload.Request{Op: workload.OpPut, Keys: [][]byte{[]byte("k")}, Values: [][]byte{big}}); st != "ok" {
			t.Fatalf("%v put: %s", codec, st)
		}
		st, vals := do(&workload.Request{Op: workload.OpGet, Keys: [][]byte{[]byte("k")}})
		if st != "ok" || len(vals) != 1 || !bytes.Equal(vals[0], big) {
			t.Fatalf("%v get: %s, %d values", codec, st, len(vals))
		}
		if st, _ := do(&workload.Request{Op: workload.OpGet, Keys: [][]byte{[]byte("missing")}}); st != "not-found" {
			t.Fatalf("%v get missing: %s", codec, st)
		}
		_ = conn.Close()
	}
}

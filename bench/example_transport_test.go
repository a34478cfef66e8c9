package bench_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cornflakes-go/cornflakes/bench"
	"github.com/cornflakes-go/cornflakes/workload"
)

// transportTarget is a Target whose fake transport counts one send error
// and one retransmission on the server per 10 requests served, and whose
// client side has refused (Busy) and deferred one send in all.
type transportTarget struct {
	store  *workload.MemStore
	served atomic.Uint64
}

func (t *transportTarget) Dial(int) (bench.Conn, error) {
	return &countingConn{storeConn: storeConn{store: t.store}, served: &t.served}, nil
}

func (t *transportTarget) TransportUsage() (server, client bench.TransportStats, err error) {
	n := t.served.Load()
	server = bench.TransportStats{SendErrors: 1000 + n/10, Retransmits: n / 10, TxPackets: n, RxPackets: n}
	client = bench.TransportStats{Busy: 1, Deferred: 1, TxInFlight: 2}
	return server, client, nil
}

// A Target that implements TransportMeter gets its transport's counters
// during each point (the differences of two samples; gauges as of the
// end) in Result.ServerTransport and ClientTransport; a sweep's saturation
// point carries them into Series.SaturatedServerTransport and
// SaturatedClientTransport (JSON "saturated_server_transport",
// "saturated_client_transport").
func ExampleTransportMeter() {
	w, _ := workload.Parse("google:keys=100")
	t := &transportTarget{store: preloadedStore(w)}
	r, err := bench.Run(context.Background(), bench.Config{
		Workload: w, Target: t, Outstanding: 4, Duration: 100 * time.Millisecond,
	})
	srv, cli := r.ServerTransport, r.ClientTransport
	d := int64(srv.TxPackets) - 10*int64(srv.SendErrors) // n1/10 - n0/10 is (n1-n0)/10, give or take one
	fmt.Println(err, srv.TxPackets > 0, d > -10 && d < 10)
	fmt.Println(cli.Busy, cli.Deferred, cli.TxInFlight, cli.Troubled())
	// Output:
	// <nil> true true
	// 0 0 2 false
}

package bench

import "github.com/cornflakes-go/cornflakes/internal/loadgen"

// TransportStats are the counters of one side (server or load generator)
// of the transport under test (see loadgen.TransportStats).
type TransportStats = loadgen.TransportStats

// TransportMeter is implemented by a Target that can report the counters
// of its transport, cumulative since the target was set up, on the server
// (zero when the server is another process) and on the load generator's
// closed connections. Run samples it before and after a point (the
// connections of a point are all closed before the second sample) and
// reports the differences (Result.ServerTransport, ClientTransport).
type TransportMeter interface {
	TransportUsage() (server, client TransportStats, err error)
}

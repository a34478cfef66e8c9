package kv

import (
	"fmt"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/shm"
	"github.com/cornflakes-go/cornflakes/internal/loadgen"
	"github.com/cornflakes-go/cornflakes/rpc"
)

// shmStatser is a datapath with shm's detailed counters.
type shmStatser interface{ ShmStats() shm.Stats }

// transportOf reads the counters of ep and its datapath dp. It must run
// on ep's goroutine (or after its loop ended): shm's counters belong to
// the endpoint's owner.
func transportOf(ep *rpc.Endpoint, dp datapath.Endpoint) loadgen.TransportStats {
	es := ep.Stats()
	t := loadgen.TransportStats{
		SendErrors: es.SendErrors, Retransmits: es.Proto.Retransmits, RTOs: es.Proto.RTOs,
		DropOrder: es.Proto.DropOrder, Deferred: es.Deferred,
		TxPackets: es.Datapath.TxPackets, RxPackets: es.Datapath.RxPackets,
		ZeroCopyBytes: es.Datapath.ZeroCopyBytes, CopiedBytes: es.Datapath.CopiedBytes,
		Drops:     es.Datapath.Drops,
		RxInPlace: es.RxInPlace - es.RxInPlaceGathered, RxGathered: es.RxGathered + es.RxInPlaceGathered,
	}
	if s, ok := dp.(shmStatser); ok {
		ss := s.ShmStats()
		t.RxCopiedBytes, t.RxZeroCopyBytes = ss.RxCopiedBytes, ss.RxZeroCopyBytes
		t.Busy, t.ZeroCopyFallbacks = ss.Busy, ss.ZeroCopyFallbacks
		t.TxInFlight, t.RxHeld = ss.TxInFlight, ss.RxHeld
	}
	return t
}

// transportWait bounds how long Server.Transport waits for an endpoint's
// loop to read its counters.
const transportWait = 2 * time.Second

// Transport sums the transport counters (loadgen.TransportStats) of the
// server's endpoints, cumulative since the server started. Each
// endpoint's counters are read on its own goroutine (a function posted to
// its loop); an endpoint that does not answer within 2 s is an error.
// After Close it reads the final counts.
func (s *Server) Transport() (loadgen.TransportStats, error) {
	var sum loadgen.TransportStats
	for _, e := range s.eps {
		if s.closed {
			sum.Add(transportOf(e.ep, e.dp))
			continue
		}
		ch := make(chan loadgen.TransportStats, 1)
		if err := e.ep.Post(func() { ch <- transportOf(e.ep, e.dp) }); err != nil {
			return sum, err
		}
		select {
		case t := <-ch:
			sum.Add(t)
		case <-time.After(transportWait):
			return sum, fmt.Errorf("kv: endpoint %d did not report its counters within %v", e.ep.ID(), transportWait)
		}
	}
	return sum, nil
}

// Transport sums the transport counters of the client's connections
// closed so far (loadgen.TransportStats; each connection adds its counts
// when it closes).
func (c *Client) Transport() loadgen.TransportStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.transport
}

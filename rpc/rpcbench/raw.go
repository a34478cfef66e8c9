package rpcbench

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/rpc"
)

// flushMidBatch reports whether a raw loop that has answered packet i of
// a receive batch of n flushes before the rest, as the RPC endpoint does
// after every rpc.DefaultFlushEvery messages (EndpointConfig.FlushEvery).
func flushMidBatch(i, n int) bool { return (i+1)%rpc.DefaultFlushEvery == 0 && i+1 < n }

// rawServer echoes every packet (or a 16-byte ack when ack is set) until
// stop. Like the RPC server endpoint's Run loop in the benchmarks, it
// busy-polls (receive batch, answer, flush) on a locked OS thread and never
// sleeps. Echoing, it flushes within a batch as the endpoint does (after
// every rpc.DefaultFlushEvery requests), so that both loops send alike;
// acknowledging (bandwidth), once per batch, as the endpoint sends credit
// returns.
func rawServer(dp datapath.Endpoint, ack bool, started chan<- struct{}, stop <-chan struct{}, done chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	restore := pinThread(cpuServer)
	defer restore()
	close(started)
	pkts := make([]datapath.Packet, datapath.DefaultBatch)
	for i := 0; ; i++ {
		if i&63 == 0 {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
		}
		n, err := dp.Recv(pkts)
		if err != nil {
			done <- err
			return
		}
		for i := 0; i < n; i++ {
			p := pkts[i].Buf.Bytes()
			if ack && len(p) > 16 {
				p = p[:16]
			}
			_ = dp.Send(pkts[i].From, p)
			_ = pkts[i].Buf.Release()
			pkts[i] = datapath.Packet{}
			if !ack && flushMidBatch(i, n) {
				_ = dp.Flush()
			}
		}
		if err := dp.Flush(); err != nil {
			done <- err
			return
		}
	}
}

type rawPair struct {
	srv, cli datapath.Endpoint
	// lossless: nothing is lost (shm), so a window without replies is
	// late, not lost: it is topped up, not refilled.
	lossless bool
	stop     chan struct{}
	done     chan error
	sys      *batching // if set, close collects the system-call counters
}

func newRawPair(f fabric, ack bool) (*rawPair, error) {
	srv, err := f.open(true)
	if err != nil {
		return nil, err
	}
	cli, err := f.open(false)
	if err != nil {
		_ = srv.Close()
		return nil, err
	}
	p := &rawPair{srv: srv, cli: cli, lossless: f.kind == "shm", stop: make(chan struct{}), done: make(chan error, 1)}
	started := make(chan struct{})
	go withRole("raw-server", func() { rawServer(srv, ack, started, p.stop, p.done) })
	<-started // the client's spinning loop must not race the server's start
	return p, nil
}

func (p *rawPair) close() error {
	close(p.stop)
	err := <-p.done
	if p.sys != nil {
		p.sys.collect(p.cli, p.srv)
	}
	_ = p.cli.Close()
	_ = p.srv.Close()
	return err
}

// rawRun keeps window packets of size bytes in flight for d (after d/10 of
// warm-up that lasts until the first reply, as closedLoop's, at most 30 s)
// and returns replies per second; a window with no reply for 20 ms is
// refilled (lost packets; on a lossless datapath only topped up to the
// window), and a send the datapath refuses because the peer holds every
// slot (shm.ErrBusy: it is behind) is dropped from the window until then.
// The measured window runs past d until its first reply (at most 30 s), so a
// loaded machine that starves a thread for all of d gives a low rate, not an
// error. lat collects round-trip times when non-nil.
func rawRun(p *rawPair, size, window int, d time.Duration, lat *[]time.Duration) (float64, error) {
	if size < 16 {
		size = 16
	}
	buf := make([]byte, size)
	dst := p.srv.LocalAddr()
	pkts := make([]datapath.Packet, datapath.DefaultBatch)
	var seq uint64
	inflight := 0 // sent and not answered (counted for lossless refills)
	send := func() error {
		seq++
		binary.LittleEndian.PutUint64(buf, seq)
		if lat != nil { // a clock read per packet only when measuring latency, as the RPC loop
			binary.LittleEndian.PutUint64(buf[8:], uint64(time.Now().UnixNano()))
		}
		err := p.cli.Send(dst, buf)
		if err == nil {
			inflight++
		}
		return err
	}
	for i := 0; i < window; i++ {
		if err := send(); err != nil {
			return 0, err
		}
	}
	if err := p.cli.Flush(); err != nil {
		return 0, err
	}
	start := time.Now()
	warmEnd := start.Add(d / 10)
	limit := start.Add(30 * time.Second) // for the first reply (a loaded machine)
	var end time.Time
	count := 0
	last := time.Now()
	measuring := false
	for {
		now := time.Now()
		if !measuring && now.After(warmEnd) && (count > 0 || now.After(limit)) {
			measuring, count, start, end = true, 0, now, now.Add(d)
			limit = now.Add(30 * time.Second) // for the measured window's first reply
			if lat != nil {
				*lat = (*lat)[:0]
			}
		}
		if measuring && now.After(end) && (count > 0 || now.After(limit)) {
			break // a window with no reply yet (a starved thread) runs on, up to limit
		}
		n, err := p.cli.Recv(pkts)
		if err != nil {
			return 0, err
		}
		for i := 0; i < n; i++ {
			b := pkts[i].Buf.Bytes()
			if lat != nil && len(b) >= 16 {
				*lat = append(*lat, time.Duration(time.Now().UnixNano()-int64(binary.LittleEndian.Uint64(b[8:]))))
			}
			_ = pkts[i].Buf.Release()
			pkts[i] = datapath.Packet{}
			count++
			inflight--
			if err := send(); err != nil && !busy(err) {
				return 0, err
			}
			if flushMidBatch(i, n) {
				_ = p.cli.Flush() // as the endpoint (rawServer)
			}
		}
		if n > 0 {
			last = now
			if err := p.cli.Flush(); err != nil {
				return 0, err
			}
		} else if now.Sub(last) > 20*time.Millisecond {
			refill := window
			if p.lossless {
				refill = window - inflight // late, not lost: top up
			}
			for i := 0; i < refill; i++ {
				if err := send(); err != nil && !busy(err) {
					return 0, err
				}
			}
			_ = p.cli.Flush()
			last = now
		}
	}
	el := time.Since(start)
	if count == 0 {
		return 0, fmt.Errorf("raw datapath: no replies (inflight %d, client %+v, server %+v)", inflight, shmStatsOf(p.cli), shmStatsOf(p.srv))
	}
	return float64(count) / el.Seconds(), nil
}

// rawRate is the raw datapath's closed-loop echo rate with window packets
// in flight; the client loop runs on a locked OS thread. With sys set, it
// receives the pair's system-call batching (udp).
func rawRate(f fabric, size, window int, d time.Duration, lat *[]time.Duration, sys *batching) (float64, error) {
	var r float64
	err := onLockedThread("raw-client", func() error {
		p, err := newRawPair(f, false)
		if err != nil {
			return err
		}
		r, err = rawRun(p, size, window, d, lat)
		p.sys = sys
		if cerr := p.close(); err == nil {
			err = cerr
		}
		return err
	})
	return r, err
}

// rawBandwidth streams full packets with 64 in flight (the server acks each
// with 16 bytes) and returns the payload bandwidth in Gbit/s.
func rawBandwidth(f fabric, d time.Duration) (float64, error) {
	var r float64
	var size int
	err := onLockedThread("raw-client", func() error {
		p, err := newRawPair(f, true)
		if err != nil {
			return err
		}
		size = p.cli.MaxPayload()
		window := 64
		if f.kind == "shm" {
			// 1 MiB packets: 16 in flight keep the copy loop busy (with
			// 64 the shm pair stalled, docs/perf/shmint.md).
			window = 16
		}
		r, err = rawRun(p, size, window, d, nil)
		if cerr := p.close(); err == nil {
			err = cerr
		} else if cerr != nil {
			err = fmt.Errorf("%w (server: %v)", err, cerr)
		}
		return err
	})
	return r * float64(size) * 8 / 1e9, err
}

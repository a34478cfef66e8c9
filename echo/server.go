package echo

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/internal/cpuclock"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/microbench"
)

// hdrLen is the application header every request and response carries:
// slot u32, sequence u32, variant u32, magic u32 (little-endian).
const (
	hdrLen = 16
	magic  = 0x43464543 // "CEFC"
)

type approachKind int

const (
	apRaw approachKind = iota
	apOneCopy
	apTwoCopy
	apLib
	apCornflakes
)

func kindOf(approach string) approachKind {
	switch approach {
	case "raw":
		return apRaw
	case "onecopy":
		return apOneCopy
	case "twocopy":
		return apTwoCopy
	case "protobuf", "flatbuffers", "capnp":
		return apLib
	}
	return apCornflakes
}

// available reports whether approach can run in this build.
func available(approach string) error {
	if kindOf(approach) == apCornflakes {
		return cornflakesAvailable()
	}
	return nil
}

// server is the echo server of one run; it is used by the server goroutine
// only.
type server struct {
	side  *side
	ep    datapath.Endpoint
	kind  approachKind
	shape microbench.Shape
	codec libCodec
	cf    *cfServer
	obj   partsObject
	segs  [1]mem.Buf
	inter []byte // twocopy's intermediate buffer
	pkts  []datapath.Packet
	errs  uint64

	// measuring is set by the client during the measured window; the
	// server then accumulates the CPU time of its request handling
	// (decode, build, send, Flush, arena reset; not the receive syscall).
	measuring atomic.Bool
	cpuNs     int64
	handled   uint64 // requests in the timed batches
	batches   uint64
	polls     PollStats // receive polls in the measured window
}

// CPUSample: the server times its handling of one batch in CPUSample
// (systematic sampling); ServerNsPerReq is the timed CPU over the
// requests of the timed batches.
const CPUSample = 8

func newServer(s *side, approach string, shape microbench.Shape) (*server, error) {
	srv := &server{side: s, ep: s.ep, kind: kindOf(approach), shape: shape, pkts: make([]datapath.Packet, datapath.DefaultBatch)}
	switch srv.kind {
	case apTwoCopy:
		srv.inter = make([]byte, s.ep.MaxPayload())
	case apLib:
		c, err := newCodec(approach, shape.Kind)
		if err != nil {
			return nil, err
		}
		srv.codec = c
	case apCornflakes:
		c, err := newCFServer(approach, shape, s)
		if err != nil {
			return nil, err
		}
		srv.cf = c
	}
	return srv, nil
}

func (s *server) close() error {
	if s.cf != nil {
		return s.cf.close()
	}
	return nil
}

// SpinPolls is how many empty polls the server and the client make
// between two yields of their CPU (sched_yield), and SpinTime how long
// they stay idle (polling and yielding) before they block in Wait (1 ms
// at most). Busy-polling through the short gaps of a closed loop keeps a
// run from measuring the kernel's wake-ups (an eventfd write and a
// reschedule per batch) instead of the server; yielding lets the peer
// run when both share one CPU (a loaded machine); blocking after SpinTime
// keeps an idle side from starving other processes.
const (
	SpinPolls = 256
	SpinTime  = 200 * time.Microsecond
)

// spinner decides, after each empty poll, whether to keep polling, to
// yield the CPU or to block; reset it after every poll that found work.
type spinner struct {
	polls int
	since time.Time // when the SpinPolls-th empty poll in a row happened
}

func (s *spinner) reset() { s.polls = 0 }

// idle counts one empty poll and reports whether the caller should block
// in Wait now. It yields the CPU every SpinPolls empty polls.
func (s *spinner) idle() bool {
	s.polls++
	if s.polls%SpinPolls != 0 {
		return false
	}
	now := time.Now()
	if s.polls == SpinPolls {
		s.since = now
	} else if now.Sub(s.since) >= SpinTime {
		s.polls = 0
		return true
	}
	unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0) // never fails on Linux
	return false
}

// loop receives and answers requests until stop is set. The endpoint is
// busy-polled (yielding the CPU every SpinPolls empty polls, blocking
// after SpinTime idle); the stop flag is
// checked when a poll comes back empty.
func (s *server) loop(stop *atomic.Bool) error {
	var spin spinner
	for {
		n, err := s.ep.Recv(s.pkts)
		if err != nil {
			return fmt.Errorf("server recv: %w", err)
		}
		open := s.measuring.Load()
		if open {
			s.polls.add(n)
		}
		if n == 0 {
			if stop.Load() {
				return nil
			}
			if spin.idle() {
				if err := s.ep.Wait(time.Millisecond); err != nil {
					return fmt.Errorf("server wait: %w", err)
				}
			}
			continue
		}
		spin.reset()
		var t0 int64
		// Every CPUSample-th batch is timed: two clock reads are two
		// system calls, which would otherwise add to every batch.
		s.batches++
		measuring := open && s.batches%CPUSample == 0
		if measuring {
			t0 = cpuclock.Thread()
		}
		if err := s.serve(n); err != nil {
			return err
		}
		if measuring {
			s.cpuNs += cpuclock.Thread() - t0
			s.handled += uint64(n)
		}
	}
}

// serve answers the n requests received in s.pkts, releases them, flushes
// the endpoint and ends the batch (the arena's reset).
func (s *server) serve(n int) error {
	for i := range s.pkts[:n] {
		p := &s.pkts[i]
		if err := s.handle(p); err != nil {
			s.errs++
		}
		err := p.Buf.Release()
		*p = datapath.Packet{}
		if err != nil {
			return err
		}
	}
	if err := s.ep.Flush(); err != nil {
		return fmt.Errorf("server flush: %w", err)
	}
	if s.cf != nil {
		return s.cf.reset()
	}
	return nil
}

// handle answers one request. p.Buf is released by the caller after
// handle returns; everything sent from it is cloned or copied by the
// endpoint.
func (s *server) handle(p *datapath.Packet) error {
	b := p.Buf.Bytes()
	if len(b) < hdrLen || binary.LittleEndian.Uint32(b[12:]) != magic {
		return ErrBadMessage
	}
	hdr := b[:hdrLen]
	if s.kind == apCornflakes {
		// First: the variant whose handling costs the most instructions
		// besides this switch (the others' cases come after one compare).
		return s.cf.handle(s.ep, p, hdr)
	}
	payload := b[hdrLen:]
	switch s.kind {
	case apRaw:
		// No serialization: the payload goes back zero-copy from the
		// receive buffer.
		s.segs[0] = p.Buf.Slice(hdrLen, len(payload))
		err := s.ep.SendSegments(p.From, hdr, s.segs[:])
		s.segs[0] = mem.Buf{}
		return err
	case apOneCopy:
		return s.ep.Send(p.From, b)
	case apTwoCopy:
		n := copy(s.inter, b)
		return s.ep.Send(p.From, s.inter[:n])
	case apLib:
		vals, err := s.codec.decode(payload)
		if err != nil {
			return err
		}
		if s.obj.parts, err = s.codec.encode(vals); err != nil {
			return err
		}
		err = s.ep.SendObject(p.From, hdr, &s.obj)
		s.obj.parts = [2][]byte{}
		return err
	}
	return fmt.Errorf("echo: unknown approach kind %d", s.kind)
}

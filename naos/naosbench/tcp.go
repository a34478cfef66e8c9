package naosbench

import (
	"bufio"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cornflakes-go/cornflakes/naos"
)

// maxFrame bounds a baseline frame the TCP receiver accepts.
const maxFrame = 1 << 30

// tcpHarness measures over a fresh loopback TCP connection per record.
// With reuse, receivers decode into their previous value (see sink).
// sockBuf is the socket buffer size of every connection (see tcpPair).
type tcpHarness struct {
	reuse   bool
	sockBuf int
}

func (*tcpHarness) close() error { return nil }

// tcpPair returns the two ends of a loopback TCP connection, with
// SO_RCVBUF and SO_SNDBUF set to sockBuf on both ends if it is positive
// (the kernel caps the request at net.core.rmem_max/wmem_max and
// doubles it for its bookkeeping; setting them turns off the receive
// buffer's autotuning).
func tcpPair(sockBuf int) (cli, srv net.Conn, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	defer ln.Close()
	ch := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		ch <- c
	}()
	cli, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		_ = ln.Close()
		<-ch
		return nil, nil, err
	}
	srv = <-ch
	if srv == nil {
		_ = cli.Close()
		return nil, nil, errors.New("accept failed")
	}
	if sockBuf > 0 {
		for _, c := range []*net.TCPConn{cli.(*net.TCPConn), srv.(*net.TCPConn)} {
			err := c.SetReadBuffer(sockBuf)
			if err == nil {
				err = c.SetWriteBuffer(sockBuf)
			}
			if err != nil {
				_, _ = cli.Close(), srv.Close()
				return nil, nil, fmt.Errorf("socket buffers: %w", err)
			}
		}
	}
	return cli, srv, nil
}

func (h *tcpHarness) measure(lib string, d *dataset, budget time.Duration) (result, error) {
	cli, srv, err := tcpPair(h.sockBuf)
	if err != nil {
		return result{}, err
	}
	srvDone := make(chan error, 1)
	go func() { srvDone <- serveTCP(lib, d, srv, h.reuse) }()
	send, closeCli, err := tcpSender(lib, d, cli)
	if err != nil {
		_ = cli.Close()
		<-srvDone
		return result{}, err
	}
	lat, tput, cpu, err := drive(send, func() error {
		var b [1]byte
		_, err := io.ReadFull(cli, b[:])
		return err
	}, budget, d.approxBytes())
	closeCli()
	if serr := <-srvDone; err == nil && serr != nil {
		err = serr
	}
	return result{lat, tput, cpu}, err
}

// maxBytesInFlight bounds the bytes a streaming sender may have sent and
// not yet seen acknowledged (see inFlight).
const maxBytesInFlight = 512 << 10

// inFlight returns how many arrays of about msgBytes each may be sent and
// not yet acknowledged while streaming, given a round trip of rtt: deep
// enough to keep the pipe full (at least 2), shallow enough that the
// arrays in flight at the deadline are acknowledged within a few
// milliseconds (at most 64), and at most maxBytesInFlight bytes ahead
// (but still 2 arrays). Beyond what the kernel's loopback socket buffers
// hold, a deeper window only makes writes block halfway through an array
// and costs every library extra wake-ups and CPU: at 2^16 float32
// (256 KiB) a window of 64 measured below the lock-step rate for every
// library (docs/NAOS.md, "Streaming window").
func inFlight(rtt time.Duration, msgBytes int) int {
	n := int(min(max(2*time.Millisecond/max(rtt, time.Microsecond), 2), 64))
	if msgBytes > 0 {
		n = min(n, max(2, maxBytesInFlight/msgBytes))
	}
	return n
}

// drive measures latency (send, wait for the acknowledgement) and then
// throughput (a goroutine sends, at most inFlight(median round trip,
// msgBytes) arrays ahead, while the caller counts acknowledgements). Both phases
// run for budget/2 (at least 3 arrays, at most maxReps and maxStream), so a slow warm-up round trip on a loaded machine does not
// shrink the sample. CPU is the process's CPU time over the throughput
// phase divided by the arrays sent in it (all acknowledged before the
// clock stops).
func drive(send func() error, ack func() error, budget time.Duration, msgBytes int) (lat, tput, cpu float64, err error) {
	rt := func() (time.Duration, error) {
		t0 := time.Now()
		if err := send(); err != nil {
			return 0, err
		}
		if err := ack(); err != nil {
			return 0, err
		}
		return time.Since(t0), nil
	}
	for i := 0; i < 2; i++ {
		if _, err = rt(); err != nil {
			return 0, 0, 0, err
		}
	}
	xs := make([]time.Duration, 0, 64)
	deadline := time.Now().Add(budget / 2)
	for i := 0; i < maxReps && (i < 3 || time.Now().Before(deadline)); i++ {
		x, err := rt()
		if err != nil {
			return 0, 0, 0, err
		}
		xs = append(xs, x)
	}
	med := median(xs)
	lat = float64(med) / 1e3
	quit := make(chan struct{})
	var sent atomic.Int64
	errc := make(chan error, 1)
	window := make(chan struct{}, inFlight(med, msgBytes))
	c0 := cpuTime()
	t0 := time.Now()
	go func() {
		for i := 0; i < maxStream; i++ {
			select {
			case window <- struct{}{}:
			case <-quit:
				errc <- nil
				return
			}
			if err := send(); err != nil {
				errc <- err
				return
			}
			sent.Add(1)
		}
		errc <- nil
	}()
	got := 0
	for got < maxStream {
		if err = ack(); err != nil {
			break
		}
		<-window
		got++
		if got >= 3 && time.Since(t0) >= budget/2 {
			break
		}
	}
	el := time.Since(t0)
	counted := got
	close(quit)
	serr := <-errc
	if err == nil {
		err = serr
	}
	for n := int(sent.Load()); err == nil && got < n; got++ {
		err = ack() // the arrays still in flight (at most inFlight)
	}
	if err != nil {
		return 0, 0, 0, err
	}
	cpu = float64(cpuTime()-c0) / 1e3 / float64(got)
	return lat, float64(counted) / el.Seconds(), cpu, nil
}

// tcpSender returns the client's send of one array and its close.
func tcpSender(lib string, d *dataset, c net.Conn) (func() error, func(), error) {
	switch lib {
	case "naos", "naosit":
		k, err := naos.NewConn(c, naos.Options{Compact: lib == "naosit"})
		if err != nil {
			return nil, nil, err
		}
		v := d.value()
		return func() error { return k.Send(v) }, func() { _ = k.Close() }, nil
	case "gob":
		enc := gob.NewEncoder(c) // one Write per Encode
		v := d.value()
		return func() error { return enc.Encode(v) }, func() { _ = c.Close() }, nil
	}
	cd, err := newCodec(lib, d, false)
	if err != nil {
		return nil, nil, err
	}
	var buf []byte
	if lib == "floor" {
		buf, _ = cd.encode([]byte{0, 0, 0, 0})
		binary.LittleEndian.PutUint32(buf, uint32(len(buf)-4))
		return func() error { _, err := c.Write(buf); return err }, func() { _ = c.Close() }, nil
	}
	return func() error {
		var err error
		buf, err = cd.encode(append(buf[:0], 0, 0, 0, 0))
		if err != nil {
			return err
		}
		binary.LittleEndian.PutUint32(buf, uint32(len(buf)-4))
		_, err = c.Write(buf)
		return err
	}, func() { _ = c.Close() }, nil
}

// serveTCP receives arrays until the client closes, acknowledging each
// with one byte once it is fully decoded, into the previous array's
// memory where the library allows it if reuse is set.
func serveTCP(lib string, d *dataset, c net.Conn, reuse bool) error {
	defer c.Close()
	var recv func() error
	switch lib {
	case "naos", "naosit":
		k, err := naos.NewConn(c, naos.Options{})
		if err != nil {
			return err
		}
		defer k.Close()
		s := &sink{reuse: reuse}
		recv = func() error { return naosRecv(d, k, s) }
	case "gob":
		dec := gob.NewDecoder(bufio.NewReaderSize(c, 64<<10))
		s := &sink{reuse: reuse}
		recv = func() error { return gobDecode(d, dec, s) }
	default:
		cd, err := newCodec(lib, d, reuse)
		if err != nil {
			return err
		}
		br := bufio.NewReaderSize(c, 64<<10)
		var frame, frameBuf []byte
		recv = func() error {
			var h [4]byte
			if _, err := io.ReadFull(br, h[:]); err != nil {
				return err
			}
			n := binary.LittleEndian.Uint32(h[:])
			if n > maxFrame {
				return fmt.Errorf("frame of %d bytes", n)
			}
			if lib == "floor" {
				// The frame ends 8-byte aligned, so the elements at its
				// tail can be checked in place (checkFloor).
				if cap(frameBuf) < int(n)+8 {
					frameBuf = make([]byte, n+8)
				}
				off := (8 - int(n)%8) % 8
				frame = frameBuf[off : off+int(n)]
			} else {
				if cap(frame) < int(n) {
					frame = make([]byte, n)
				}
				frame = frame[:n]
			}
			if _, err := io.ReadFull(br, frame); err != nil {
				return err
			}
			return cd.decode(frame)
		}
	}
	ack := []byte{1}
	for {
		if err := recv(); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		if _, err := c.Write(ack); err != nil {
			return nil // the client is gone
		}
	}
}

// naosRecv receives one array with naos.RecvInto, into the previous one
// if s reuses values (only arrays of pointer-free elements are reused).
func naosRecv(d *dataset, k *naos.Conn, s *sink) error {
	if !s.reuse {
		*s = sink{}
	}
	switch d.structure {
	case "float32":
		if err := naos.RecvInto(k, &s.floats); err != nil {
			return err
		}
		return d.checkFloats(s.floats)
	case "point-ptr":
		if err := naos.RecvInto(k, &s.pptr); err != nil {
			return err
		}
		return d.checkPointPtrs(s.pptr)
	case "point-val":
		if err := naos.RecvInto(k, &s.pval); err != nil {
			return err
		}
		return d.checkPoints(s.pval)
	}
	if err := naos.RecvInto(k, &s.pairs); err != nil {
		return err
	}
	return d.checkPairs(s.pairs)
}

// cpuTime is the process's CPU time (user and system, all threads): both
// ends of a transfer run in this process, so its growth per array is the
// whole cost of moving one, the kernel's copies included.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

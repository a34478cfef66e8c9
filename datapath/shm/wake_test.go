package shm

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
)

var wakeNS = fmt.Sprintf("wake-%d", os.Getpid())

// TestDialerWakesAfterAttach: packets a dialer publishes before it has the
// peer's hello ring no doorbell (it has none yet). If the peer attached
// first, found the ring empty and went to sleep, the dialer must wake it
// once its own attach gives it the doorbell; otherwise the peer sleeps
// through its whole Wait (up to the RPC loop's 100 ms) with requests
// waiting, which stalled whole measurement windows of the load generator.
func TestDialerWakesAfterAttach(t *testing.T) {
	srv, err := Open(datapath.Config{Options: Options{Namespace: wakeNS}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cli, err := Open(datapath.Config{Options: Options{Namespace: wakeNS}})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()

	// The client dials with a first packet; the server accepts, attaches,
	// answers with its hello and receives it. The client does not run,
	// so it stays dialing with the server's hello unread.
	if err := cli.Send(srv.LocalAddr(), []byte("first")); err != nil {
		t.Fatal(err)
	}
	_ = cli.Flush()
	pk := make([]datapath.Packet, 1)
	for deadline := time.Now().Add(10 * time.Second); ; {
		n, err := srv.Recv(pk)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			_ = pk[0].Buf.Release()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first packet did not arrive")
		}
		_ = srv.Wait(time.Millisecond)
	}
	cc := cli.byAddr[srv.LocalAddr()]
	if cc == nil || cc.state != connDialing {
		t.Fatalf("client connection %+v: want it still dialing", cc)
	}
	if len(srv.conns) != 1 || srv.conns[0].state != connUp {
		t.Fatalf("server connections: want one attached")
	}
	sc := srv.conns[0]

	// The server sleeps with an empty ring.
	woke := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		_ = srv.Wait(time.Minute)
		woke <- time.Since(start)
	}()
	for deadline := time.Now().Add(10 * time.Second); atomic.LoadUint32(sc.local.u32(offSleeping)) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the server did not go to sleep")
		}
		time.Sleep(100 * time.Microsecond)
	}

	// The client publishes while still dialing (no doorbell), then
	// reads the server's hello.
	if err := cli.Send(srv.LocalAddr(), []byte("second")); err != nil {
		t.Fatal(err)
	}
	_ = cli.Flush()
	for deadline := time.Now().Add(10 * time.Second); cc.state == connDialing; {
		if time.Now().After(deadline) {
			t.Fatal("the client did not attach")
		}
		_ = cli.Wait(time.Millisecond)
	}
	select {
	case d := <-woke:
		t.Logf("server woke after %v", d)
	case <-time.After(20 * time.Second):
		t.Fatal("the server slept through a packet published while the client was dialing")
	}
	if n, err := srv.Recv(pk); err != nil || n != 1 {
		t.Fatalf("Recv after the wake-up: %d, %v", n, err)
	}
	_ = pk[0].Buf.Release()
}

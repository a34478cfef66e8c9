//go:build linux

package resp

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestScatterLoop: with Config.Scatter, event loops (with and without
// the ring) receive pipelined SETs over TCP into the values' own buffers,
// and every reply and stored value is the plain path's: clients send
// batches of 16 SETs of 4 KiB (as resp bench -P 16), then a batch whose
// layout differs (another length, a GET), then GETs.
func TestScatterLoop(t *testing.T) {
	for _, noRing := range []bool{false, true} {
		ts := newTestServer(t, Config{EventLoops: 2, NoIOUring: noRing, Scatter: true})
		const clients, rounds = 8, 20
		errs := make(chan error, clients)
		for c := range clients {
			go func() {
				errs <- func() error {
					rc, err := net.Dial("tcp", ts.addr)
					if err != nil {
						return err
					}
					defer rc.Close()
					_ = rc.SetDeadline(time.Now().Add(20 * time.Second))
					br := bufio.NewReader(rc)
					key := fmt.Sprint("key:", c)
					for i := range rounds {
						var in bytes.Buffer
						var want strings.Builder
						n := 16
						if i%7 == 6 {
							n = 9
						}
						var last string
						for j := range n {
							size := 4096
							if i%5 == 4 && j == 3 {
								size = 4000 // mispredicted
							}
							last = strings.Repeat(string(rune('a'+(c+i+j)%26)), size)
							in.Write(encodeCommand([]string{"SET", key, last}))
							want.WriteString("+OK\r\n")
						}
						if i%3 == 2 {
							in.Write(encodeCommand([]string{"GET", key}))
							fmt.Fprintf(&want, "$%d\r\n%s\r\n", len(last), last)
						}
						if _, err := rc.Write(in.Bytes()); err != nil {
							return err
						}
						got := make([]byte, want.Len())
						if _, err := io.ReadFull(br, got); err != nil {
							return err
						}
						if string(got) != want.String() {
							return fmt.Errorf("client %d round %d: %.60q, want %.60q", c, i, got, want.String())
						}
					}
					return nil
				}()
			}()
		}
		for range clients {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		if st := ts.srv.Stats(); st.Scattered == 0 {
			t.Errorf("noRing %v: no value received by a scatter read (%+v)", noRing, st)
		}
	}
}

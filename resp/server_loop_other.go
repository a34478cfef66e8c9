//go:build !linux

package resp

import (
	"net"
	"time"
)

// loop is an event loop; there are none on this system (every connection
// has a goroutine of its own).
type loop struct{}

type outputSys struct{}

func (s *Server) startLoops() error { return nil }

func detach(net.Conn) int { return -1 }

func closeFD(int) {}

// pendingBytes is 0: no connection has a descriptor of its own here.
func pendingBytes(int) int { return 0 }

func (l *loop) add(*conn, int) error { return nil }

func (l *loop) wake() {}

func (l *loop) free() {}

type loopListener struct{}

func (l *loop) listen(net.Listener) *loopListener { return nil }

func (l *loop) unlisten(*loopListener) {}

// clock is the time for a connection's last-command stamp.
func (cn *conn) clock() int64 { return time.Now().UnixNano() }

//go:build !linux

package respbench

import (
	"context"
	"net"
)

// driveAll sends n requests over conns, pipe at a time (the goroutine per
// connection of driveGoroutines; Linux has event loops, load_linux.go).
func driveAll(ctx context.Context, conns []net.Conn, batch []byte, cmdLen int, want Shape, pipe int, n int64) error {
	return driveGoroutines(ctx, conns, batch, cmdLen, want, pipe, n)
}

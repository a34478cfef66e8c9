// Package kvcodec holds what the key-value store's serializers share: the
// wire status codes of a response, the limits a decoder checks and the
// buffer allocation of a flattened message. kv's Cornflakes codec and the
// baselines of kv/kvbench both use it.
package kvcodec

import (
	"errors"
	"fmt"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/workload"
)

// ErrBadMessage: a request or response body does not decode (kv.ErrBadMessage).
var ErrBadMessage = errors.New("kv: malformed message")

// Wire status codes of Resp.status.
const (
	WireOK       = 0
	WireNotFound = 1
	WireError    = 2
)

// StatusToWire is the wire code of s.
func StatusToWire(s workload.Status) uint32 {
	switch s {
	case workload.StatusOK:
		return WireOK
	case workload.StatusNotFound:
		return WireNotFound
	}
	return WireError
}

// StatusFromWire is the status of wire code s; an unknown code is an error
// wrapping ErrBadMessage.
func StatusFromWire(s uint32) (workload.Status, error) {
	switch s {
	case WireOK:
		return workload.StatusOK, nil
	case WireNotFound:
		return workload.StatusNotFound, nil
	case WireError:
		return workload.StatusError, nil
	}
	return workload.StatusError, fmt.Errorf("%w: status %d", ErrBadMessage, s)
}

// SingleValue reports whether op answers with exactly one value (the
// response's val field) rather than a list (vals).
func SingleValue(op workload.Op) bool {
	return op == workload.OpGet || op == workload.OpGetFromList
}

// CheckIndex converts a wire list index, refusing one above limit (an
// error wrapping ErrBadMessage).
func CheckIndex(i uint32, limit int) (int, error) {
	if uint64(i) > uint64(limit) {
		return 0, fmt.Errorf("%w: list index %d", ErrBadMessage, i)
	}
	return int(i), nil
}

// AllocMsg returns a registered buffer of exactly n bytes from pool (the
// caller releases it, or hands it to the RPC layer that does).
func AllocMsg(pool *mem.Pool, n int) (mem.Buf, error) {
	b, err := pool.Alloc(max(n, 1))
	if err != nil {
		return mem.Buf{}, err
	}
	return b.Slice(0, n), nil
}

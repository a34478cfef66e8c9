package mem

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cornflakes-go/cornflakes"
	"github.com/cornflakes-go/cornflakes/internal/errs"
)

// Sentinel errors. Functions wrap them with detail; test with errors.Is.
// ErrTooLarge, ErrClosed, ErrConfig and ErrConcurrentUse also match the
// shared identities of package cornflakes.
var (
	// ErrExhausted: a pool reached its MaxBytes limit (or its space is full).
	ErrExhausted = errors.New("mem: pool exhausted")
	// ErrTooLarge: Alloc of more than the pool's MaxClass bytes.
	ErrTooLarge = errs.New("mem: allocation larger than the largest size class", cornflakes.ErrTooLarge)
	// ErrInvalidSize: a negative size.
	ErrInvalidSize = errors.New("mem: invalid size")
	// ErrDoubleRelease: Release of a reference whose item count is already zero.
	ErrDoubleRelease = errors.New("mem: double release")
	// ErrUseAfterRelease: a handle whose item was released (and possibly reused).
	ErrUseAfterRelease = errors.New("mem: use after release")
	// ErrClosed: the pool or space is closed.
	ErrClosed = errs.New("mem: closed", cornflakes.ErrClosed)
	// ErrInUse: Close of a pool with allocated items, or of a space with live pools.
	ErrInUse = errors.New("mem: still in use")
	// ErrConfig: an invalid PoolConfig or SpaceConfig.
	ErrConfig = errs.New("mem: invalid configuration", cornflakes.ErrConfig)
	// ErrTooManySpaces: more than MaxSpaces spaces.
	ErrTooManySpaces = errors.New("mem: too many spaces")
	// ErrSpaceFull: the space has no free slots for a new region.
	ErrSpaceFull = errors.New("mem: address space full")
	// ErrHugepages: HugepagesRequired and no explicit hugepages could be mapped.
	ErrHugepages = errors.New("mem: hugepages unavailable")
	// ErrConcurrentUse: a non-Concurrent pool used from two goroutines at once
	// (detected in the checked build only).
	ErrConcurrentUse = errs.New("mem: concurrent use of a single-goroutine pool", cornflakes.ErrConcurrentUse)
)

// ExhaustedError reports that a pool could not grow. errors.Is(err, ErrExhausted) holds.
type ExhaustedError struct {
	Pool  string // pool name
	Class int    // item size of the class that needed to grow
	Limit int64  // the pool's MaxBytes
	Cause error  // nil when the limit was hit; ErrSpaceFull or an mmap error otherwise
}

// Error describes the pool, class and limit.
func (e *ExhaustedError) Error() string {
	s := fmt.Sprintf("mem: pool %q exhausted growing class %d (limit %d bytes)", e.Pool, e.Class, e.Limit)
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	return s
}

// Is makes errors.Is(err, ErrExhausted) true.
func (e *ExhaustedError) Is(target error) bool { return target == ErrExhausted }

// Unwrap returns the cause, if any.
func (e *ExhaustedError) Unwrap() error { return e.Cause }

// UseAfterReleaseError reports a use of a stale handle. errors.Is(err,
// ErrUseAfterRelease) holds. The checked build panics with it from Bytes,
// Clone and Slice; Release and Check return it.
type UseAfterReleaseError struct {
	Op        string // "Bytes", "Clone", "Release", "Check", "Alloc" (write after release) ...
	Pool      string
	ItemSize  int
	Item      int
	Gen, Want uint32 // the handle's generation and the item's current one
	Refs      int    // the item's current reference count
}

// Error describes the stale handle.
func (e *UseAfterReleaseError) Error() string {
	if e.Op == "Alloc" {
		return fmt.Sprintf("mem: write after release detected in pool %q, class %d, item %d (poison overwritten)", e.Pool, e.ItemSize, e.Item)
	}
	return fmt.Sprintf("mem: %s of a released buffer (pool %q, class %d, item %d, handle generation %d, item generation %d, refs %d)",
		e.Op, e.Pool, e.ItemSize, e.Item, e.Gen, e.Want, e.Refs)
}

// Is makes errors.Is(err, ErrUseAfterRelease) true.
func (e *UseAfterReleaseError) Is(target error) bool { return target == ErrUseAfterRelease }

// InUseError is returned by Pool.Close when items are still allocated.
// errors.Is(err, ErrInUse) holds.
type InUseError struct {
	Pool    string
	InUse   int
	Classes []ClassStats // the classes with items in use
}

// Error lists the classes with items in use.
func (e *InUseError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "mem: pool %q still has %d item(s) in use", e.Pool, e.InUse)
	for i, c := range e.Classes {
		if i == 0 {
			b.WriteString(" (")
		} else {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d B: %d", c.Size, c.InUse)
	}
	if len(e.Classes) > 0 {
		b.WriteString(")")
	}
	return b.String()
}

// Is makes errors.Is(err, ErrInUse) true.
func (e *InUseError) Is(target error) bool { return target == ErrInUse }

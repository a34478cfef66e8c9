package microbench

import (
	"errors"
	"fmt"

	"github.com/cornflakes-go/cornflakes/internal/baselines/codec"
)

// reader accumulates what a decode reads from each value (its length and its first and last
// bytes, the same for every library) so that the reads cannot be optimized away and every
// library touches the payload memory the same way.
type reader struct{ sum uint64 }

func (r *reader) touch(b []byte) {
	if len(b) > 0 {
		r.sum += uint64(len(b)) + uint64(b[0]) + uint64(b[len(b)-1])
	}
}

func (r *reader) touchAll(bs [][]byte) {
	for _, b := range bs {
		r.touch(b)
	}
}

// cycle steps through a shape's variants.
type cycle struct{ i, n int }

// next returns the current variant and advances.
func (c *cycle) next() int {
	v := c.i
	c.i++
	if c.i == c.n {
		c.i = 0
	}
	return v
}

// copyValues returns deep copies of vs.
func copyValues(vs [][]byte) [][]byte {
	out := make([][]byte, len(vs))
	for i, v := range vs {
		out[i] = append([]byte{}, v...)
	}
	return out
}

// checkShape returns an error unless every variant of s fits its message kind.
func checkShape(s Shape) error {
	if len(s.Variants) == 0 {
		return fmt.Errorf("shape %s has no variants", s.Name)
	}
	for _, v := range s.Variants {
		switch s.Kind {
		case KindSingle:
			if len(v) != 1 {
				return fmt.Errorf("shape %s: a SingleBuffer variant needs exactly one value, has %d", s.Name, len(v))
			}
		case KindTree:
			if len(v) != TreeLeaves {
				return fmt.Errorf("shape %s: a Tree5 variant needs %d leaves, has %d", s.Name, TreeLeaves, len(v))
			}
		case KindList:
		default:
			return fmt.Errorf("shape %s: unknown kind %v", s.Name, s.Kind)
		}
	}
	return nil
}

// mismatch wraps an echo's decode error in ErrMismatch when the decoded message has the wrong
// number of values to be echoed (codec.ErrCount); other errors are returned as they are.
func mismatch(err error) error {
	if errors.Is(err, codec.ErrCount) {
		return fmt.Errorf("%w: %w", ErrMismatch, err)
	}
	return err
}

// checkCount returns an error wrapping ErrMismatch (and codec.ErrCount) when a decoded
// SingleBuffer or Tree5 has the wrong number of values to be echoed.
func checkCount(k Kind, n int) error {
	if err := codec.CheckCount(k, n); err != nil {
		return mismatch(err)
	}
	return nil
}

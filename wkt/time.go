// Package wkt holds the Cornflakes code of protobuf's well-known types
// (google/protobuf/{any,duration,empty,struct,timestamp,wrappers}.proto,
// generated from the copies protocompile ships) and helpers converting
// Timestamp and Duration to and from time.Time and time.Duration. A schema
// that imports one of those files refers to its messages through this
// package (the generator maps the imports here; docs/CODEGEN.md).
package wkt

import (
	"errors"
	"time"

	"github.com/cornflakes-go/cornflakes/wire"
)

// The range protobuf allows for a Timestamp (0001-01-01T00:00:00Z to
// 9999-12-31T23:59:59.999999999Z) and a Duration (±10000 years).
const (
	minTimestampSeconds = -62135596800
	maxTimestampSeconds = 253402300799
	maxDurationSeconds  = 315576000000
)

// ErrInvalid is wrapped by the CheckValid errors.
var ErrInvalid = errors.New("wkt: value out of the range protobuf allows")

// NewTimestampAt returns a Timestamp in a holding t.
func NewTimestampAt(a *wire.Arena, t time.Time) *Timestamp {
	x := NewTimestamp(a)
	x.SetTime(t)
	return x
}

// AsTime returns x as a time.Time in UTC (seconds and nanos as they are,
// like protobuf-go's timestamppb.AsTime; see CheckValid).
func (x *Timestamp) AsTime() time.Time {
	return time.Unix(x.GetSeconds(), int64(x.GetNanos())).UTC()
}

// SetTime sets x to t.
func (x *Timestamp) SetTime(t time.Time) {
	x.SetSeconds(t.Unix())
	x.SetNanos(int32(t.Nanosecond()))
}

// CheckValid reports whether x is within protobuf's Timestamp range with
// nanos in [0, 1e9); the error wraps ErrInvalid.
func (x *Timestamp) CheckValid() error {
	s, n := x.GetSeconds(), x.GetNanos()
	switch {
	case s < minTimestampSeconds || s > maxTimestampSeconds:
		return errors.Join(ErrInvalid, errors.New("wkt: timestamp seconds out of range"))
	case n < 0 || n >= 1e9:
		return errors.Join(ErrInvalid, errors.New("wkt: timestamp nanos out of range"))
	}
	return nil
}

// NewDurationOf returns a Duration in a holding d.
func NewDurationOf(a *wire.Arena, d time.Duration) *Duration {
	x := NewDuration(a)
	x.SetDuration(d)
	return x
}

// AsDuration returns x as a time.Duration, saturated at its range (like
// protobuf-go's durationpb.AsDuration).
func (x *Duration) AsDuration() time.Duration {
	secs, nanos := x.GetSeconds(), time.Duration(x.GetNanos())
	d := time.Duration(secs) * time.Second
	overflow := d/time.Second != time.Duration(secs)
	d += nanos
	overflow = overflow || (secs < 0 && nanos < 0 && d > 0) || (secs > 0 && nanos > 0 && d < 0)
	if overflow {
		if secs < 0 {
			return time.Duration(-1 << 63)
		}
		return time.Duration(1<<63 - 1)
	}
	return d
}

// SetDuration sets x to d (seconds and nanos with the same sign).
func (x *Duration) SetDuration(d time.Duration) {
	x.SetSeconds(int64(d / time.Second))
	x.SetNanos(int32(d % time.Second))
}

// CheckValid reports whether x is within protobuf's Duration range with
// nanos in (-1e9, 1e9) and of the sign of seconds; the error wraps
// ErrInvalid.
func (x *Duration) CheckValid() error {
	s, n := x.GetSeconds(), x.GetNanos()
	switch {
	case s < -maxDurationSeconds || s > maxDurationSeconds:
		return errors.Join(ErrInvalid, errors.New("wkt: duration seconds out of range"))
	case n <= -1e9 || n >= 1e9:
		return errors.Join(ErrInvalid, errors.New("wkt: duration nanos out of range"))
	case (s > 0 && n < 0) || (s < 0 && n > 0):
		return errors.Join(ErrInvalid, errors.New("wkt: duration seconds and nanos of different signs"))
	}
	return nil
}

package wkt_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/wire"
	"github.com/cornflakes-go/cornflakes/wkt"
)

func TestTimestamp(t *testing.T) {
	a := wire.NewArena()
	defer a.Reset()
	for _, tm := range []time.Time{time.Unix(0, 0), time.Unix(-1, 999999999), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)} {
		x := wkt.NewTimestampAt(a, tm)
		if !x.AsTime().Equal(tm) || x.CheckValid() != nil {
			t.Errorf("%v: %v %v", tm, x.AsTime(), x.CheckValid())
		}
		p, _ := wire.Flatten(x, nil)
		y := wkt.NewTimestamp(a)
		if err := y.DecodeBytes(p); err != nil || !y.AsTime().Equal(tm) {
			t.Errorf("%v: round trip %v %v", tm, y.AsTime(), err)
		}
	}
	bad := wkt.NewTimestamp(a)
	bad.SetNanos(-1)
	if !errors.Is(bad.CheckValid(), wkt.ErrInvalid) {
		t.Error("negative nanos valid")
	}
	bad.SetNanos(0)
	bad.SetSeconds(math.MaxInt64)
	if !errors.Is(bad.CheckValid(), wkt.ErrInvalid) {
		t.Error("huge seconds valid")
	}
}

func TestDuration(t *testing.T) {
	a := wire.NewArena()
	defer a.Reset()
	for _, d := range []time.Duration{0, 1, -1, time.Second + 1, -time.Hour - 5, math.MaxInt64, math.MinInt64} {
		x := wkt.NewDurationOf(a, d)
		if x.AsDuration() != d || x.CheckValid() != nil {
			t.Errorf("%v: %v %v", d, x.AsDuration(), x.CheckValid())
		}
	}
	x := wkt.NewDuration(a)
	x.SetSeconds(math.MaxInt64)
	if x.AsDuration() != math.MaxInt64 || !errors.Is(x.CheckValid(), wkt.ErrInvalid) {
		t.Error("saturation / range")
	}
	x.SetSeconds(math.MinInt64)
	if x.AsDuration() != math.MinInt64 {
		t.Error("negative saturation")
	}
	x.SetSeconds(1)
	x.SetNanos(-1)
	if !errors.Is(x.CheckValid(), wkt.ErrInvalid) {
		t.Error("mixed signs valid")
	}
}

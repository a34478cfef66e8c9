package proto

import (
	"errors"
	"testing"
	"time"
)

func TestConfigValidation(t *testing.T) {
	bad := []Config{
		{},
		{DataPerPkt: 100, Window: 3},
		{DataPerPkt: 100, Credits: -1},
		{DataPerPkt: 100, RTO: time.Nanosecond},
		{DataPerPkt: 100, MaxMsgSize: 100 << 20},
		{DataPerPkt: 100, Selective: true, Credits: 128},
	}
	for _, c := range bad {
		if _, err := New(c, &testAlloc{}); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: got %v", c, err)
		}
	}
	c, err := New(Config{DataPerPkt: 968}, &testAlloc{})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Config().MaxMsgSize; got >= 8<<20 || got != MaxMsgSizeFor(968) {
		t.Fatalf("MaxMsgSize %d", got)
	}
}

// The steady-state small-RPC path allocates nothing, also when every
// packet goes through the rate limiter.

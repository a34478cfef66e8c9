package cornflakes_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cornflakes-go/cornflakes"
	"github.com/cornflakes-go/cornflakes/calibrate"
	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/shm"
	"github.com/cornflakes-go/cornflakes/datapath/udp"
	"github.com/cornflakes-go/cornflakes/datapath/xdp"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/naos"
	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/wire"
)

// Every package's sentinel for a shared condition matches the shared
// identity and itself, and no other package's sentinel.
func TestSharedIdentities(t *testing.T) {
	for _, tc := range []struct {
		identity error
		each     []error
	}{
		{cornflakes.ErrClosed, []error{mem.ErrClosed, datapath.ErrClosed, rpc.ErrClosed, naos.ErrClosed}},
		{cornflakes.ErrConcurrentUse, []error{mem.ErrConcurrentUse, datapath.ErrConcurrentUse, rpc.ErrConcurrentUse}},
		{cornflakes.ErrTooLarge, []error{mem.ErrTooLarge, datapath.ErrTooLarge, wire.ErrTooLarge, rpc.ErrTooLarge}},
		{cornflakes.ErrConfig, []error{mem.ErrConfig, udp.ErrConfig, xdp.ErrConfig, shm.ErrConfig, rpc.ErrConfig, calibrate.ErrConfig}},
	} {
		for i, e := range tc.each {
			if !errors.Is(e, tc.identity) {
				t.Errorf("%q does not match %q", e, tc.identity)
			}
			for j, o := range tc.each {
				if i != j && errors.Is(e, o) {
					t.Errorf("%q matches another package's %q", e, o)
				}
			}
		}
	}
}

func ExampleErrClosed() {
	pool, err := mem.NewPool(mem.PoolConfig{Name: "example"})
	if err != nil {
		panic(err)
	}
	pool.Close()
	err = pool.Close() // the second Close reports the pool closed
	// One test whichever layer reported it.
	fmt.Println(errors.Is(err, cornflakes.ErrClosed), errors.Is(err, mem.ErrClosed))
	// Output: true true
}

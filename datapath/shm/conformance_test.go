package shm_test

import (
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/dptest"
	"github.com/cornflakes-go/cornflakes/datapath/shm"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// sharedSpace is one shared space for the package's tests (spaces are a
// process-wide resource: at most mem.MaxSpaces).
var sharedSpace = sync.OnceValues(func() (*mem.Space, error) {
	return mem.NewSpace(mem.SpaceConfig{Size: 1 << 30, Shared: true})
})

func testSpace(t testing.TB) *mem.Space {
	t.Helper()
	s, err := sharedSpace()
	if err != nil {
		t.Fatalf("shared space: %v", err)
	}
	return s
}

// testNS is an abstract-socket namespace private to this test process.
var testNS = fmt.Sprintf("test-%d", os.Getpid())

func TestConformance(t *testing.T) {
	for _, mode := range []struct {
		name string
		cfg  datapath.Config
		opts shm.Options
	}{
		{"Default", datapath.Config{}, shm.Options{}},
		{"SmallBatchFewSegments", datapath.Config{Batch: 2, MaxSegments: 3, MaxPayload: 4000}, shm.Options{}},
		{"BusyPoll", datapath.Config{BusyPoll: true}, shm.Options{}},
		{"Dir", datapath.Config{}, shm.Options{Dir: "DIR"}},
		{"OwnPools", datapath.Config{}, shm.Options{}},
		{"SpinWait", datapath.Config{}, shm.Options{SpinWait: 20 * time.Microsecond}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			dptest.Run(t, func(t *testing.T) dptest.Pair {
				space := testSpace(t)
				app := memtest.NewPool(t, mem.PoolConfig{Name: "app " + t.Name(), Space: space})
				var pools []*mem.Pool
				dir := ""
				if mode.opts.Dir != "" {
					dir = t.TempDir()
				}
				open := func() datapath.Endpoint {
					cfg := mode.cfg
					o := mode.opts
					o.Namespace, o.Spaces, o.Dir = testNS, []*mem.Space{space}, dir
					cfg.Options = o
					if mode.name != "OwnPools" {
						cfg.Pool = memtest.NewPool(t)
						pools = append(pools, cfg.Pool)
					}
					ep, err := datapath.Open("shm", cfg)
					if err != nil {
						t.Fatal(err)
					}
					return ep
				}
				return dptest.Pair{A: open(), B: open(), AppPool: app, Pools: pools}
			})
		})
	}
}

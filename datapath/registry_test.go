package datapath_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cornflakes-go/cornflakes/datapath"
)

// registryRuns names each run's fake kind: the registry is process-wide
// and refuses a second registration, so go test -count=N needs a new name.
var registryRuns int

func TestRegistry(t *testing.T) {
	registryRuns++
	kind := fmt.Sprintf("dptest-fake-%d", registryRuns)
	datapath.Register(kind, func(cfg datapath.Config) (datapath.Endpoint, error) {
		return nil, errors.New("fake open")
	})
	found := false
	for _, k := range datapath.Kinds() {
		found = found || k == kind
	}
	if !found {
		t.Fatalf("Kinds() = %v, missing %s", datapath.Kinds(), kind)
	}
	if _, err := datapath.Open(kind, datapath.Config{}); err == nil || err.Error() != "fake open" {
		t.Fatalf("Open of a registered kind: %v", err)
	}
	if _, err := datapath.Open("no-such-kind", datapath.Config{}); !errors.Is(err, datapath.ErrUnknownKind) {
		t.Fatalf("Open of an unknown kind: %v, want ErrUnknownKind", err)
	}
	// A built-in kind whose package this program does not import (udp,
	// here): the error says which import registers it.
	const udpPkg = `"github.com/cornflakes-go/cornflakes/datapath/udp"`
	if _, err := datapath.Open("udp", datapath.Config{}); !errors.Is(err, datapath.ErrUnknownKind) || !strings.Contains(err.Error(), "import _ "+udpPkg) {
		t.Fatalf("Open of udp without its package: %v, want ErrUnknownKind naming %s", err, udpPkg)
	}
	for _, bad := range []func(){
		func() {
			datapath.Register(kind, func(datapath.Config) (datapath.Endpoint, error) { return nil, nil })
		},
		func() { datapath.Register("", func(datapath.Config) (datapath.Endpoint, error) { return nil, nil }) },
		func() { datapath.Register("x", nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("bad Register did not panic")
				}
			}()
			bad()
		}()
	}
}

func TestStatsAdd(t *testing.T) {
	s := datapath.Stats{TxPackets: 1, Drops: 2}
	s.Add(datapath.Stats{TxPackets: 3, RxBytes: 4, Errors: 5})
	if s != (datapath.Stats{TxPackets: 4, RxBytes: 4, Drops: 2, Errors: 5}) {
		t.Fatalf("Add = %+v", s)
	}
}

package udp

import (
	"fmt"
	"net/netip"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/driver"
)

// Options are the udp-specific settings passed in datapath.Config.Options
// (as Options or *Options). The zero value is the default.
type Options struct {
	// SocketBuffer is the requested SO_SNDBUF and SO_RCVBUF
	// (DefaultSocketBuffer; the *FORCE variants are tried first).
	SocketBuffer int
	// ReusePort sets SO_REUSEPORT so several endpoints share the address.
	ReusePort bool
	// DisableGSO and DisableGRO turn off UDP segmentation offload on send
	// and generic receive offload, which are otherwise used when the
	// kernel supports them.
	DisableGSO, DisableGRO bool
	// ZeroCopyMin > 0 enables MSG_ZEROCOPY for packets that carry a
	// zero-copy entry of at least this many bytes; their references are
	// released when the kernel's completion notice is reaped.
	ZeroCopyMin int
	// ZeroCopyPending bounds outstanding MSG_ZEROCOPY sends
	// (DefaultZeroCopyPending); beyond it Flush waits for notices and then
	// falls back to copying sends.
	ZeroCopyPending int
}

// optionsOf returns the udp options held in datapath.Config.Options.
func optionsOf(v any) (Options, error) {
	o, ok := driver.OptionsOf[Options](v)
	if !ok {
		return Options{}, fmt.Errorf("%w: Options of type %T, want udp.Options", ErrConfig, v)
	}
	return o, nil
}

// DefaultLocal is the address a registry-opened endpoint binds when
// datapath.Config.Local is not set.
var DefaultLocal = netip.MustParseAddrPort("127.0.0.1:0")

func init() {
	datapath.Register("udp", func(c datapath.Config) (datapath.Endpoint, error) {
		if !c.Local.IsValid() {
			c.Local = DefaultLocal
		}
		return Open(c) // datapath.Open turns a failed open's typed nil into nil
	})
}

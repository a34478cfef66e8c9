package udp

import (
	"fmt"
	"net/netip"

	"github.com/cornflakes-go/cornflakes/datapath"
)

// Options are the udp-specific settings passed in datapath.Config.Options
// (as Options or *Options) when opening through the registry.
// The fields mean what the Config fields of the same names mean; the
// common fields (address, pool, batch, payload and segment limits) come
// from datapath.Config.
type Options struct {
	SocketBuffer           int  // SO_SNDBUF/SO_RCVBUF bytes (Config.SocketBuffer)
	ReusePort              bool // SO_REUSEPORT (Config.ReusePort)
	DisableGSO, DisableGRO bool // turn the offloads off (Config.DisableGSO/GRO)
	ZeroCopyMin            int  // MSG_ZEROCOPY for entries of at least this size (Config.ZeroCopyMin)
	ZeroCopyPending        int  // outstanding MSG_ZEROCOPY sends (Config.ZeroCopyPending)
}

// DefaultLocal is the address a registry-opened endpoint binds when
// datapath.Config.Local is not set.
var DefaultLocal = netip.MustParseAddrPort("127.0.0.1:0")

func init() {
	datapath.Register("udp", func(c datapath.Config) (datapath.Endpoint, error) {
		cfg := Config{Addr: c.Local, Pool: c.Pool, Batch: c.Batch, MaxPayload: c.MaxPayload, MaxSegments: c.MaxSegments}
		if !cfg.Addr.IsValid() {
			cfg.Addr = DefaultLocal
		}
		var o Options
		switch v := c.Options.(type) {
		case nil:
		case Options:
			o = v
		case *Options:
			o = *v
		default:
			return nil, fmt.Errorf("%w: Options of type %T, want udp.Options", ErrConfig, c.Options)
		}
		cfg.SocketBuffer, cfg.ReusePort = o.SocketBuffer, o.ReusePort
		cfg.DisableGSO, cfg.DisableGRO = o.DisableGSO, o.DisableGRO
		cfg.ZeroCopyMin, cfg.ZeroCopyPending = o.ZeroCopyMin, o.ZeroCopyPending
		return Open(cfg) // datapath.Open turns a failed open's typed nil into nil
	})
}

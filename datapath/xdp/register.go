package xdp

import (
	"fmt"
	"net/netip"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/driver"
	"github.com/cornflakes-go/cornflakes/mem"
)

func init() {
	datapath.Register("xdp", func(c datapath.Config) (datapath.Endpoint, error) {
		cfg, err := resolve(c)
		if err != nil {
			return nil, err
		}
		if wantsAuto(c, cfg.Options) {
			t, err := AutoTopology()
			if err != nil {
				return nil, err
			}
			return t.Open(c) // datapath.Open turns a failed open's typed nil into nil
		}
		return open(cfg)
	})
}

// config is Open's datapath.Config with the xdp Options resolved.
type config struct {
	Local       netip.AddrPort
	Pool        *mem.Pool
	Batch       int
	MaxPayload  int
	MaxSegments int
	BusyPoll    bool
	Options
}

// resolve turns a datapath.Config into the endpoint's config.
func resolve(c datapath.Config) (config, error) {
	cfg := config{Local: c.Local, Pool: c.Pool, Batch: c.Batch, MaxPayload: c.MaxPayload, MaxSegments: c.MaxSegments, BusyPoll: c.BusyPoll}
	o, ok := driver.OptionsOf[Options](c.Options)
	if !ok {
		return config{}, fmt.Errorf("%w: Options of type %T, want xdp.Options", ErrConfig, c.Options)
	}
	cfg.Options = o
	return cfg, nil
}

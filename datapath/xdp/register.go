package xdp

import (
	"fmt"

	"github.com/cornflakes-go/cornflakes/datapath"
)

func init() {
	datapath.Register("xdp", func(c datapath.Config) (datapath.Endpoint, error) {
		cfg := Config{Local: c.Local, Pool: c.Pool, Batch: c.Batch, MaxPayload: c.MaxPayload, MaxSegments: c.MaxSegments, BusyPoll: c.BusyPoll}
		switch v := c.Options.(type) {
		case nil:
		case Options:
			cfg.Options = v
		case *Options:
			cfg.Options = *v
		default:
			return nil, fmt.Errorf("%w: Options of type %T, want xdp.Options", ErrConfig, c.Options)
		}
		open := Open
		if wantsAuto(c, cfg.Options) {
			t, err := AutoTopology()
			if err != nil {
				return nil, err
			}
			open = t.Open
		}
		return open(cfg) // datapath.Open turns a failed open's typed nil into nil
	})
}

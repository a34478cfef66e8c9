package xdp

import (
	"github.com/cornflakes-go/cornflakes/datapath"
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

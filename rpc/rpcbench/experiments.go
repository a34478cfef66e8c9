package rpcbench

import (
	"fmt"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/rpc"
)

func (b *bench) network() *memnet.Network {
	if b.o.Datapath == "memnet" {
		return memnet.NewNetwork(memnet.NetworkConfig{Seed: 1})
	}
	return nil
}

// rpcRate measures the closed-loop rate of reqType requests.
func (b *bench) rpcRate(kind string, n *memnet.Network, cfg rpc.EndpointConfig, nSess int, reqType uint8, size, window int, lat *[]time.Duration) (float64, error) {
	s, sess, err := newSetup(kind, n, cfg, nSess)
	if err != nil {
		return 0, err
	}
	defer s.close()
	return closedLoop(s.cli, sess, reqType, size, window, b.durFor(size), lat)
}

// durFor is the measurement time for messages of size bytes: 8 MiB
// transfers need longer runs for a stable average of whole messages.
func (b *bench) durFor(size int) time.Duration {
	if size >= 1<<20 && b.dur < 1500*time.Millisecond {
		return 1500 * time.Millisecond
	}
	return b.dur
}

func (b *bench) smallRate() error {
	dp := b.o.Datapath
	r, err := b.rpcRate(dp, b.network(), rpc.EndpointConfig{}, concurrency/rpc.DefaultWindow, reqEcho, smallSize, concurrency, nil)
	if err != nil {
		return err
	}
	b.add("small_rate", "rpc", dp, r, "rps")
	raw, err := rawRate(dp, b.network(), smallSize, concurrency, b.dur, nil)
	if err != nil {
		return err
	}
	b.add("small_rate", "raw", dp, raw, "rps")
	g, err := grpcRate(smallSize, 16, b.dur, nil)
	if err != nil {
		return err
	}
	b.add("small_rate", "grpc", "tcp", g, "rps")
	return nil
}

func (b *bench) latency() error {
	dp := b.o.Datapath
	var lat []time.Duration
	if _, err := b.rpcRate(dp, b.network(), rpc.EndpointConfig{}, 1, reqEcho, smallSize, 1, &lat); err != nil {
		return err
	}
	b.addLatency("rpc", dp, lat)
	lat = lat[:0]
	if _, err := rawRate(dp, b.network(), smallSize, 1, b.dur, &lat); err != nil {
		return err
	}
	b.addLatency("raw", dp, lat)
	lat = lat[:0]
	if _, err := grpcRate(smallSize, 1, b.dur, &lat); err != nil {
		return err
	}
	b.addLatency("grpc", "tcp", lat)
	return nil
}

func (b *bench) addLatency(variant, dp string, lat []time.Duration) {
	b.add("latency_p50", variant, dp, float64(percentile(lat, 0.50))/1e3, "us")
	b.add("latency_p99", variant, dp, float64(percentile(lat, 0.99))/1e3, "us")
}

func gbps(rps float64, size int) float64 { return rps * float64(size) * 8 / 1e9 }

func (b *bench) largeBW() error {
	dp := b.o.Datapath
	for _, v := range []struct {
		name string
		sel  bool
	}{{"rpc", false}, {"sack", true}} {
		r, err := b.rpcRate(dp, b.network(), rpc.EndpointConfig{Selective: v.sel}, 1, reqLarge, largeSize, 1, nil)
		if err != nil {
			return err
		}
		b.add("large_bw", v.name, dp, gbps(r, largeSize), "Gbit/s")
	}
	raw, err := rawBandwidth(dp, b.network(), b.dur)
	if err != nil {
		return err
	}
	b.add("large_bw", "raw", dp, raw, "Gbit/s")
	return nil
}

// lossBW: 8 MB requests on memnet with injected loss, go-back-N vs
// selective retransmission (eRPC Table 4).
func (b *bench) lossBW() error {
	rates := []float64{0, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2}
	for _, p := range rates {
		for _, v := range []struct {
			name string
			sel  bool
		}{{"gobackn", false}, {"sack", true}} {
			n := memnet.NewNetwork(memnet.NetworkConfig{Seed: 7})
			s, sess, err := newSetup("memnet", n, rpc.EndpointConfig{Selective: v.sel}, 1)
			if err != nil {
				return err
			}
			n.SetFaults(memnet.Faults{Loss: p})
			r, err := closedLoop(s.cli, sess, reqLarge, largeSize, 1, b.durFor(largeSize), nil)
			n.SetFaults(memnet.Faults{})
			s.close()
			if err != nil {
				return err
			}
			b.add("loss_bw", fmt.Sprintf("%s/%g", v.name, p), "memnet", gbps(r, largeSize), "Gbit/s")
		}
	}
	return nil
}

// factor: the small-RPC rate with congestion control on, disabling one
// optimization at a time (eRPC Table 3).
func (b *bench) factor() error {
	dp := b.o.Datapath
	on := rpc.CCConfig{Enable: true}
	variants := []struct {
		name    string
		cfg     rpc.EndpointConfig
		reqType uint8
	}{
		{"all", rpc.EndpointConfig{CC: on}, reqEcho},
		{"no_batch_timestamps", rpc.EndpointConfig{CC: rpc.CCConfig{Enable: true, NoBatchTimestamps: true}}, reqEcho},
		{"no_timely_bypass", rpc.EndpointConfig{CC: rpc.CCConfig{Enable: true, NoTimelyBypass: true}}, reqEcho},
		{"no_wheel_bypass", rpc.EndpointConfig{CC: rpc.CCConfig{Enable: true, NoWheelBypass: true}}, reqEcho},
		{"no_zero_copy_rx", rpc.EndpointConfig{CC: on, CopyRequests: true}, reqEcho},
		{"no_prealloc_resp", rpc.EndpointConfig{CC: on}, reqEchoB},
		{"no_cc", rpc.EndpointConfig{}, reqEcho},
	}
	for _, v := range variants {
		r, err := b.rpcRate(dp, b.network(), v.cfg, concurrency/rpc.DefaultWindow, v.reqType, smallSize, concurrency, nil)
		if err != nil {
			return fmt.Errorf("%s: %w", v.name, err)
		}
		b.add("factor", v.name, dp, r, "rps")
	}
	return nil
}

// sessions: the small-RPC rate with many sessions to one server endpoint
// (eRPC §6.3); requests go round robin over the sessions.
func (b *bench) sessions() error {
	dp := b.o.Datapath
	for _, n := range []int{1, 100, 1000, 20000} {
		r, err := b.rpcRate(dp, b.network(), rpc.EndpointConfig{}, n, reqEcho, smallSize, concurrency, nil)
		if err != nil {
			return fmt.Errorf("%d sessions: %w", n, err)
		}
		b.add("sessions", fmt.Sprint(n), dp, r, "rps")
	}
	return nil
}

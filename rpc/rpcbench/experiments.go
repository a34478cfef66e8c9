package rpcbench

import (
	"fmt"
	"runtime"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/internal/stats"
	"github.com/cornflakes-go/cornflakes/rpc"
)

// fabric is the run's datapath for one measurement (a fresh memnet
// network each time).
func (b *bench) fabric() fabric {
	f := fabric{kind: b.o.Datapath, veth: b.veth, space: b.space}
	if f.kind == "memnet" {
		f.net = memnet.NewNetwork(memnet.NetworkConfig{Seed: 1})
	}
	return f
}

// rpcRate measures the closed-loop rate of reqType requests.
// The client endpoint lives on a locked OS thread (the server's is locked
// by newSetup); both busy-poll.
func (b *bench) rpcRate(f fabric, cfg rpc.EndpointConfig, nSess int, reqType uint8, size, window int, lat *[]time.Duration) (float64, error) {
	var r float64
	err := onLockedThread("rpc-client", func() error {
		s, sess, err := newSetup(f, cfg, nSess)
		if err != nil {
			return err
		}
		defer s.close()
		r, err = closedLoop(s.cli, sess, reqType, size, window, b.durFor(size), lat)
		s.stopServer()
		b.sys.collect(s.cliDP, s.srvDP)
		return err
	})
	return r, err
}

// ep is the endpoint configuration of a measurement: cfg, with congestion
// control on when Options.CC asks for it and off otherwise (explicitly:
// the automatic mode would turn it on for xdp's veth links, and every
// measurement names its setting).
func (b *bench) ep(cfg rpc.EndpointConfig) rpc.EndpointConfig {
	if b.o.CC {
		cfg.CC.Enable = true
	} else {
		cfg.CC.Disable = true
	}
	return cfg
}

// durFor is the measurement time for messages of size bytes: 8 MiB
// transfers need longer runs for a stable average of whole messages.
func (b *bench) durFor(size int) time.Duration {
	if size >= 1<<20 && b.dur < 1500*time.Millisecond {
		return 1500 * time.Millisecond
	}
	return b.dur
}

// progress writes a diagnostic line (individual repetitions) to Progress.
func (b *bench) progress(format string, args ...any) {
	if b.o.Progress != nil {
		fmt.Fprintf(b.o.Progress, format, args...)
	}
}

// smallRate: rpc, raw and grpc measured b.reps times, interleaved (rpc,
// raw, grpc, rpc, raw, grpc, ...) so that load from other processes hits
// all of them alike; the medians are recorded.
func (b *bench) smallRate() error {
	dp := b.o.Datapath
	var rs, raws, tys, tss []float64
	gs := make([][]float64, len(grpcVariants))
	for i := 0; i < b.reps; i++ {
		ty, err := b.typedRate(b.fabric(), b.ep(rpc.EndpointConfig{}), concurrency/rpc.DefaultWindow, concurrency, nil) // typed.go
		if err != nil {
			return err
		}
		tys = append(tys, ty)
		if tsys := b.sys; tsys.ok {
			b.progress("  small_rate rep %d syscalls typed: %v\n", i, tsys)
		}
		ts, err := b.typedSyncRate(b.fabric(), b.ep(rpc.EndpointConfig{}), concurrency/rpc.DefaultWindow, concurrency, nil) // typed.go
		if err != nil {
			return err
		}
		tss = append(tss, ts)
		r, err := b.rpcRate(b.fabric(), b.ep(rpc.EndpointConfig{}), concurrency/rpc.DefaultWindow, reqEcho, smallSize, concurrency, nil)
		if err != nil {
			return err
		}
		rsys := b.sys
		var wsys batching
		raw, err := rawRate(b.fabric(), smallSize, concurrency, b.dur, nil, &wsys)
		if err != nil {
			return err
		}
		if rsys.ok {
			b.progress("  small_rate rep %d syscalls rpc: %v\n  small_rate rep %d syscalls raw: %v\n", i, rsys, i, wsys)
		}
		line := ""
		for k, g := range grpcVariants {
			v, err := grpcRate(g.network, smallSize, 16, b.dur, nil)
			if err != nil {
				return fmt.Errorf("%s: %w", g.variant, err)
			}
			gs[k] = append(gs[k], v)
			line += fmt.Sprintf(" %s %.0f", g.variant, v)
		}
		l, _ := loadAvg()
		b.progress("  small_rate rep %d: rpc %.0f raw %.0f%s rps (load %.2f)\n", i, r, raw, line, l)
		rs, raws = append(rs, r), append(raws, raw)
	}
	b.add("small_rate", "rpc", dp, stats.Median(rs), "rps")
	b.add("small_rate", "raw", dp, stats.Median(raws), "rps")
	for k, g := range grpcVariants {
		b.add("small_rate", g.variant, g.datapath, stats.Median(gs[k]), "rps")
	}
	b.add("small_rate", "typed", dp, stats.Median(tys), "rps")
	b.add("small_rate", "typed-sync", dp, stats.Median(tss), "rps")
	return nil
}

// latency: one request in flight, interleaved repetitions as smallRate;
// the medians of each repetition's p50 and p99 are recorded.
func (b *bench) latency() error {
	dp := b.o.Datapath
	var p50 = map[string][]float64{}
	var p99 = map[string][]float64{}
	var lat []time.Duration
	note := func(v string) {
		p50[v] = append(p50[v], float64(percentile(lat, 0.50))/1e3)
		p99[v] = append(p99[v], float64(percentile(lat, 0.99))/1e3)
		lat = lat[:0]
	}
	for i := 0; i < b.reps; i++ {
		if _, err := b.typedRate(b.fabric(), b.ep(rpc.EndpointConfig{}), 1, 1, &lat); err != nil { // typed.go
			return err
		}
		note("typed")
		if tsys := b.sys; tsys.ok {
			b.progress("  latency rep %d syscalls typed: %v\n", i, tsys)
		}
		if _, err := b.typedSyncRate(b.fabric(), b.ep(rpc.EndpointConfig{}), 1, 1, &lat); err != nil { // typed.go
			return err
		}
		note("typed-sync")
		if _, err := b.rpcRate(b.fabric(), b.ep(rpc.EndpointConfig{}), 1, reqEcho, smallSize, 1, &lat); err != nil {
			return err
		}
		note("rpc")
		rsys := b.sys
		var wsys batching
		if _, err := rawRate(b.fabric(), smallSize, 1, b.dur, &lat, &wsys); err != nil {
			return err
		}
		note("raw")
		if rsys.ok {
			b.progress("  latency rep %d syscalls rpc: %v\n  latency rep %d syscalls raw: %v\n", i, rsys, i, wsys)
		}
		for _, g := range grpcVariants {
			if _, err := grpcRate(g.network, smallSize, 1, b.dur, &lat); err != nil {
				return fmt.Errorf("%s: %w", g.variant, err)
			}
			note(g.variant)
		}
		l, _ := loadAvg()
		b.progress("  latency rep %d: p50 rpc %.2f typed %.2f raw %.2f grpc %.1f grpc-uds %.1f us (load %.2f)\n", i, p50["rpc"][i], p50["typed"][i], p50["raw"][i], p50["grpc"][i], p50["grpc-uds"][i], l)
	}
	for _, v := range []string{"rpc", "raw", "typed", "typed-sync"} {
		b.add("latency_p50", v, dp, stats.Median(p50[v]), "us")
		b.add("latency_p99", v, dp, stats.Median(p99[v]), "us")
	}
	for _, g := range grpcVariants {
		b.add("latency_p50", g.variant, g.datapath, stats.Median(p50[g.variant]), "us")
		b.add("latency_p99", g.variant, g.datapath, stats.Median(p99[g.variant]), "us")
	}
	return nil
}

func gbps(rps float64, size int) float64 { return rps * float64(size) * 8 / 1e9 }

// largeBW: 8 MiB requests (go-back-N and selective retransmission) next
// to the raw datapath's bandwidth, interleaved repetitions, medians.
func (b *bench) largeBW() error {
	dp := b.o.Datapath
	vals := map[string][]float64{}
	for i := 0; i < b.reps; i++ {
		for _, v := range []struct {
			name string
			sel  bool
		}{{"rpc", false}, {"sack", true}} {
			r, err := b.rpcRate(b.fabric(), b.ep(rpc.EndpointConfig{Selective: v.sel}), 1, reqLarge, largeSize, 1, nil)
			if err != nil {
				return err
			}
			vals[v.name] = append(vals[v.name], gbps(r, largeSize))
		}
		raw, err := rawBandwidth(b.fabric(), b.dur)
		if err != nil {
			return err
		}
		vals["raw"] = append(vals["raw"], raw)
		l, _ := loadAvg()
		b.progress("  large_bw rep %d: rpc %.2f sack %.2f raw %.2f Gbit/s (load %.2f)\n", i, vals["rpc"][i], vals["sack"][i], raw, l)
	}
	for _, v := range []string{"rpc", "sack", "raw"} {
		b.add("large_bw", v, dp, stats.Median(vals[v]), "Gbit/s")
	}
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
			var r float64
			err := onLockedThread("rpc-client", func() error {
				s, sess, err := newSetup(fabric{kind: "memnet", net: n}, b.ep(rpc.EndpointConfig{Selective: v.sel}), 1)
				if err != nil {
					return err
				}
				n.SetFaults(memnet.Faults{Loss: p})
				r, err = closedLoop(s.cli, sess, reqLarge, largeSize, 1, b.durFor(largeSize), nil)
				n.SetFaults(memnet.Faults{})
				s.close()
				return err
			})
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
	variants := []factorVariant{
		{"all", rpc.EndpointConfig{CC: on}, reqEcho},
		{"no_batch_timestamps", rpc.EndpointConfig{CC: rpc.CCConfig{Enable: true, NoBatchTimestamps: true}}, reqEcho},
		{"no_timely_bypass", rpc.EndpointConfig{CC: rpc.CCConfig{Enable: true, NoTimelyBypass: true}}, reqEcho},
		{"no_wheel_bypass", rpc.EndpointConfig{CC: rpc.CCConfig{Enable: true, NoWheelBypass: true}}, reqEcho},
		{"no_zero_copy_rx", rpc.EndpointConfig{CC: on, CopyRequests: true}, reqEcho},
		{"no_prealloc_resp", rpc.EndpointConfig{CC: on}, reqEchoB},
		{"no_cc", rpc.EndpointConfig{CC: rpc.CCConfig{Disable: true}}, reqEcho},
		{"no_early_flush", rpc.EndpointConfig{CC: on, FlushEvery: -1}, reqEcho},
	}
	// Interleaved repetitions, each starting one variant later, and the
	// median of each variant: run once each in sequence, the variants
	// read the VM's drift and the process's warm-up as much as their
	// optimization (the first one ran at 0.4x the others in session 11).
	rates := make([][]float64, len(variants))
	for rep := 0; rep < b.reps; rep++ {
		for k := range variants {
			i := (rep + k) % len(variants)
			v := variants[i]
			r, err := b.rpcRate(b.fabric(), v.cfg, concurrency/rpc.DefaultWindow, v.reqType, smallSize, concurrency, nil)
			if err != nil {
				return fmt.Errorf("%s: %w", v.name, err)
			}
			rates[i] = append(rates[i], r)
		}
		b.progress("  factor rep %d: %s\n", rep, factorLine(variants, rates, rep))
	}
	for i, v := range variants {
		b.add("factor", v.name, dp, stats.Median(rates[i]), "rps")
	}
	return nil
}

// factorVariant is one configuration of the factor analysis.
type factorVariant struct {
	name    string
	cfg     rpc.EndpointConfig
	reqType uint8
}

// factorLine is one repetition's rates, in the variants' order.
func factorLine(variants []factorVariant, rates [][]float64, rep int) string {
	var out string
	for i, v := range variants {
		out += fmt.Sprintf("%s %.0fk ", v.name, rates[i][rep]/1e3)
	}
	return out
}

// sessions: the small-RPC rate with many sessions to one server endpoint
// (eRPC §6.3). One client endpoint connects the largest count of sessions
// to one server endpoint once; each repetition then spreads the requests
// round robin over the first n of them, for every n in turn (interleaved,
// median of the repetitions, like small_rate), so that the session count
// is the only thing that differs between the variants. The offered load
// is the same for every n: rpc.DefaultWindow requests in flight, what one
// session's slots carry without a backlog (with more, the one-session
// variant measured its backlog, not the cost of sessions).
func (b *bench) sessions() error {
	dp := b.o.Datapath
	counts := []int{1, 100, 1000, 20000}
	rates := make([][]float64, len(counts))
	err := onLockedThread("rpc-client", func() error {
		var before runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		t0 := time.Now()
		most := counts[len(counts)-1]
		s, sess, err := newSetup(b.fabric(), b.ep(rpc.EndpointConfig{}), most)
		if err != nil {
			return err
		}
		defer s.close()
		var after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.progress("  sessions %d: connected in %v, heap +%.1f MiB (both endpoints, before first use)\n",
			len(sess), time.Since(t0).Round(time.Millisecond), float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20))
		for rep := 0; rep < b.reps; rep++ {
			for i, n := range counts {
				r, err := closedLoop(s.cli, sess[:n], reqEcho, smallSize, sessionsInFlight, b.dur, nil)
				if err != nil {
					return fmt.Errorf("%d sessions: %w", n, err)
				}
				rates[i] = append(rates[i], r)
				l, _ := loadAvg()
				b.progress("  sessions rep %d: %d sessions %.0f rps (load %.2f)\n", rep, n, r, l)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.progress("  sessions %d: heap +%.1f MiB after every session carried requests\n",
			len(sess), float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20))
		return nil
	})
	if err != nil {
		return err
	}
	for i, n := range counts {
		b.add("sessions", fmt.Sprint(n), dp, stats.Median(rates[i]), "rps")
	}
	return nil
}

// sessionsInFlight is the sessions test's offered load: one session's
// slots.
const sessionsInFlight = rpc.DefaultWindow

package main

import (
	"fmt"
	"io"

	"github.com/cornflakes-go/cornflakes/metrics"
	"github.com/prometheus/client_golang/prometheus"
)

// counterFuncs are the counters a server command exports next to the
// process's (metrics.New): name, help and a reading of its Stats.
type counterFunc struct {
	name, help string
	read       func() uint64
}

// startMetrics serves Prometheus metrics at http://addr/metrics for a
// server command (--metrics ADDR): the process's (Go runtime, silent
// copies) and the server's counters. Empty addr: nothing. The returned
// function stops the endpoint.
func startMetrics(cmd, addr string, stderr io.Writer, counters []counterFunc) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	m := metrics.New()
	for _, c := range counters {
		read := c.read
		m.Registry().MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: c.name, Help: c.help},
			func() float64 { return float64(read()) }))
	}
	s, err := m.Listen(addr)
	if err != nil {
		return nil, fmt.Errorf("%s: --metrics: %w", cmd, err)
	}
	fmt.Fprintf(stderr, "%s: metrics at http://%s/metrics\n", cmd, s.Addr())
	return func() { _ = s.Close() }, nil
}

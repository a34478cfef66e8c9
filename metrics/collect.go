package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// endpointCollector reads the endpoints' and pools' counters at each scrape.
type endpointCollector Metrics

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	descTxPackets   = desc("cornflakes_rpc_tx_packets_total", "Packets the endpoint's datapath sent.", "endpoint")
	descRxPackets   = desc("cornflakes_rpc_rx_packets_total", "Packets the endpoint's datapath received.", "endpoint")
	descRetransmits = desc("cornflakes_rpc_retransmits_total", "Packets re-sent by RTO rollback or fast retransmission.", "endpoint")
	descRTOs        = desc("cornflakes_rpc_rtos_total", "Slots rolled back by the loss scan.", "endpoint")
	descDrops       = desc("cornflakes_rpc_dropped_packets_total", "Packets dropped: malformed, out of order, or by the datapath.", "endpoint", "reason")
	descZCBytes     = desc("cornflakes_datapath_zerocopy_bytes_total", "Bytes sent zero-copy (scatter-gather entries from registered memory).", "endpoint")
	descZCEntries   = desc("cornflakes_datapath_zerocopy_entries_total", "Scatter-gather entries sent zero-copy.", "endpoint")
	descCopyBytes   = desc("cornflakes_datapath_copied_bytes_total", "Bytes copied into transmit buffers.", "endpoint")
	descCopyEntries = desc("cornflakes_datapath_copied_entries_total", "Entries copied into transmit buffers.", "endpoint")
	descHandlers    = desc("cornflakes_rpc_handlers_total", "Handler invocations (dispatch and worker).", "endpoint")
	descSessions    = desc("cornflakes_rpc_server_sessions", "Server sessions now.", "endpoint")
	descPoolInUse   = desc("cornflakes_pool_items_in_use", "Items of the pool allocated now.", "pool")
	descPoolUsed    = desc("cornflakes_pool_used_bytes", "Bytes of the pool's items allocated now.", "pool")
	descPoolBytes   = desc("cornflakes_pool_region_bytes", "Bytes of the pool's regions (committed or decommitted).", "pool")
	descPoolExh     = desc("cornflakes_pool_exhaustions_total", "Allocations that failed because the pool could not grow.", "pool")
)

func (c *endpointCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descTxPackets, descRxPackets, descRetransmits, descRTOs, descDrops,
		descZCBytes, descZCEntries, descCopyBytes, descCopyEntries, descHandlers, descSessions,
		descPoolInUse, descPoolUsed, descPoolBytes, descPoolExh} {
		ch <- d
	}
}

func (c *endpointCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	eps := append([]namedEndpoint(nil), c.eps...)
	pools := append(c.pools[:0:0], c.pools...)
	c.mu.Unlock()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, e := range eps {
		st := e.ep.Stats()
		n := e.name
		counter(descTxPackets, st.Datapath.TxPackets, n)
		counter(descRxPackets, st.Datapath.RxPackets, n)
		counter(descRetransmits, st.Proto.Retransmits, n)
		counter(descRTOs, st.Proto.RTOs, n)
		counter(descDrops, st.Proto.DropBad, n, "malformed")
		counter(descDrops, st.Proto.DropOrder, n, "order")
		counter(descDrops, st.Datapath.Drops, n, "datapath")
		counter(descZCBytes, st.Datapath.ZeroCopyBytes, n)
		counter(descZCEntries, st.Datapath.ZeroCopyEntries, n)
		counter(descCopyBytes, st.Datapath.CopiedBytes, n)
		counter(descCopyEntries, st.Datapath.CopiedEntries, n)
		counter(descHandlers, st.Handlers, n)
		gauge(descSessions, float64(st.ServerSessions), n)
	}
	for _, p := range pools {
		st := p.Stats()
		gauge(descPoolInUse, float64(st.InUse), st.Name)
		gauge(descPoolUsed, float64(st.UsedBytes), st.Name)
		gauge(descPoolBytes, float64(st.Bytes), st.Name)
		counter(descPoolExh, st.Exhaustions, st.Name)
	}
}

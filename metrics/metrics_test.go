package metrics_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
	"github.com/cornflakes-go/cornflakes/metrics"
	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/rpc/rpcbench/typedpb"
	"github.com/cornflakes-go/cornflakes/service"
	"github.com/cornflakes-go/cornflakes/wire"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type echo struct {
	typedpb.UnimplementedEchoServer
}

func (echo) Echo(ctx context.Context, req, resp *typedpb.Blob) error {
	if len(req.GetData()) == 0 {
		return service.Errorf(service.InvalidArgument, "empty")
	}
	resp.SetData(req.GetData())
	return nil
}

// endpoint makes an endpoint with its own pool on net.
func endpoint(t *testing.T, net *memnet.Network, name string, id uint8) (*rpc.Nexus, *rpc.Endpoint) {
	t.Helper()
	// Concurrent: the scrape reads the pool's accounting from its own
	// goroutine while the endpoint runs (AddPool exports only such pools).
	pool := memtest.NewPool(t, mem.PoolConfig{Name: name, Concurrent: true})
	nx, err := rpc.NewNexus(rpc.NexusConfig{FailureTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nx.Close() })
	dp, err := net.Open(datapath.Config{Pool: pool}, memnet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ep, err := nx.NewEndpoint(rpc.EndpointConfig{ID: id, Datapath: dp, Pool: pool, NoReserve: true})
	if err != nil {
		t.Fatal(err)
	}
	return nx, ep
}

// scrape fetches url and returns its samples, "name{labels}" -> value.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s %s", url, resp.Status, b)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("bad sample %q", line)
		}
		out[line[:i]] = v
	}
	return out
}

// TestScrape: calls through a typed service with observers on both sides,
// scraped over HTTP on loopback: calls by code, the duration histograms,
// endpoint and pool counters, silent copies.
func TestScrape(t *testing.T) {
	m := metrics.New()
	net := memnet.NewNetwork(memnet.NetworkConfig{Seed: 1, Faults: memnet.Faults{Loss: 0.05}})
	srvNx, srvEp := endpoint(t, net, "srv", 1)
	srv, err := service.NewServer(srvNx, service.WithServerObserver(m))
	if err != nil {
		t.Fatal(err)
	}
	if err := typedpb.RegisterEchoServer(srv, echo{}); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srvEp.Run(ctx) }()
	defer func() {
		stop()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Error(err)
		}
		_ = srvEp.Close()
	}()
	_, cliEp := endpoint(t, net, "cli", 2)
	defer cliEp.Close()
	dctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := service.Dial(dctx, cliEp, srvNx.Addr(), 1, service.WithClientObserver(m))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m.AddEndpoint("server", srvEp)
	m.AddEndpoint("client", cliEp)

	cl := typedpb.NewEchoClient(c)
	a := wire.NewArena()
	defer a.Reset()
	const ok = 200
	big := make([]byte, 4096) // heap memory, over the threshold: a silent copy
	for i := 0; i < ok; i++ {
		req := typedpb.NewBlob(a)
		req.SetData(big[:32+i])
		if _, err := cl.Echo(dctx, a, req); err != nil {
			t.Fatal(err)
		}
		_ = a.Reset()
	}
	req := typedpb.NewBlob(a)
	req.SetData(big)
	if _, err := cl.Echo(dctx, a, req); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Echo(dctx, a, typedpb.NewBlob(a)); service.CodeOf(err) != service.InvalidArgument {
		t.Fatalf("got %v, want InvalidArgument", err)
	}

	s, err := m.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}()
	got := scrape(t, "http://"+s.Addr().String()+"/metrics")
	lbl := `rpc_method="Echo",rpc_service="cornflakes.rpcbench.Echo",rpc_status_code=`
	for _, w := range []struct {
		sample string
		want   float64
	}{
		{`cornflakes_rpc_calls_total{` + lbl + `"OK",side="client"}`, ok + 1},
		{`cornflakes_rpc_calls_total{` + lbl + `"OK",side="server"}`, ok + 1},
		{`cornflakes_rpc_calls_total{` + lbl + `"InvalidArgument",side="client"}`, 1},
		{`cornflakes_rpc_calls_total{` + lbl + `"InvalidArgument",side="server"}`, 1},
		{`rpc_client_call_duration_seconds_count{` + lbl + `"OK"}`, ok + 1},
		{`rpc_server_call_duration_seconds_count{` + lbl + `"InvalidArgument"}`, 1},
	} {
		if v, ok := got[w.sample]; !ok || v != w.want {
			t.Errorf("%s = %v (present %v), want %v", w.sample, v, ok, w.want)
		}
	}
	for _, name := range []string{
		`cornflakes_rpc_tx_packets_total{endpoint="client"}`,
		`cornflakes_rpc_rx_packets_total{endpoint="server"}`,
		`cornflakes_datapath_copied_bytes_total{endpoint="client"}`,
		`cornflakes_pool_region_bytes{pool="srv"}`,
		`cornflakes_wire_silent_copies_total`,
		`cornflakes_wire_silent_copy_bytes_total`,
	} {
		if v := got[name]; v <= 0 {
			t.Errorf("%s = %v, want > 0", name, v)
		}
	}
	// 5 % loss over 200 calls: the client retransmitted (seeded network).
	if _, ok := got[`cornflakes_rpc_retransmits_total{endpoint="client"}`]; !ok {
		t.Error("no retransmission counter")
	}
	if v := got[`cornflakes_pool_items_in_use{pool="cli"}`]; v < 0 {
		t.Errorf("pool in use %v", v)
	}
}

// TestAddPoolSingleGoroutine: a single-goroutine pool is not exported (the
// scrape could not read it without racing its owner); a Concurrent one is,
// once.
func TestAddPoolSingleGoroutine(t *testing.T) {
	m := metrics.New()
	single := memtest.NewPool(t, mem.PoolConfig{Name: "single"})
	conc := memtest.NewPool(t, mem.PoolConfig{Name: "conc", Concurrent: true})
	if m.AddPool(single) {
		t.Error("AddPool accepted a single-goroutine pool")
	}
	for i := 0; i < 2; i++ {
		if !m.AddPool(conc) {
			t.Errorf("AddPool #%d refused a Concurrent pool", i+1)
		}
	}
	if m.AddPool(nil) {
		t.Error("AddPool accepted nil")
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	if strings.Contains(body, `pool="single"`) {
		t.Error("single-goroutine pool exported")
	}
	if n := strings.Count(body, `cornflakes_pool_region_bytes{pool="conc"}`); n != 1 {
		t.Errorf("concurrent pool exported %d times, want 1", n)
	}
}

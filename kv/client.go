package kv

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/internal/loadgen"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/workload"
)

// ClientConfig configures a Client.
type ClientConfig struct {
	// Server is the server's Nexus address (Server.Addr). Required.
	Server netip.AddrPort
	// Endpoints is the number of server endpoints (default 1); requests go
	// to the endpoint owning their first key (ShardOf).
	Endpoints int
	// Sessions is the number of RPC sessions each connection opens to
	// each server endpoint (default 1, at most MaxSessions). A session
	// holds rpc.DefaultWindow requests in flight (more wait in its
	// backlog); with k sessions one connection, one RPC endpoint and one
	// event-loop iteration per poll carry k times as many, and Send puts
	// each request on the session of its endpoint with the fewest in
	// flight. `cornflakes bench --sessions` (kvbench.BenchConfig.Sessions)
	// uses it to keep a busy server fed from one connection instead of
	// several polled in turn.
	Sessions int
	// Datapath is "udp" (default) or "memnet"; Memnet the network for memnet.
	Datapath string
	Memnet   *memnet.Network
	// XDP is the AF_XDP topology of Datapath "xdp" (nil: the process-wide
	// automatic one, datapath.Open("xdp") with datapath/xdp linked); it
	// must be the server's when the server runs in the same process.
	XDP XDPTopology
	// Local is the IP the client binds (default 127.0.0.1).
	Local netip.Addr
	// Threshold overrides the hybrid Cornflakes codecs' copy threshold for
	// request values (0: the datapath's, datapath.HybridThreshold).
	Threshold int
	// ConnectTimeout bounds Dial's session handshakes (default 5s).
	ConnectTimeout time.Duration
	// RPC tunes the client endpoints (Datapath and ID are set by Dial).
	RPC rpc.EndpointConfig
	// Nexus tunes the client's Nexus (ControlAddr is set from Local;
	// FailureTimeout defaults to DefaultFailureTimeout).
	Nexus rpc.NexusConfig
}

// Client owns the client-side Nexus and dials connections (one per load
// generator goroutine), each with its own RPC endpoint.
type Client struct {
	cfg   ClientConfig
	nx    *rpc.Nexus
	mu    sync.Mutex
	ids   [256]bool
	pools map[int]*connPools // by load-generator client index (Target)
	// transport sums the counters of the closed connections (Transport).
	transport loadgen.TransportStats
}

// connPools is the registered memory of the connections a Target dials
// for one load-generator client, one connection at a time: the datapath's
// buffers and the RPC endpoint's. It outlives the connections so that
// only the first pays for growing it. A pool commits (and mlocks) a
// 2 MiB region the first time each size class is used, which took 8-14 ms
// per region on the benchmark VM: with a fresh pool per connection, every
// load point spent its first half second stalling its own event loop, a
// few times per point, and those stalls alone put half of a 2000 req/s
// point's requests over 500 µs into its p99 (docs/PERFORMANCE.md §5,
// session 4).
type connPools struct {
	client  int // the load-generator client index (Client.pools key)
	dp, rpc *mem.Pool
	busy    bool
}

// MaxSessions is the largest ClientConfig.Sessions.
const MaxSessions = 64

// ErrTooManyConns is returned by Dial when all 255 endpoint ids are in use.
var ErrTooManyConns = errors.New("kv: too many connections on one client")

// NewClient opens the client's Nexus.
func NewClient(cfg ClientConfig) (*Client, error) {
	if !cfg.Server.IsValid() {
		return nil, fmt.Errorf("kv: ClientConfig.Server is required")
	}
	if cfg.Endpoints <= 0 {
		cfg.Endpoints = 1
	}
	if cfg.Sessions <= 0 {
		cfg.Sessions = 1
	}
	if cfg.Sessions > MaxSessions {
		return nil, fmt.Errorf("kv: ClientConfig.Sessions %d (want 1..%d)", cfg.Sessions, MaxSessions)
	}
	if !cfg.Local.IsValid() {
		cfg.Local = netip.MustParseAddr("127.0.0.1")
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = 5 * time.Second
	}
	nc := cfg.Nexus
	nc.ControlAddr = netip.AddrPortFrom(cfg.Local, 0)
	if nc.FailureTimeout <= 0 {
		nc.FailureTimeout = DefaultFailureTimeout
	}
	nx, err := rpc.NewNexus(nc)
	if err != nil {
		return nil, err
	}
	return &Client{cfg: cfg, nx: nx}, nil
}

// Close closes the Nexus and the pools the Target's connections kept
// (close the connections first).
func (c *Client) Close() error {
	errs := []error{c.nx.Close()}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, cp := range c.pools {
		if cp.busy {
			errs = append(errs, fmt.Errorf("kv: client %d's connection is still open", i))
			continue
		}
		errs = append(errs, cp.dp.Close(), cp.rpc.Close())
		delete(c.pools, i)
	}
	return errors.Join(errs...)
}

// Target returns a loadgen.Target dialing one connection with codec per
// client goroutine.
func (c *Client) Target(codec Codec) loadgen.Target {
	return loadgen.TargetFunc(func(i int) (loadgen.Conn, error) { return c.dial(codec, i) })
}

// Conn is one client connection: an RPC endpoint with one session per
// server endpoint, speaking one codec. It implements loadgen.Conn and is used
// by one goroutine. Send serializes the request and enqueues it with a
// preallocated continuation for its slot (loadgen.SlotOf); Poll runs the
// endpoint loop once and the continuations decode the responses and
// deliver them.
type Conn struct {
	cl     *Client
	pools  *connPools // kept by the client across connections (nil: the endpoints' own)
	id     uint8
	ep     *rpc.Endpoint
	dp     datapath.Endpoint
	sess   []rpc.Session // Sessions per server endpoint, endpoint by endpoint
	inSess []int32       // requests in flight per session (by index in sess)
	perEP  int           // ClientConfig.Sessions
	codec  Codec
	enc    codec
	dec    codec
	sdec   segDecoder // dec, when it decodes responses received in place (else nil)
	slots  []connSlot
	conts  []func(*rpc.Response)
	resp   workload.Response
	pend   []pending
	fn     func(uint64, *workload.Response)
	n      int
	busy   int // requests in flight
	errs   uint64
	closed bool
	// LastError is the most recent transport or decoding error of a
	// request delivered as StatusError.
	LastError error
}

type connSlot struct {
	id   uint64
	sess int32 // index in Conn.sess
	op   workload.Op
	busy bool
}

type pending struct {
	slot int
	buf  mem.Buf
	err  error
}

// Dial opens a connection speaking codec and connects it to every server
// endpoint.
func (c *Client) Dial(codec Codec) (_ *Conn, err error) { return c.dial(codec, -1) }

// poolsOf returns the kept pools of load-generator client i, creating them
// on first use, or nil ones (each endpoint makes its own) when i < 0, the
// previous connection of client i is still open, the datapath is AF_XDP
// (its UMEM) or the configuration names the RPC endpoints' pool.
func (c *Client) poolsOf(i int) (*connPools, error) {
	if i < 0 || c.cfg.Datapath == DatapathXDP || c.cfg.RPC.Pool != nil {
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cp := c.pools[i]; cp != nil {
		if cp.busy {
			return nil, nil
		}
		cp.busy = true
		return cp, nil
	}
	dp, err := mem.NewPool(mem.PoolConfig{Name: fmt.Sprintf("kv client %d datapath", i)})
	if err != nil {
		return nil, err
	}
	rp, err := mem.NewPool(mem.PoolConfig{Name: fmt.Sprintf("kv client %d rpc", i)})
	if err != nil {
		_ = dp.Close()
		return nil, err
	}
	if c.pools == nil {
		c.pools = map[int]*connPools{}
	}
	cp := &connPools{client: i, dp: dp, rpc: rp, busy: true}
	c.pools[i] = cp
	return cp, nil
}

// takeID reserves a free endpoint id of the client's Nexus.
func (c *Client) takeID() (uint8, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := 1; i < 256; i++ {
		if !c.ids[i] {
			c.ids[i] = true
			return uint8(i), nil
		}
	}
	return 0, ErrTooManyConns
}

// releaseID frees an endpoint id takeID reserved.
func (c *Client) releaseID(id uint8) {
	c.mu.Lock()
	c.ids[id] = false
	c.mu.Unlock()
}

func (c *Client) dial(codec Codec, client int) (_ *Conn, err error) {
	if err := codec.valid(); err != nil {
		return nil, err
	}
	id, err := c.takeID()
	if err != nil {
		return nil, err
	}
	cn := &Conn{cl: c, id: id, codec: codec}
	defer func() {
		if err != nil {
			_ = cn.Close()
		}
	}()
	if cn.pools, err = c.poolsOf(client); err != nil {
		return nil, err
	}
	var dpPool *mem.Pool
	ec := c.cfg.RPC
	if cn.pools != nil {
		dpPool, ec.Pool = cn.pools.dp, cn.pools.rpc
	}
	dp, err := openDatapath(c.cfg.Datapath, c.cfg.Local, c.cfg.Memnet, c.cfg.XDP, dpPool, nil)
	if err != nil {
		return nil, err
	}
	ec.ID, ec.Datapath = uint8(id), dp
	cn.dp = dp
	if cn.enc, err = newCodecOn(codec, dp, c.cfg.Threshold); err != nil {
		_ = dp.Close()
		return nil, err
	}
	cn.dec, _ = newCodecOn(codec, dp, c.cfg.Threshold)
	cn.sdec, _ = cn.dec.(segDecoder)
	var connErr error
	ec.OnSession = func(s rpc.Session, ev rpc.SessionEvent, err error) {
		if ev == rpc.ConnectFailed && connErr == nil {
			connErr = fmt.Errorf("kv: connect: %w", err)
		}
	}
	if cn.ep, err = c.nx.NewEndpoint(ec); err != nil {
		_ = dp.Close()
		return nil, err
	}
	cn.perEP = c.cfg.Sessions
	for i := 0; i < c.cfg.Endpoints; i++ {
		for range cn.perEP {
			s, err := cn.ep.Connect(c.cfg.Server, uint8(FirstEndpointID+i))
			if err != nil {
				return nil, err
			}
			cn.sess = append(cn.sess, s)
		}
	}
	cn.inSess = make([]int32, len(cn.sess))
	deadline := time.Now().Add(c.cfg.ConnectTimeout)
	for _, s := range cn.sess {
		for !cn.ep.IsConnected(s) {
			if connErr != nil {
				return nil, connErr
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("kv: connect to %v: timed out after %v", c.cfg.Server, c.cfg.ConnectTimeout)
			}
			if err := cn.ep.RunOnce(); err != nil {
				return nil, err
			}
		}
	}
	return cn, nil
}

// grow makes room for slot (allocation only while the in-flight window grows).
func (c *Conn) grow(slot int) {
	for len(c.slots) <= slot {
		i := len(c.slots)
		c.slots = append(c.slots, connSlot{})
		c.conts = append(c.conts, func(r *rpc.Response) { c.complete(i, r) })
	}
}

// Send serializes req and enqueues it (see loadgen.Conn). A full session
// backlog is reported as loadgen.ErrBusy.
func (c *Conn) Send(id uint64, req *workload.Request) error {
	if c.closed {
		return rpc.ErrClosed
	}
	slot := loadgen.SlotOf(id)
	c.grow(slot)
	if c.slots[slot].busy {
		return fmt.Errorf("kv: slot %d already in flight", slot)
	}
	msg, err := c.enc.encodeRequest(req, c.ep.Pool())
	if err != nil {
		c.enc.done()
		return err
	}
	si := c.session(req)
	c.slots[slot] = connSlot{id: id, sess: int32(si), op: req.Op, busy: true}
	c.busy++
	c.inSess[si]++
	err = c.ep.Enqueue(c.sess[si], ReqType(c.codec, req.Op), msg.msg(), c.conts[slot])
	c.enc.done()
	if err != nil {
		c.slots[slot].busy = false
		c.busy--
		c.inSess[si]--
		if errors.Is(err, rpc.ErrBacklogFull) {
			return fmt.Errorf("%w: %v", loadgen.ErrBusy, err)
		}
		return err
	}
	return nil
}

// session returns the index in c.sess of the session req goes on: among
// the sessions to the server endpoint owning its first key, the one with
// the fewest requests in flight (the first of them on a tie).
func (c *Conn) session(req *workload.Request) int {
	base := 0
	if n := len(c.sess) / c.perEP; n > 1 && len(req.Keys) > 0 {
		base = ShardOf(req.Keys[0], n) * c.perEP
	}
	if c.perEP == 1 {
		return base
	}
	in := c.inSess[base : base+c.perEP]
	best, least := 0, in[0]
	for i, n := range in[1:] {
		if n < least {
			best, least = i+1, n
		}
	}
	return base + best
}

// BeginSends implements loadgen.Batcher: the Send calls until EndSends queue
// their requests, which EndSends sends together (rpc.Endpoint.BeginBatch).
func (c *Conn) BeginSends() error {
	if c.closed {
		return rpc.ErrClosed
	}
	return c.ep.BeginBatch()
}

// EndSends implements loadgen.Batcher: it sends the requests queued since
// BeginSends (rpc.Endpoint.EndBatch).
func (c *Conn) EndSends() error {
	if c.closed {
		return rpc.ErrClosed
	}
	return c.ep.EndBatch()
}

// complete is the continuation of slot's request.
func (c *Conn) complete(slot int, r *rpc.Response) {
	if !c.slots[slot].busy {
		return
	}
	if c.fn == nil {
		// Completed outside Poll (e.g. failed during Enqueue or Close):
		// keep it for the next Poll.
		var b mem.Buf
		if r.Err == nil {
			b = r.Retain()
		}
		c.pend = append(c.pend, pending{slot: slot, buf: b, err: r.Err})
		return
	}
	if r.Err == nil {
		if segs, hold := r.Segments(); segs != nil {
			if sd := c.sdec; sd != nil {
				c.finishWith(slot, nil, segs, hold, sd, nil)
				return
			}
		}
	}
	c.finish(slot, r.Data(), r.Err)
}

func (c *Conn) finish(slot int, data []byte, err error) {
	c.finishWith(slot, data, nil, mem.Buf{}, nil, err)
}

// finishWith decodes and delivers slot's response: data, or segs (and
// hold) through sd when the response was received in place.
func (c *Conn) finishWith(slot int, data []byte, segs [][]byte, hold mem.Buf, sd segDecoder, err error) {
	st := &c.slots[slot]
	st.busy = false
	c.busy--
	c.inSess[st.sess]--
	resp := &c.resp
	if err == nil {
		if sd != nil {
			err = sd.decodeResponseSegs(st.op, segs, hold, resp)
		} else {
			err = c.dec.decodeResponse(st.op, data, resp)
		}
	}
	if err != nil {
		resp.Status = workload.StatusError
		resp.Values = resp.Values[:0]
		c.errs++
		c.LastError = err
	}
	c.fn(st.id, resp)
	c.n++
	c.dec.done()
	clear(resp.Values)
	resp.Values = resp.Values[:0]
}

// Poll runs the endpoint loop once and delivers completed responses.
func (c *Conn) Poll(deliver func(id uint64, resp *workload.Response)) (int, error) {
	if c.closed {
		return 0, rpc.ErrClosed
	}
	c.fn, c.n = deliver, 0
	defer func() { c.fn = nil }()
	for i := range c.pend {
		p := c.pend[i]
		c.pend[i] = pending{}
		c.finish(p.slot, p.buf.Bytes(), p.err)
		if !p.buf.IsZero() {
			_ = p.buf.Release()
		}
	}
	c.pend = c.pend[:0]
	if c.busy == 0 {
		// Nothing in flight: skip the receive syscall. The generator polls
		// in a loop between sends, and on a small machine an idle client
		// spinning in recvmmsg takes the core the server needs.
		return c.n, nil
	}
	err := c.ep.RunOnce()
	return c.n, err
}

// Wait blocks until a packet may have arrived for the connection or
// timeout has passed (loadgen.Waiter): the load generator calls it instead of
// spinning when its next send is far away and requests are in flight, so an
// idle client leaves the core to the server. It returns at once when
// nothing is in flight or responses are waiting to be delivered.
func (c *Conn) Wait(timeout time.Duration) error {
	if c.closed {
		return rpc.ErrClosed
	}
	if c.busy == 0 || len(c.pend) > 0 || timeout <= 0 {
		return nil
	}
	return c.dp.Wait(timeout)
}

// Errors is the number of requests delivered as StatusError because the
// transport failed or the response did not decode.
func (c *Conn) Errors() uint64 { return c.errs }

// Close closes the endpoint (its sessions are disconnected; responses not
// yet delivered are lost) and frees the endpoint id.
func (c *Conn) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	var err error
	var ts loadgen.TransportStats
	if c.ep != nil {
		err = c.ep.Close()
		// Final counts: the endpoint and its datapath are closed and
		// were used by this goroutine only.
		ts = transportOf(c.ep, c.dp)
	}
	for _, p := range c.pend {
		if !p.buf.IsZero() {
			_ = p.buf.Release()
		}
	}
	c.pend = nil
	if c.enc != nil {
		c.enc.done()
	}
	if c.dec != nil {
		c.dec.done()
	}
	c.cl.mu.Lock()
	c.cl.transport.Add(ts)
	c.cl.ids[c.id] = false
	if cp := c.pools; cp != nil {
		// Everything was released with the endpoint: the pools go back
		// to the client for its next connection. A pool still in use
		// would hand stale buffers on: report it and drop the pools.
		if n, m := cp.dp.InUse(), cp.rpc.InUse(); n != 0 || m != 0 {
			err = errors.Join(err, fmt.Errorf("kv: %d datapath and %d rpc buffers still in use after close", n, m), cp.dp.Close(), cp.rpc.Close())
			delete(c.cl.pools, cp.client)
		}
		cp.busy = false
		c.pools = nil
	}
	c.cl.mu.Unlock()
	return err
}

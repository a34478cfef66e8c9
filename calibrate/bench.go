package calibrate

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	_ "github.com/cornflakes-go/cornflakes/datapath/udp" // registers "udp"
	"github.com/cornflakes-go/cornflakes/datapath/xdp"
	"github.com/cornflakes-go/cornflakes/internal/benchschema/cf"
	"github.com/cornflakes-go/cornflakes/internal/cpuclock"
	"github.com/cornflakes-go/cornflakes/internal/stats"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/wire"
)

// Request layout: slot u32, seq u32, mode u8, round u8, cell tag u8, 1
// unused, magic u32, key u64. The response starts with the same 16 bytes.
// The cell tag tells apart packets of an earlier cell when one pair of
// endpoints serves the whole sweep (xdp).
const (
	hdrLen = 16
	reqLen = hdrLen + 8
	magic  = 0x4c414343 // "CCAL"

	modeCopy = 0
	modeSG   = 1

	spinPolls = 256
)

// workingSet is the values of one size class: each its own pool item
// (from a pool made for the class, so classes do not accumulate memory).
type workingSet struct {
	// space is where the pools are carved from (nil: the process
	// default); on xdp the UMEM, so that values go out zero-copy.
	space *mem.Space
	// reap, if set, lets the datapath finish sends that still reference
	// values (completions) before the pool closes.
	reap  func() error
	pool  *mem.Pool
	class int
	bufs  []mem.Buf
	items [][]byte // the items' bytes
	vals  [][]byte // vals[i] is the first size bytes of items[i]; the server sets fields from these slices (Recover path)
}

// setSize points every value at the first n bytes of its item.
func (w *workingSet) setSize(n int) {
	w.vals = w.vals[:0]
	for _, it := range w.items {
		w.vals = append(w.vals, it[:n])
	}
}

func (w *workingSet) release() error {
	var errs []error
	for i := range w.bufs {
		if err := w.bufs[i].Release(); err != nil {
			errs = append(errs, err)
			break
		}
		w.bufs[i] = mem.Buf{}
	}
	w.bufs, w.vals, w.items = w.bufs[:0], w.vals[:0], w.items[:0]
	if w.pool != nil && w.reap != nil {
		// Zero-copy sends hold references until their completion is
		// reaped (bounded wait).
		for deadline := time.Now().Add(2 * time.Second); w.pool.InUse() > 0 && time.Now().Before(deadline); {
			if err := w.reap(); err != nil {
				errs = append(errs, err)
				break
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	if w.pool != nil {
		errs = append(errs, w.pool.Close())
		w.pool = nil
	}
	return errors.Join(errs...)
}

// classOf is the pool item size holding n bytes.
func classOf(n int) int {
	class := 64
	for class < n {
		class <<= 1
	}
	return class
}

// fill allocates ws bytes of items of the given class and writes a
// pattern into each.
func (w *workingSet) fill(class, ws int) error {
	if err := w.release(); err != nil {
		return err
	}
	pool, err := mem.NewPool(mem.PoolConfig{Name: "calibrate values", MinClass: class, MaxClass: class, MaxBytes: int64(ws) + 64<<20, Space: w.space})
	if err != nil {
		return err
	}
	w.pool, w.class = pool, class
	count := max(ws/class, 1024)
	for i := 0; i < count; i++ {
		b, err := w.pool.Alloc(class)
		if err != nil {
			return fmt.Errorf("calibrate: working set: %w", err)
		}
		p := b.Bytes()
		for j := 0; j < len(p); j += 64 {
			p[j] = byte(i + j)
		}
		w.bufs = append(w.bufs, b)
		w.items = append(w.items, p)
	}
	return nil
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	z := x
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// server answers requests for one cell.
type server struct {
	ep       datapath.Endpoint
	ws       *workingSet
	entries  int
	tag      byte
	arenas   [2]*wire.Arena
	pkts     []datapath.Packet
	cpu      [][2]int64  // by round, mode
	count    [][2]uint64 // by round, mode
	keys     []int       // round<<1|mode of each packet of the current batch
	errs     uint64
	errFirst error
	stale    uint64 // requests of an earlier cell, ignored
}

func (s *server) loop(stop *atomic.Bool) error {
	idle := 0
	for {
		n, err := s.ep.Recv(s.pkts)
		if err != nil {
			return err
		}
		if n == 0 {
			if stop.Load() {
				return nil
			}
			if idle++; idle > spinPolls {
				if err := s.ep.Wait(time.Millisecond); err != nil {
					return err
				}
			}
			continue
		}
		idle = 0
		t0 := cpuclock.Thread()
		s.keys = s.keys[:0]
		for i := range s.pkts[:n] {
			p := s.pkts[i]
			s.pkts[i] = datapath.Packet{}
			if k, err := s.handle(p); errors.Is(err, errStale) {
				s.stale++
			} else if err != nil {
				if s.errs == 0 {
					s.errFirst = err
				}
				s.errs++
			} else {
				s.keys = append(s.keys, k)
			}
			if err := p.Buf.Release(); err != nil {
				return err
			}
		}
		if err := s.ep.Flush(); err != nil {
			return err
		}
		for _, a := range s.arenas {
			if err := a.Reset(); err != nil {
				return err
			}
		}
		// The batch's CPU time is shared evenly by its requests (batches
		// rarely mix modes: the client switches mode once per phase).
		if len(s.keys) > 0 {
			share := (cpuclock.Thread() - t0) / int64(len(s.keys))
			for _, k := range s.keys {
				s.cpu[k>>1][k&1] += share
				s.count[k>>1][k&1]++
			}
		}
	}
}

var (
	errBadRequest = errors.New("calibrate: bad request")
	// errStale marks a request of an earlier cell (shared endpoints).
	errStale = errors.New("calibrate: request of an earlier cell")
	// errSkip marks a cell the datapath cannot carry (response larger
	// than its MaxPayload); it is left out of the grid.
	errSkip = errors.New("calibrate: cell skipped")
)

// handle answers one request and returns its round<<1|mode.
func (s *server) handle(p datapath.Packet) (int, error) {
	b := p.Buf.Bytes()
	if len(b) != reqLen || binary.LittleEndian.Uint32(b[12:]) != magic || b[8] > modeSG || int(b[9]) >= len(s.cpu) {
		return 0, errBadRequest
	}
	if b[10] != s.tag {
		return 0, errStale
	}
	mode := int(b[8])
	a := s.arenas[mode]
	key := binary.LittleEndian.Uint64(b[hdrLen:])
	m := cf.NewListBuffers(a)
	l := m.InitMessages(s.entries)
	n := uint64(len(s.ws.vals))
	for range s.entries {
		key = splitmix(key)
		l.Append(s.ws.vals[key%n])
	}
	return int(b[9])<<1 | mode, s.ep.SendObject(p.From, b[:hdrLen], m)
}

type slot struct {
	key   uint64 // the request's key (for verification)
	busy  bool
	seq   uint32
	mode  byte
	round byte
	sent  time.Time
}

// client keeps Clients requests outstanding and alternates the mode of
// new requests every phase.
type client struct {
	ep    datapath.Endpoint
	dst   netip.AddrPort
	slots []slot
	req   [reqLen]byte
	key   uint64
	pkts  []datapath.Packet
	tag   byte
	want  int // expected response payload length (after the header)
	// verify, when set, decodes every response and compares its values
	// with those the server must have chosen for the request's key
	// (entries and ws as the server's).
	verify  bool
	entries int
	ws      *workingSet
	arena   *wire.Arena
	count   [2]uint64
	dur     [2]time.Duration
	bad     uint64
}

func (c *client) send(i int, mode, round byte) error {
	s := &c.slots[i]
	s.busy, s.mode, s.round, s.sent = true, mode, round, time.Now()
	s.seq++
	c.key++
	binary.LittleEndian.PutUint32(c.req[0:], uint32(i))
	binary.LittleEndian.PutUint32(c.req[4:], s.seq)
	c.req[8], c.req[9], c.req[10] = mode, round, c.tag
	binary.LittleEndian.PutUint32(c.req[12:], magic)
	s.key = splitmix(c.key)
	binary.LittleEndian.PutUint64(c.req[16:], s.key)
	return c.ep.Send(c.dst, c.req[:])
}

// check decodes a response and compares it byte for byte with the values
// the server picks for key.
func (c *client) check(p []byte, key uint64) bool {
	defer c.arena.Reset()
	m := cf.NewListBuffers(c.arena)
	if err := m.DecodeBytes(p); err != nil {
		return false
	}
	l, err := m.GetMessages()
	if err != nil || l.Len() != c.entries {
		return false
	}
	n := uint64(len(c.ws.vals))
	for i := range c.entries {
		key = splitmix(key)
		if !bytes.Equal(l.At(i), c.ws.vals[key%n]) {
			return false
		}
	}
	return true
}

// run alternates phases: warmup, then rounds × (copy, sg).
// Phase bounds of client.run.
const (
	minPhaseResponses = 16
	phaseCap          = 2 * time.Second
)

func (c *client) run(rounds int, phase time.Duration) error {
	type ph struct {
		mode, round byte
		d           time.Duration
	}
	// Round 0 is the warmup.
	phases := []ph{{modeCopy, 0, phase}, {modeSG, 0, phase}}
	for r := 1; r <= rounds; r++ {
		phases = append(phases, ph{modeCopy, byte(r), phase}, ph{modeSG, byte(r), phase})
	}
	for i := range c.slots {
		if err := c.send(i, modeCopy, 0); err != nil {
			return err
		}
	}
	if err := c.ep.Flush(); err != nil {
		return err
	}
	for _, p := range phases {
		start := time.Now()
		end := start.Add(p.d)
		// A phase runs for its duration and until it has minPhaseResponses
		// of its own (a thread descheduled on a busy machine can miss a
		// whole short phase), but never past phaseCap.
		hardEnd := start.Add(max(p.d, phaseCap))
		var got uint64
		idle := 0
		for {
			now := time.Now()
			if now.After(end) && (got >= minPhaseResponses || now.After(hardEnd)) {
				break
			}
			n, err := c.ep.Recv(c.pkts)
			if err != nil {
				return err
			}
			sent := false
			for k := range c.pkts[:n] {
				pk := c.pkts[k]
				c.pkts[k] = datapath.Packet{}
				b := pk.Buf.Bytes()
				i := -1
				if len(b) >= hdrLen && binary.LittleEndian.Uint32(b[12:]) == magic {
					if b[10] != c.tag {
						// A late response of an earlier cell: ignored.
					} else if j := int(binary.LittleEndian.Uint32(b)); j < len(c.slots) && c.slots[j].busy && c.slots[j].seq == binary.LittleEndian.Uint32(b[4:]) {
						i = j
					}
				} else {
					c.bad++
				}
				if i >= 0 {
					if len(b) < hdrLen+c.want {
						c.bad++
					} else if c.verify && !c.check(b[hdrLen:], c.slots[i].key) {
						c.bad++
					}
					if c.slots[i].mode == p.mode && c.slots[i].round == p.round {
						got++
					}
					c.slots[i].busy = false
					if err := c.send(i, p.mode, p.round); err != nil {
						pk.Buf.Release()
						return err
					}
					sent = true
				}
				if err := pk.Buf.Release(); err != nil {
					return err
				}
			}
			// Requests lost (socket buffers) are reissued after 50 ms.
			if n == 0 {
				for i := range c.slots {
					if s := &c.slots[i]; s.busy && now.Sub(s.sent) > 50*time.Millisecond {
						s.busy = false
						if err := c.send(i, p.mode, p.round); err != nil {
							return err
						}
						sent = true
					}
				}
			}
			if sent {
				idle = 0
				if err := c.ep.Flush(); err != nil {
					return err
				}
			} else if n == 0 {
				if idle++; idle > spinPolls {
					if err := c.ep.Wait(time.Millisecond); err != nil {
						return err
					}
				}
			}
		}
		if p.round > 0 {
			c.count[p.mode] += got
			c.dur[p.mode] += time.Since(start)
		}
	}
	// Drain late responses.
	deadline := time.Now().Add(20 * time.Millisecond)
	for time.Now().Before(deadline) {
		n, err := c.ep.Recv(c.pkts)
		if err != nil {
			return err
		}
		for k := range c.pkts[:n] {
			c.pkts[k].Buf.Release()
			c.pkts[k] = datapath.Packet{}
		}
	}
	return nil
}

// XDPReserve is the UMEM an xdp sweep adds to the working set for the
// two endpoints' RX and TX buffers (fill and RX rings of 4 KiB frames,
// TX buffers in flight) and pool rounding.
const XDPReserve = 64 << 20

// pair is the server and client endpoints of a cell (udp, memnet), or of
// a whole sweep (xdp: every endpoint is a namespace of the topology, so
// one pair serves all cells).
type pair struct {
	sep, cep     datapath.Endpoint
	spool, cpool *mem.Pool // nil on xdp: the endpoints' own pools on the UMEM
}

func openEP(kind string, pool *mem.Pool, net *memnet.Network, shared *mem.Space) (datapath.Endpoint, error) {
	cfg := datapath.Config{Pool: pool}
	switch kind {
	case "udp":
		cfg.Local = netip.MustParseAddrPort("127.0.0.1:0")
	case "shm":
		cfg.Local = netip.MustParseAddrPort("127.0.0.1:0")
		cfg.Options = shmOptions(shared)
	case "memnet":
		cfg.Options = memnet.Options{Network: net}
	default:
		return nil, fmt.Errorf("%w: datapath %q", ErrConfig, kind)
	}
	return datapath.Open(kind, cfg)
}

// openPair opens a server and a client endpoint: on topo when it is set
// (xdp), else of the given kind, each with its own pool; on shm the server
// sends from shared (the working set's space).
func openPair(kind string, topo *xdp.Topology, shared *mem.Space) (_ *pair, err error) {
	p := &pair{}
	defer func() {
		if err != nil {
			err = errors.Join(err, p.close())
		}
	}()
	if topo != nil {
		if p.sep, err = topo.Open(datapath.Config{}); err != nil {
			return p, err
		}
		p.cep, err = topo.Open(datapath.Config{})
		return p, err
	}
	var net *memnet.Network
	if kind == "memnet" {
		net = memnet.NewNetwork(memnet.NetworkConfig{Seed: 1})
	}
	if p.spool, err = mem.NewPool(mem.PoolConfig{Name: "calibrate server"}); err != nil {
		return p, err
	}
	if p.cpool, err = mem.NewPool(mem.PoolConfig{Name: "calibrate client"}); err != nil {
		return p, err
	}
	if p.sep, err = openEP(kind, p.spool, net, shared); err != nil {
		return p, err
	}
	p.cep, err = openEP(kind, p.cpool, net, nil)
	return p, err
}

// close closes the endpoints, then checks and closes the pools.
func (p *pair) close() error {
	var errs []error
	for _, ep := range []datapath.Endpoint{p.cep, p.sep} {
		if ep != nil {
			errs = append(errs, ep.Close())
		}
	}
	p.cep, p.sep = nil, nil
	for _, pl := range []*mem.Pool{p.spool, p.cpool} {
		if pl != nil {
			errs = append(errs, pl.Close()) // a *mem.InUseError names a leak
		}
	}
	p.spool, p.cpool = nil, nil
	return errors.Join(errs...)
}

// measure runs one cell on shared (an open pair reused across cells,
// whose packets carry tag), or on a pair opened for the cell when shared
// is nil.
func measure(cfg *Config, ws *workingSet, entries, total int, shared *pair, tag byte) (Cell, error) {
	cell := Cell{Entries: entries, TotalBytes: total, EntryBytes: max(total/entries, 1)}
	p := shared
	if p == nil {
		var err error
		if p, err = openPair(cfg.Datapath, nil, ws.space); err != nil {
			return cell, err
		}
	}
	// closePair ends the cell: the pair is closed unless it is shared.
	closePair := func() error {
		if shared != nil {
			return nil
		}
		return p.close()
	}
	sep, cep := p.sep, p.cep
	// Upper bound of the response: header, list entries, values.
	if need := hdrLen + 64 + 8*entries + total; need > sep.MaxPayload() {
		return cell, errors.Join(fmt.Errorf("%w: a %d-byte response exceeds the %s datapath's %d-byte payload", errSkip, need, cfg.Datapath, sep.MaxPayload()), closePair())
	}
	zc0 := sep.Stats().ZeroCopyEntries
	srv := &server{ep: sep, ws: ws, entries: entries, tag: tag, pkts: make([]datapath.Packet, datapath.DefaultBatch),
		cpu: make([][2]int64, cfg.Rounds+1), count: make([][2]uint64, cfg.Rounds+1)}
	srv.arenas[modeCopy], srv.arenas[modeSG] = wire.NewArena(), wire.NewArena()
	srv.arenas[modeCopy].Threshold = wire.CopyAll
	srv.arenas[modeSG].Threshold = 0
	cli := &client{ep: cep, tag: tag, verify: cfg.Verify, entries: entries, ws: ws, arena: wire.NewArena(), dst: sep.LocalAddr(), slots: make([]slot, cfg.Clients), pkts: make([]datapath.Packet, datapath.DefaultBatch), want: cell.EntryBytes * entries}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var srvErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		srvErr = srv.loop(&stop)
	}()
	cliErr := func() error {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		return cli.run(cfg.Rounds, cfg.Phase)
	}()
	stop.Store(true)
	// A server blocked in Wait sees the flag at once (and not only after
	// its timeout, which shm's Wait can overrun on a loaded machine).
	if w, ok := sep.(interface{ Wake() error }); ok {
		_ = w.Wake()
	}
	wg.Wait()
	cell.ZeroCopyEntries = sep.Stats().ZeroCopyEntries - zc0
	errs := []error{cliErr, srvErr}
	for _, a := range append(srv.arenas[:], cli.arena) {
		errs = append(errs, a.Reset())
	}
	errs = append(errs, closePair())
	if cli.bad > 0 || srv.errs > 0 {
		errs = append(errs, fmt.Errorf("calibrate: %d bad responses, %d failed requests (first: %v)", cli.bad, srv.errs, srv.errFirst))
	}
	if err := errors.Join(errs...); err != nil {
		return cell, err
	}
	// Per round: cost per response in each mode; the cell reports the
	// medians over rounds (robust to a round disturbed by other load).
	var cp, sg, gain []float64
	for r := 1; r <= cfg.Rounds; r++ {
		c, s := srv.count[r][modeCopy], srv.count[r][modeSG]
		cell.CopyResponses += c
		cell.SGResponses += s
		if c == 0 || s == 0 {
			continue
		}
		cn := float64(srv.cpu[r][modeCopy]) / float64(c)
		sn := float64(srv.cpu[r][modeSG]) / float64(s)
		cp, sg, gain = append(cp, cn), append(sg, sn), append(gain, 100*(cn/sn-1))
	}
	if len(gain) == 0 || cli.dur[modeCopy] == 0 || cli.dur[modeSG] == 0 {
		return cell, fmt.Errorf("calibrate: no round measured both modes (entries %d, total %d)", entries, total)
	}
	cell.CopyNsPerResp, cell.SGNsPerResp, cell.GainPct = stats.Median(cp), stats.Median(sg), stats.Median(gain)
	cell.CopyRPS = float64(cli.count[modeCopy]) / cli.dur[modeCopy].Seconds()
	cell.SGRPS = float64(cli.count[modeSG]) / cli.dur[modeSG].Seconds()
	return cell, nil
}

// Run performs the sweep.
func Run(cfg Config) (_ *Result, err error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	llc, src := LLC()
	ws := cfg.WorkingSet
	if ws == 0 {
		ws = min(WorkingSetFactor*llc, MaxWorkingSet/2)
	}
	res := &Result{Datapath: cfg.Datapath, LLCBytes: llc, LLCSource: src, WorkingSetBytes: ws,
		Entries: cfg.Entries, TotalSizes: cfg.TotalSizes, Date: time.Now().UTC().Format(time.RFC3339)}
	w := &workingSet{}
	var shared *pair
	if cfg.Datapath == "xdp" {
		// One topology and one pair of endpoints for the sweep; the
		// working set is carved from their UMEM (values outside it would
		// be copied into TX buffers, and scatter-gather would measure a
		// copy). The UMEM is sized to hold it: nothing is scaled down.
		if err := xdp.Available(); err != nil {
			return nil, fmt.Errorf("calibrate: datapath xdp: %w", err)
		}
		umem := int64(ws) + XDPReserve
		topo, terr := xdp.NewTopology(xdp.TopologyConfig{SpaceSize: umem})
		if terr != nil {
			return nil, fmt.Errorf("calibrate: datapath xdp: %w", terr)
		}
		// Deferred first, so it runs last: after the pair is closed and
		// the working set released.
		defer func() {
			if e := topo.Close(); e != nil && err == nil {
				err = fmt.Errorf("calibrate: closing the xdp topology: %w", e)
			}
		}()
		if shared, err = openPair(cfg.Datapath, topo, nil); err != nil {
			return nil, fmt.Errorf("calibrate: datapath xdp: %w", err)
		}
		w.space = xdp.SpaceOf(shared.sep)
		w.reap = shared.sep.Flush
		res.WorkingSetNote = fmt.Sprintf("working set in the AF_XDP UMEM (%d MiB: working set + %d MiB for the endpoints' buffers), shared by the server and client namespaces, so scatter-gather entries are sent zero-copy", umem>>20, XDPReserve>>20)
	}
	if cfg.Datapath == "shm" {
		// The working set in a shared space the server's endpoint sends
		// from: its values go out as descriptors (elsewhere they would be
		// copied, and scatter-gather would measure a copy).
		space, serr := newShmSpace(int64(ws) + ShmReserve)
		if serr != nil {
			return nil, fmt.Errorf("calibrate: datapath shm: %w", serr)
		}
		// Deferred first, so it runs last: after the working set is
		// released and its pool closed.
		defer func() {
			if e := space.Close(); e != nil && err == nil {
				err = fmt.Errorf("calibrate: closing the shared space: %w", e)
			}
		}()
		w.space = space
		res.WorkingSetNote = fmt.Sprintf("working set in a shared space (%d MiB) the server's shm endpoint sends from, so scatter-gather entries are sent as descriptors the client reads in place", (int64(ws)+ShmReserve)>>20)
	}
	defer func() {
		if e := w.release(); e != nil && err == nil {
			err = e
		}
	}()
	if shared != nil {
		// Runs before the working set is released: closing the endpoints
		// waits for (or forces) the completions of zero-copy sends.
		defer func() {
			if e := shared.close(); e != nil && err == nil {
				err = e
			}
		}()
	}
	var tag byte
	type job struct{ entries, total, size int }
	var jobs []job
	for _, e := range cfg.Entries {
		for _, t := range cfg.TotalSizes {
			jobs = append(jobs, job{e, t, max(t/e, 1)})
		}
	}
	// Group by size class so each working set is built once.
	slices.SortStableFunc(jobs, func(a, b job) int { return a.size - b.size })
	cur := -1
	for _, j := range jobs {
		if c := classOf(j.size); c != cur {
			t0 := time.Now()
			if err := w.fill(c, ws); err != nil {
				return nil, err
			}
			cur = c
			if cfg.Progress != nil {
				fmt.Fprintf(cfg.Progress, "calibrate: working set of %d items of %d B in %v\n", len(w.items), c, time.Since(t0).Round(time.Millisecond))
			}
		}
		w.setSize(j.size)
		tag++
		c, err := measure(&cfg, w, j.entries, j.total, shared, tag)
		if errors.Is(err, errSkip) {
			if cfg.Progress != nil {
				fmt.Fprintf(cfg.Progress, "calibrate: skipping %d x %d B: %v\n", j.entries, j.size, err)
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "calibrate %s: %2d x %5d B (total %5d): copy %7.0f ns/resp, sg %7.0f ns/resp, sg gain %+6.1f%%  (client %6.0f vs %6.0f rps)\n",
				cfg.Datapath, j.entries, c.EntryBytes, j.total, c.CopyNsPerResp, c.SGNsPerResp, c.GainPct, c.CopyRPS, c.SGRPS)
		}
		res.Cells = append(res.Cells, c)
	}
	slices.SortFunc(res.Cells, func(a, b Cell) int {
		if a.Entries != b.Entries {
			return a.Entries - b.Entries
		}
		return a.TotalBytes - b.TotalBytes
	})
	res.RecommendedThreshold = Recommend(res.Cells)
	return res, nil
}

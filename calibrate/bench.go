package calibrate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	_ "github.com/cornflakes-go/cornflakes/datapath/udp" // registers "udp"
	"github.com/cornflakes-go/cornflakes/internal/benchschema/cf"
	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/wire"
)

// Request layout: slot u32, seq u32, mode u8 + 3 unused, magic u32, key u64.
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
	pool, err := mem.NewPool(mem.PoolConfig{Name: "calibrate values", MinClass: class, MaxClass: class, MaxBytes: int64(ws) + 64<<20})
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

func threadCPU() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}

// server answers requests for one cell.
type server struct {
	ep       datapath.Endpoint
	ws       *workingSet
	entries  int
	arenas   [2]*wire.Arena
	pkts     []datapath.Packet
	cpu      [][2]int64  // by round, mode
	count    [][2]uint64 // by round, mode
	keys     []int       // round<<1|mode of each packet of the current batch
	errs     uint64
	errFirst error
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
		t0 := threadCPU()
		s.keys = s.keys[:0]
		for i := range s.pkts[:n] {
			p := s.pkts[i]
			s.pkts[i] = datapath.Packet{}
			if k, err := s.handle(p); err != nil {
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
			share := (threadCPU() - t0) / int64(len(s.keys))
			for _, k := range s.keys {
				s.cpu[k>>1][k&1] += share
				s.count[k>>1][k&1]++
			}
		}
	}
}

var (
	errBadRequest = errors.New("calibrate: bad request")
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
	want  int // expected response payload length (after the header)
	count [2]uint64
	dur   [2]time.Duration
	bad   uint64
}

func (c *client) send(i int, mode, round byte) error {
	s := &c.slots[i]
	s.busy, s.mode, s.round, s.sent = true, mode, round, time.Now()
	s.seq++
	c.key++
	binary.LittleEndian.PutUint32(c.req[0:], uint32(i))
	binary.LittleEndian.PutUint32(c.req[4:], s.seq)
	c.req[8], c.req[9] = mode, round
	binary.LittleEndian.PutUint32(c.req[12:], magic)
	binary.LittleEndian.PutUint64(c.req[16:], splitmix(c.key))
	return c.ep.Send(c.dst, c.req[:])
}

// run alternates phases: warmup, then rounds × (copy, sg).
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
		var got uint64
		idle := 0
		for {
			now := time.Now()
			if now.After(end) {
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
					if j := int(binary.LittleEndian.Uint32(b)); j < len(c.slots) && c.slots[j].busy && c.slots[j].seq == binary.LittleEndian.Uint32(b[4:]) {
						i = j
					}
				} else {
					c.bad++
				}
				if i >= 0 {
					if len(b) < hdrLen+c.want {
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

func openEP(kind string, pool *mem.Pool, net *memnet.Network) (datapath.Endpoint, error) {
	cfg := datapath.Config{Pool: pool}
	if kind == "udp" {
		cfg.Local = netip.MustParseAddrPort("127.0.0.1:0")
	} else {
		cfg.Options = memnet.Options{Network: net}
	}
	return datapath.Open(kind, cfg)
}

// measure runs one cell.
func measure(cfg *Config, ws *workingSet, entries, total int) (Cell, error) {
	cell := Cell{Entries: entries, TotalBytes: total, EntryBytes: max(total/entries, 1)}
	var net *memnet.Network
	if cfg.Datapath == "memnet" {
		net = memnet.NewNetwork(memnet.NetworkConfig{Seed: 1})
	}
	spool, err := mem.NewPool(mem.PoolConfig{Name: "calibrate server"})
	if err != nil {
		return cell, err
	}
	defer spool.Close()
	cpool, err := mem.NewPool(mem.PoolConfig{Name: "calibrate client"})
	if err != nil {
		return cell, err
	}
	defer cpool.Close()
	sep, err := openEP(cfg.Datapath, spool, net)
	if err != nil {
		return cell, err
	}
	cep, err := openEP(cfg.Datapath, cpool, net)
	if err != nil {
		sep.Close()
		return cell, err
	}
	// Upper bound of the response: header, list entries, values.
	if need := hdrLen + 64 + 8*entries + total; need > sep.MaxPayload() {
		return cell, errors.Join(fmt.Errorf("%w: a %d-byte response exceeds the %s datapath's %d-byte payload", errSkip, need, cfg.Datapath, sep.MaxPayload()), cep.Close(), sep.Close())
	}
	srv := &server{ep: sep, ws: ws, entries: entries, pkts: make([]datapath.Packet, datapath.DefaultBatch),
		cpu: make([][2]int64, cfg.Rounds+1), count: make([][2]uint64, cfg.Rounds+1)}
	srv.arenas[modeCopy], srv.arenas[modeSG] = wire.NewArena(), wire.NewArena()
	srv.arenas[modeCopy].Threshold = wire.CopyAll
	srv.arenas[modeSG].Threshold = 0
	cli := &client{ep: cep, dst: sep.LocalAddr(), slots: make([]slot, cfg.Clients), pkts: make([]datapath.Packet, datapath.DefaultBatch), want: cell.EntryBytes * entries}
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
	wg.Wait()
	errs := []error{cliErr, srvErr, cep.Close(), sep.Close()}
	for _, a := range srv.arenas {
		errs = append(errs, a.Reset())
	}
	for _, p := range []*mem.Pool{spool, cpool} {
		if n := p.InUse(); n != 0 {
			errs = append(errs, fmt.Errorf("calibrate: pool %s: %d items still in use", p.Name(), n))
		}
	}
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
	cell.CopyNsPerResp, cell.SGNsPerResp, cell.GainPct = median(cp), median(sg), median(gain)
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
	defer func() {
		if e := w.release(); e != nil && err == nil {
			err = e
		}
	}()
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
		c, err := measure(&cfg, w, j.entries, j.total)
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

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

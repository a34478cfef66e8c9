package kv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cornflakes-go/cornflakes/bench"
	"github.com/cornflakes-go/cornflakes/datapath"
	"github.com/cornflakes-go/cornflakes/datapath/memnet"
	"github.com/cornflakes-go/cornflakes/datapath/udp"
	"github.com/cornflakes-go/cornflakes/internal/cpuclock"
	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/wire"
	"github.com/cornflakes-go/cornflakes/workload"
	"golang.org/x/sys/unix"
)

// env is a server and a client over one datapath.
type env struct {
	srv *Server
	cl  *Client
}

func newEnv(t testing.TB, dp string, faults memnet.Faults, endpoints int) *env {
	t.Helper()
	var nw *memnet.Network
	if dp == DatapathMemnet {
		nw = memnet.NewNetwork(memnet.NetworkConfig{Seed: 7, Faults: faults})
	}
	srv, err := NewServer(ServerConfig{Datapath: dp, Memnet: nw, Endpoints: endpoints, PoolBytes: 256 << 20})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := NewClient(ClientConfig{Server: srv.Addr(), Endpoints: endpoints, Datapath: dp, Memnet: nw})
	if err != nil {
		_ = srv.Close()
		t.Fatal(err)
	}
	e := &env{srv: srv, cl: cl}
	t.Cleanup(func() {
		if err := cl.Close(); err != nil {
			t.Error(err)
		}
		// Close fails when store memory is still referenced (pool accounting).
		if err := srv.Close(); err != nil {
			t.Errorf("server close: %v", err)
		}
	})
	return e
}

func (e *env) dial(t testing.TB, c Codec) *Conn {
	t.Helper()
	cn, err := e.cl.Dial(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cn.Close() })
	return cn
}

// call sends one request and waits for its response (copied out).
func call(t testing.TB, cn *Conn, req *workload.Request) workload.Response {
	t.Helper()
	if err := cn.Send(1, req); err != nil {
		t.Fatalf("send %v: %v", req.Op, err)
	}
	var out workload.Response
	got := false
	deadline := time.Now().Add(10 * time.Second)
	for !got {
		_, err := cn.Poll(func(id uint64, r *workload.Response) {
			got = true
			out.Status = r.Status
			for _, v := range r.Values {
				out.Values = append(out.Values, append([]byte(nil), v...))
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v: no response", req.Op)
		}
	}
	return out
}

func req(op workload.Op, keys []string, vals []string, index int) *workload.Request {
	r := &workload.Request{Op: op, Index: index, Units: 1}
	for _, k := range keys {
		r.Keys = append(r.Keys, []byte(k))
	}
	for _, v := range vals {
		r.Values = append(r.Values, []byte(v))
	}
	return r
}

func val(n int, seed byte) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return string(b)
}

// script exercises every request type, including not-found cases, with
// values below and above the hybrid threshold.
func script() []*workload.Request {
	big, big2, small := val(4000, 1), val(9000, 2), val(40, 3)
	return []*workload.Request{
		req(workload.OpGet, []string{"missing"}, nil, 0),
		req(workload.OpPut, []string{"a"}, []string{big}, 0),
		req(workload.OpPut, []string{"b"}, []string{small}, 0),
		req(workload.OpGet, []string{"a"}, nil, 0),
		req(workload.OpGet, []string{"b"}, nil, 0),
		req(workload.OpPut, []string{"a"}, []string{small + "x"}, 0), // replace
		req(workload.OpGet, []string{"a"}, nil, 0),
		req(workload.OpPutM, []string{"m1", "m2", "m3"}, []string{small, big, val(600, 4)}, 0),
		req(workload.OpGetM, []string{"m1", "m2", "m3"}, nil, 0),
		req(workload.OpGetM, []string{"m1", "nope"}, nil, 0),
		req(workload.OpPutList, []string{"l"}, []string{small, big, val(513, 5)}, 0),
		req(workload.OpGetList, []string{"l"}, nil, 0),
		req(workload.OpAppendToList, []string{"l"}, []string{big2, val(1, 6)}, 0),
		req(workload.OpGetList, []string{"l"}, nil, 0),
		req(workload.OpGetFromList, []string{"l"}, nil, 3),
		req(workload.OpGetFromList, []string{"l"}, nil, 0),
		req(workload.OpGetFromList, []string{"l"}, nil, 5),
		req(workload.OpGet, []string{"l"}, nil, 0), // get of a list: error
		req(workload.OpAppendToList, []string{"new"}, []string{small}, 0),
		req(workload.OpGetList, []string{"new"}, nil, 0),
		req(workload.OpPutList, []string{"empty"}, nil, 0),
		req(workload.OpGetList, []string{"empty"}, nil, 0),
		req(workload.OpDelete, []string{"a"}, nil, 0),
		req(workload.OpGet, []string{"a"}, nil, 0),
		req(workload.OpDelete, []string{"a"}, nil, 0),
		req(workload.OpPut, []string{"empty-value"}, []string{""}, 0),
		req(workload.OpGet, []string{"empty-value"}, nil, 0),
		req(workload.OpDelete, []string{"l"}, nil, 0),
		req(workload.OpGetFromList, []string{"l"}, nil, 0),
	}
}

func sameResponse(got, want workload.Response) error {
	if got.Status != want.Status {
		return fmt.Errorf("status %v, want %v", got.Status, want.Status)
	}
	if want.Status != workload.StatusOK {
		return nil
	}
	if len(got.Values) != len(want.Values) {
		return fmt.Errorf("%d values, want %d", len(got.Values), len(want.Values))
	}
	for i := range got.Values {
		if !bytes.Equal(got.Values[i], want.Values[i]) {
			return fmt.Errorf("value %d: %d bytes differ from the %d expected", i, len(got.Values[i]), len(want.Values[i]))
		}
	}
	return nil
}

// runScript checks every response of the script against workload.MemStore.
func runScript(t *testing.T, cn *Conn) {
	ref := workload.NewMemStore()
	for i, r := range script() {
		got := call(t, cn, r)
		var want workload.Response
		ref.Apply(r, &want)
		if err := sameResponse(got, want); err != nil {
			t.Fatalf("step %d %v %q: %v (client: %v)", i, r.Op, r.Keys[0], err, cn.LastError)
		}
	}
}

var testDatapaths = []struct {
	name   string
	dp     string
	faults memnet.Faults
}{
	{"memnet-loss", DatapathMemnet, memnet.Faults{Loss: 0.02, Duplicate: 0.01, Reorder: 0.01}},
	{"udp", DatapathUDP, memnet.Faults{}},
	{"shm", DatapathShm, memnet.Faults{}},
}

// TestEveryOpEveryCodec runs every request type with every serializer over
// memnet with loss, duplication and reordering and over kernel UDP, and
// compares each response with the reference store.
func TestEveryOpEveryCodec(t *testing.T) {
	for _, d := range testDatapaths {
		t.Run(d.name, func(t *testing.T) {
			e := newEnv(t, d.dp, d.faults, 1)
			for _, c := range AllCodecs() {
				t.Run(strings.ReplaceAll(c.String(), "/", "-"), func(t *testing.T) {
					cn := e.dial(t, c)
					runScript(t, cn)
					if err := e.srv.Clear(); err != nil { // next codec starts empty
						t.Fatal(err)
					}
				})
			}
		})
	}
}

// TestShardedEndpoints: two server endpoints, keys sharded, multi-key
// requests spanning shards.
func TestShardedEndpoints(t *testing.T) {
	e := newEnv(t, DatapathMemnet, memnet.Faults{}, 2)
	cn := e.dial(t, CodecCFHybrid)
	runScript(t, cn)
}

// TestLoadWithModel runs the open-loop generator against the server for
// each workload and serializer, checking every response with the model.
func TestLoadWithModel(t *testing.T) {
	specs := []string{
		"ycsb:records=300,shape=2x2048,layout=multi,update=0.2",
		"ycsb:records=300,shape=4x1024,layout=list,update=0.2",
		"twitter:keys=300",
		"google:keys=300,values=1-7",
		"cdn:objects=40,maxobject=100000",
	}
	for _, d := range testDatapaths {
		t.Run(d.name, func(t *testing.T) {
			e := newEnv(t, d.dp, d.faults, 1)
			for _, spec := range specs {
				w, err := workload.Parse(spec)
				if err != nil {
					t.Fatal(err)
				}
				if err := e.srv.Clear(); err != nil {
					t.Fatal(err)
				}
				pc := e.dial(t, CodecCFHybrid)
				if _, err := Preload(context.Background(), w, pc, 16); err != nil {
					t.Fatalf("%s: preload: %v", spec, err)
				}
				_ = pc.Close()
				for _, c := range []Codec{CodecCFHybrid, CodecCFZeroCopyFlat, CodecProtobuf, CodecVTProtobuf, CodecFlatBuffers, CodecCapnp} {
					var res bench.Result
					// On a starved machine (or under -race) a short run may
					// end before its first measured send: run again.
					for try := 0; try < 4 && (try == 0 || res.Sent == 0); try++ {
						res, err = bench.Run(context.Background(), bench.Config{
							Workload: w, Target: e.cl.Target(c), Clients: 1, Rate: 2000,
							Duration: 250 * time.Millisecond, Check: true, Seed: 3, Drain: 3 * time.Second,
						})
						if err != nil {
							t.Fatalf("%s %v: %v", spec, c, err)
						}
					}
					if res.Mismatches != 0 || res.Errors != 0 || res.Received == 0 {
						t.Fatalf("%s %v: %d received, %d mismatches (%s), %d errors: %+v", spec, c, res.Received, res.Mismatches, res.FirstMismatch, res.Errors, res)
					}
				}
			}
		})
	}
}

// TestBadRequests: unknown request types, malformed bodies and oversized
// values get error answers and leave the store intact.
func TestBadRequests(t *testing.T) {
	e := newEnv(t, DatapathMemnet, memnet.Faults{}, 1)
	good := e.dial(t, CodecCFHybrid)
	v := val(3000, 9)
	if got := call(t, good, req(workload.OpPut, []string{"k"}, []string{v}, 0)); got.Status != workload.StatusOK {
		t.Fatal(got.Status)
	}
	check := func() {
		t.Helper()
		got := call(t, good, req(workload.OpGet, []string{"k"}, nil, 0))
		if got.Status != workload.StatusOK || len(got.Values) != 1 || string(got.Values[0]) != v {
			t.Fatalf("store changed: %v", got.Status)
		}
		if n := e.srv.Store().Len(); n != 1 {
			t.Fatalf("store has %d keys, want 1", n)
		}
	}

	// Raw RPC calls with arbitrary types and bodies.
	raw, err := e.cl.Dial(CodecCFHybrid)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	rawCall := func(typ uint8, body []byte) (workload.Response, error) {
		b, err := raw.ep.Call(context.Background(), raw.sess[0], typ, rpc.BytesMsg(body))
		if err != nil {
			return workload.Response{}, err
		}
		defer b.Release()
		c, op := splitType(typ)
		cd, cerr := newCodec(c)
		if cerr != nil {
			return workload.Response{}, cerr
		}
		var r workload.Response
		err = cd.decodeResponse(op, b.Bytes(), &r)
		cd.done()
		return r, err
	}
	for _, typ := range []uint8{0, 0x0F, ReqType(CodecCFHybrid, 0), ReqType(CodecCFHybrid, 10), 0xF1, ReqType(numCodecs, workload.OpGet)} {
		if _, err := rawCall(typ, []byte("x")); !errors.Is(err, rpc.ErrNoHandler) {
			t.Errorf("type %#x: %v, want ErrNoHandler", typ, err)
		}
	}
	garbage := [][]byte{nil, {0}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 2}, bytes.Repeat([]byte{0x80}, 64), []byte("\x0a\x05hello\x12\xff\xff\xff\xff\x0f")}
	for _, c := range AllCodecs() {
		for op := workload.OpGet; op <= workload.OpDelete; op++ {
			for i, g := range garbage {
				r, err := rawCall(ReqType(c, op), g)
				if err != nil {
					t.Fatalf("%v %v garbage %d: %v", c, op, i, err)
				}
				if r.Status == workload.StatusOK && !op.IsRead() && op != workload.OpDelete {
					// A write may decode (e.g. empty protobuf) but then
					// lacks its key: it must not succeed.
					t.Errorf("%v %v garbage %d: write succeeded", c, op, i)
				}
			}
		}
		check()
		// Oversized values and keys, too many keys.
		cn := e.dial(t, c)
		for _, r := range []*workload.Request{
			req(workload.OpPut, []string{"k"}, []string{strings.Repeat("v", MaxValueSize+1)}, 0),
			req(workload.OpPut, []string{strings.Repeat("k", MaxKeySize+1)}, []string{"v"}, 0),
			req(workload.OpPutM, []string{"k", "k2"}, []string{"v"}, 0),
			req(workload.OpPutList, []string{"k", "k2"}, []string{"v"}, 0),
			req(workload.OpGet, []string{"k", "k2"}, nil, 0),
			{Op: workload.OpPut},
		} {
			if got := call(t, cn, r); got.Status != workload.StatusError {
				t.Errorf("%v: %v with %d keys: status %v, want error", c, r.Op, len(r.Keys), got.Status)
			}
		}
		check()
	}
	if e.srv.Stats().Errors == 0 || e.srv.LastError() == nil {
		t.Error("server counted no errors")
	}
}

// TestValueIntegrityWhileReplaced: a response in flight keeps its bytes
// while the value is replaced (puts allocate, fill and swap).
func TestValueIntegrityWhileReplaced(t *testing.T) {
	e := newEnv(t, DatapathMemnet, memnet.Faults{Delay: 200 * time.Microsecond}, 1)
	rd := e.dial(t, CodecCFZeroCopy)
	wr := e.dial(t, CodecCFZeroCopy)
	a, b := val(5000, 1), val(5000, 2)
	call(t, wr, req(workload.OpPut, []string{"k"}, []string{a}, 0))
	for i := 0; i < 50; i++ {
		if err := rd.Send(uint64(i%8), req(workload.OpGet, []string{"k"}, nil, 0)); err != nil {
			t.Fatal(err)
		}
		next := b
		if i%2 == 1 {
			next = a
		}
		call(t, wr, req(workload.OpPut, []string{"k"}, []string{next}, 0))
		got := false
		for deadline := time.Now().Add(5 * time.Second); !got && time.Now().Before(deadline); {
			_, err := rd.Poll(func(id uint64, r *workload.Response) {
				got = true
				if r.Status != workload.StatusOK || len(r.Values) != 1 || (string(r.Values[0]) != a && string(r.Values[0]) != b) {
					t.Errorf("torn or wrong value: %v", r.Status)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if !got {
			t.Fatal("no response")
		}
	}
}

// TestServerUsage: with locked endpoint threads the server reports the CPU
// time its endpoints used and the requests they served (bench.ServerMeter);
// without, a typed error.
func TestServerUsage(t *testing.T) {
	e := newEnv(t, DatapathMemnet, memnet.Faults{}, 1)
	if _, _, err := e.srv.Usage(); !errors.Is(err, ErrUsageUnavailable) {
		t.Fatalf("unlocked server: Usage err = %v, want ErrUsageUnavailable", err)
	}

	srv, _, cn := udpServer(t, ServerConfig{Endpoints: 2, LockThread: true})
	var cpu0 time.Duration
	var n0 uint64
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; { // the endpoint goroutines record their threads when they start
		if cpu0, n0, err = srv.Usage(); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	runScript(t, cn)
	cpu1, n1, err := srv.Usage()
	if err != nil {
		t.Fatal(err)
	}
	if n1-n0 != uint64(len(script())) || cpu1 <= cpu0 {
		t.Fatalf("usage: %d requests (want %d), CPU %v -> %v", n1-n0, len(script()), cpu0, cpu1)
	}
	if _, err := srv.Sleeps(); err != nil {
		t.Fatalf("locked endpoint threads: Sleeps: %v", err)
	}
	if _, err := e.srv.Sleeps(); !errors.Is(err, ErrUsageUnavailable) {
		t.Fatalf("unlocked server: Sleeps err = %v, want ErrUsageUnavailable", err)
	}
}

// TestThreadCPUOf: another thread's CPU clock is readable by its id and
// agrees with its own CLOCK_THREAD_CPUTIME_ID and with schedstat's run time.
func TestThreadCPUOf(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := unix.Gettid()
	before, ok := cpuclock.ThreadOK()
	if !ok {
		t.Fatal("no thread CPU clock")
	}
	d, ok := cpuclock.Of(tid)
	if !ok {
		t.Fatal("threadCPUOf failed for a live thread")
	}
	after, _ := cpuclock.ThreadOK()
	if int64(d) < before || int64(d) > after {
		t.Fatalf("threadCPUOf = %d, not between the thread's own clock readings %d and %d", d, before, after)
	}
	if _, ok := cpuclock.Of(1 << 27); ok {
		t.Fatal("a CPU clock for a thread that does not exist")
	}
	if _, ok := cpuclock.Of(-1); ok {
		t.Fatal("a CPU clock for tid -1")
	}
}

// TestThreadSleeps: a thread's voluntary context switches (read from its
// /proc status) count its sleeps.
func TestThreadSleeps(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := unix.Gettid()
	n0, err := threadSleeps(tid)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		// A blocking system call: the thread itself sleeps.
		_ = unix.Nanosleep(&unix.Timespec{Nsec: int64(time.Millisecond)}, nil)
	}
	n1, err := threadSleeps(tid)
	if err != nil {
		t.Fatal(err)
	}
	if n1 < n0+5 {
		t.Fatalf("voluntary switches %d -> %d over 5 sleeps", n0, n1)
	}
	if _, err := threadSleeps(-1); err == nil {
		t.Fatal("no error for a thread that does not exist")
	}
}

// udpServer starts a server with cfg over real UDP (64 MiB of values), a
// client and one Cornflakes-hybrid connection to every endpoint; all three
// are closed in t.Cleanup, the server last (its Close fails while store
// memory is still referenced).
func udpServer(t *testing.T, cfg ServerConfig) (*Server, *Client, *Conn) {
	t.Helper()
	cfg.Datapath, cfg.PoolBytes = DatapathUDP, 64<<20
	srv, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("server close: %v", err)
		}
	})
	cl, err := NewClient(ClientConfig{Server: srv.Addr(), Endpoints: srv.Endpoints(), Datapath: DatapathUDP})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	cn, err := cl.Dial(CodecCFHybrid)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cn.Close() })
	return srv, cl, cn
}

// TestBusyPollServer: a busy-polling server over real UDP answers every
// request of the script correctly and reports its busy time per request
// through Usage (no locked threads needed; published every busyEpoch of
// loop time), corrected to thread CPU time (PollStats), and stops on Close.
func TestBusyPollServer(t *testing.T) {
	srv, _, cn := udpServer(t, ServerConfig{BusyPoll: true})
	busy0, n0, err := srv.Usage()
	if err != nil {
		t.Fatal(err)
	}
	runScript(t, cn)
	var busy1 time.Duration
	var n1 uint64
	for deadline := time.Now().Add(5 * time.Second); ; { // the next epoch publishes the script's busy time
		if busy1, n1, err = srv.Usage(); err != nil || busy1 > busy0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	if n1-n0 != uint64(len(script())) || busy1 <= busy0 {
		t.Fatalf("usage: %d requests (want %d), busy %v -> %v", n1-n0, len(script()), busy0, busy1)
	}
	p := srv.PollStats()
	if p.Epochs == 0 || p.CPU <= 0 || p.CPU > p.BusyWall || p.Unmeasured > p.Epochs {
		t.Fatalf("poll stats %+v: want epochs, 0 < CPU <= BusyWall, Unmeasured <= Epochs", p)
	}
	if p.CPU < busy1 {
		t.Fatalf("PollStats.CPU %v < Usage %v", p.CPU, busy1)
	}
	if _, err := srv.Sleeps(); !errors.Is(err, ErrUsageUnavailable) {
		t.Fatalf("busy-polling server: Sleeps err = %v, want ErrUsageUnavailable", err)
	}
}

// TestBusyMeterRemovesOffCPUTime: busy wall time during which the serving
// thread slept is not counted as CPU time, busy time spent computing is.
func TestBusyMeterRemovesOffCPUTime(t *testing.T) {
	runtime.LockOSThread() // one thread for the whole test: every epoch is measured
	defer runtime.UnlockOSThread()
	var st serverEP
	var m busyMeter
	m.tick(&st, time.Now())
	if m.tid == 0 {
		t.Fatal("no thread clock")
	}
	// An epoch of busy time spent asleep: ~no CPU.
	t0 := time.Now()
	time.Sleep(20 * time.Millisecond)
	now := time.Now()
	m.add(now.Sub(t0))
	m.tick(&st, now)
	if st.epochs.Load() != 1 || st.unmeasured.Load() != 0 {
		t.Fatalf("epochs %d, unmeasured %d: want 1, 0", st.epochs.Load(), st.unmeasured.Load())
	}
	wall, cpu := time.Duration(st.busyWall.Load()), time.Duration(st.busy.Load())
	if wall < 20*time.Millisecond || cpu > wall/2 {
		t.Fatalf("sleeping epoch: busy wall %v, CPU %v: want CPU < wall/2", wall, cpu)
	}
	// An epoch of busy time spent computing: CPU time, at most the wall time.
	t0 = time.Now()
	x := uint64(1)
	for time.Since(t0) < 5*time.Millisecond {
		for i := 0; i < 1000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	now = time.Now()
	m.add(now.Sub(t0))
	m.tick(&st, now)
	wall2, cpu2 := time.Duration(st.busyWall.Load())-wall, time.Duration(st.busy.Load())-cpu
	if x == 0 || cpu2 <= 0 || cpu2 > wall2 {
		t.Fatalf("spinning epoch: busy wall %v, CPU %v: want 0 < CPU <= wall", wall2, cpu2)
	}
	// An epoch younger than busyEpoch is not closed.
	m.add(time.Microsecond)
	m.tick(&st, now.Add(busyEpoch/2))
	if st.epochs.Load() != 2 {
		t.Fatalf("epochs %d after a short tick, want 2", st.epochs.Load())
	}
	// Pausing (before a yield) closes an epoch that has busy time, of any
	// age, and drops one that has none; resume starts the next.
	m.pause(&st, now.Add(busyEpoch/2))
	if st.epochs.Load() != 3 || st.busyWall.Load() != int64(wall+wall2+time.Microsecond) {
		t.Fatalf("after pause: epochs %d, busy wall %v", st.epochs.Load(), time.Duration(st.busyWall.Load()))
	}
	m.resume()
	if m.start.IsZero() || m.tid == 0 {
		t.Fatal("resume started no measured epoch")
	}
	m.pause(&st, time.Now())
	m.resume()
	if st.epochs.Load() != 3 || st.unmeasured.Load() != 0 {
		t.Fatalf("an epoch without busy time was published: epochs %d, unmeasured %d", st.epochs.Load(), st.unmeasured.Load())
	}
}

// thresholdEP is a datapath that reports a hybrid threshold (the rest of
// datapath.Endpoint is not used by newCodecOn).
type thresholdEP struct {
	datapath.Endpoint
	t int
}

func (e thresholdEP) HybridThreshold() int { return e.t }

// TestHybridThresholdFollowsDatapath: the hybrid Cornflakes codecs copy
// below the datapath's calibrated threshold unless configured otherwise;
// copy, zerocopy and the baselines are unaffected.
func TestHybridThresholdFollowsDatapath(t *testing.T) {
	for _, c := range []struct {
		codec     Codec
		dp        datapath.Endpoint
		override  int
		threshold int // -1: not a Cornflakes codec
	}{
		{CodecCFHybrid, thresholdEP{t: 16384}, 0, 16384},
		{CodecCFHybridFlat, thresholdEP{t: 2048}, 0, 2048},
		{CodecCFHybrid, thresholdEP{t: 16384}, 700, 700},
		{CodecCFHybrid, thresholdEP{}, 0, 0},           // a datapath may ask for everything zero-copy
		{CodecCFHybrid, nil, 0, wire.DefaultThreshold}, // no HybridThresholder
		{CodecCFCopy, thresholdEP{t: 16384}, 0, wire.CopyAll},
		{CodecCFZeroCopy, thresholdEP{t: 16384}, 700, 0},
		{CodecProtobuf, thresholdEP{t: 16384}, 0, -1},
	} {
		cd, err := newCodecOn(c.codec, c.dp, c.override)
		if err != nil {
			t.Fatal(err)
		}
		got := -1
		if cf, ok := cd.(*cfCodec); ok {
			got = cf.a.Threshold
		}
		if got != c.threshold {
			t.Errorf("%v on %T (override %d): threshold %d, want %d", c.codec, c.dp, c.override, got, c.threshold)
		}
	}
	// The real datapaths report their calibrated values.
	for dp, want := range map[string]int{DatapathUDP: udp.HybridThresholdUDP, DatapathMemnet: memnet.HybridThresholdMemnet} {
		e := newEnv(t, dp, memnet.Faults{}, 1)
		cd := e.srv.eps[0].codecs[CodecCFHybrid].(*cfCodec)
		if cd.a.Threshold != want {
			t.Errorf("%s server: hybrid threshold %d, want %d", dp, cd.a.Threshold, want)
		}
	}
}

// The connections a Target dials for one load-generator client reuse that
// client's pools, one connection at a time, so that only the first pays
// for committing their regions; every buffer is back in the pools after
// each Close, a second connection of the same client while the first is
// open gets pools of its own, and Client.Close closes the kept pools.
func TestTargetConnectionsKeepPools(t *testing.T) {
	srv, cl, cn := udpServer(t, ServerConfig{})
	if err := cn.Close(); err != nil { // Client.Close below wants every connection closed
		t.Fatal(err)
	}
	target := cl.Target(CodecCFHybrid)
	dial := func(i int) *Conn {
		t.Helper()
		c, err := target.Dial(i)
		if err != nil {
			t.Fatal(err)
		}
		return c.(*Conn)
	}
	a := dial(0)
	runScript(t, a)
	pools := a.pools
	if pools == nil {
		t.Fatal("a Target connection has no kept pools")
	}
	regions := pools.dp.Stats().Regions + pools.rpc.Stats().Regions
	concurrent := dial(0) // client 0's first connection is still open
	if concurrent.pools != nil {
		t.Error("a second open connection of client 0 shares its pools")
	}
	if err := concurrent.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if n, m := pools.dp.InUse(), pools.rpc.InUse(); n != 0 || m != 0 {
		t.Fatalf("%d datapath and %d rpc buffers in use after Close", n, m)
	}
	b := dial(0)
	if b.pools != pools {
		t.Fatal("client 0's next connection did not get its pools back")
	}
	if err := srv.Clear(); err != nil {
		t.Fatal(err)
	}
	runScript(t, b)
	if got := pools.dp.Stats().Regions + pools.rpc.Stats().Regions; got != regions {
		t.Errorf("the same script grew the kept pools again: %d regions, then %d", regions, got)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := cl.Close(); err != nil {
		t.Fatal(err)
	}
	if !pools.dp.Stats().Closed || !pools.rpc.Stats().Closed {
		t.Error("Client.Close left the kept pools open")
	}
}

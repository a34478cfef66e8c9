package resp

import (
	"bytes"
	"encoding/binary"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// loopSim serves a connection of a server as an event loop does (read,
// answer, write) without a socket: a read copies the next bytes of the
// stream into the room, or, with scatter set, into the segments that
// scatterPrep prepared, in order, as readv does.
type loopSim struct {
	t       testing.TB
	cn      *conn
	w       io.Writer
	scatter bool
}

func newLoopSim(t testing.TB, srv *Server, w io.Writer, scatter bool) *loopSim {
	cn := srv.newConn(nil)
	cn.sc.on = scatter
	return &loopSim{t: t, cn: cn, w: w, scatter: scatter}
}

// close releases what the connection holds.
func (ls *loopSim) close() {
	ls.cn.out.release()
	ls.cn.releaseBig()
}

// feed serves stream in reads of at most the sizes of splits (cycled; 0
// or none: the whole room); false once the connection would be closed.
func (ls *loopSim) feed(stream []byte, splits []int) bool {
	cn := ls.cn
	for k := 0; ; k++ {
		st := cn.process()
		if err := cn.out.flush(ls.w); err != nil {
			ls.t.Fatal(err)
		}
		switch st {
		case stFull:
			continue
		case stProtoErr, stQuit:
			return false
		case stBlocked, stOverLimit:
			ls.t.Fatalf("unexpected step %d", st)
		}
		if cn.r == cn.w {
			cn.r, cn.w = 0, 0
		}
		if len(stream) == 0 {
			return true
		}
		if !cn.makeRoom() {
			ls.t.Fatal("makeRoom failed")
		}
		room := cn.readRoom()
		n := min(len(stream), len(room))
		if len(splits) > 0 && splits[k%len(splits)] > 0 {
			n = min(n, splits[k%len(splits)])
		}
		if ls.scatter && cn.scatterPrep(room) {
			off := 0
			for _, s := range cn.sc.segs {
				off += copy(s, stream[off:n])
			}
			if off != n {
				ls.t.Fatalf("segments hold %d bytes, read %d", off, n)
			}
			cn.scatterDone(n)
		} else {
			copy(room, stream[:n])
		}
		cn.filled = n == len(room)
		cn.w += n
		stream = stream[n:]
	}
}

// scatterRun serves stream on a new connection of srv (loopSim) and
// returns the replies.
func scatterRun(t testing.TB, srv *Server, stream []byte, splits []int, scatter bool) []byte {
	t.Helper()
	var out bytes.Buffer
	ls := newLoopSim(t, srv, &out, scatter)
	defer ls.close()
	ls.feed(stream, splits)
	return out.Bytes()
}

// scatterStream builds a pipeline from the fuzzer's bytes: runs (of 1 to
// 16 commands) of SETs, GETs, MSETs, APPENDs and inline SETs of values
// around the scatter threshold (every value's bytes distinct), then a GET
// of every key.
func scatterStream(ops []byte) []byte {
	var b bytes.Buffer
	sizes := []int{100, scatterMin - 1, scatterMin, 1500, 4096, 4097, 8000}
	val := func(i, n int) []byte {
		v := make([]byte, n)
		for j := range v {
			v[j] = byte('a' + (i+j)%26)
		}
		return v
	}
	seq := 0
	for i := 0; i+1 < len(ops) && seq < 400; i += 2 {
		op, arg := ops[i], ops[i+1]
		key := []byte("k" + strconv.Itoa(int(arg%4)))
		size := sizes[int(arg>>2)%len(sizes)]
		for range 1 + int(op>>3)%16 {
			seq++
			v := val(seq, size)
			switch op % 8 {
			case 0, 1, 2, 3:
				b.Write(encode([]byte("SET"), key, v))
			case 4:
				b.Write(encode([]byte("GET"), key))
			case 5:
				b.Write(encode([]byte("MSET"), key, v, []byte("k9"), val(seq+1, len(v))))
			case 6:
				b.Write(encode([]byte("APPEND"), key, v))
			case 7:
				b.WriteString("SET " + string(key) + " " + string(v[:min(len(v), 2000)]) + "\r\n")
			}
		}
	}
	for k := range 4 {
		b.Write(encode([]byte("GET"), []byte("k"+strconv.Itoa(k))))
	}
	b.Write(encode([]byte("GET"), []byte("k9")))
	return b.Bytes()
}

func scatterServer(t testing.TB) *Server {
	p := memtest.NewPool(t, mem.PoolConfig{Name: "scatter", Concurrent: true, MaxBytes: 64 << 20})
	srv, err := NewServer(Config{Pool: p, CommandTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// checkScatter serves stream with and without scatter reads and compares
// the replies; every pool buffer must be back once the keys are gone.
func checkScatter(t testing.TB, srv *Server, stream []byte, splits []int) {
	t.Helper()
	srv.FlushAll()
	want := scatterRun(t, srv, stream, splits, false)
	srv.FlushAll()
	got := scatterRun(t, srv, stream, splits, true)
	srv.FlushAll()
	if !bytes.Equal(got, want) {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		t.Fatalf("replies differ at byte %d of %d/%d: scatter %.80q, plain %.80q", i, len(got), len(want), got[i:], want[i:])
	}
	if n := srv.pool.InUse(); n != 0 {
		t.Fatalf("%d pool items in use after FLUSHALL", n)
	}
}

// TestScatterReads: pipelines of SETs are received into the values' own
// buffers (scatter reads predicted from the last commands' layout), and
// mispredicted layouts (other lengths, other commands, reads split
// anywhere) answer exactly as plain reads do.
func TestScatterReads(t *testing.T) {
	srv := scatterServer(t)
	v := bytes.Repeat([]byte("v"), 4096)
	set := encode([]byte("SET"), []byte("key:__rand_int__"), v)
	batch := bytes.Repeat(set, 16)
	// Whole batches: the first is learned, the others predicted.
	var stream []byte
	for range 5 {
		stream = append(stream, batch...)
	}
	before := srv.Stats()
	checkScatter(t, srv, stream, []int{len(batch)})
	st := srv.Stats()
	// The first batches are read while the buffer grows (from initBuf).
	if got := st.Scattered - before.Scattered; got < 3*16 || got > 4*16 {
		t.Errorf("%d values received by scatter reads, want 48-64", got)
	}
	if st.Mispredicted != before.Mispredicted {
		t.Errorf("%d values mispredicted", st.Mispredicted-before.Mispredicted)
	}
	// The value stored is the buffer received (kept without a copy).
	if srv.ks.gifted == 0 {
		t.Error("no scatter value kept by the keyspace")
	}
	// Mispredicted: a value of another length, then another command.
	other := encode([]byte("SET"), []byte("key:__rand_int__"), v[:4000])
	get := encode([]byte("GET"), []byte("key:__rand_int__"))
	stream = append(append(append([]byte(nil), batch...), other...), batch[len(set):]...)
	stream = append(append(stream, get...), batch...)
	before = srv.Stats()
	checkScatter(t, srv, stream, []int{len(batch), len(other) + len(batch) - len(set), len(get) + len(batch)})
	if st := srv.Stats(); st.Mispredicted == before.Mispredicted {
		t.Error("no value mispredicted")
	}
	// Reads split inside values and headers.
	for _, split := range []int{1000, 4113, 4117, 4130, 4135, 7000, 30000} {
		checkScatter(t, srv, stream, []int{len(batch), split})
	}
}

// FuzzScatter mixes commands of changing layouts with reads split
// anywhere and checks the replies against plain reads.
func FuzzScatter(f *testing.F) {
	f.Add([]byte{0x78, 16, 0x78, 16, 0x78, 16, 0x78, 16}, []byte{0, 0})
	f.Add([]byte{0x78, 16, 0x78, 16, 0x39, 16, 4, 0, 0x78, 16, 0x78, 16, 0x2d, 12, 0x78, 16, 0x78, 16}, []byte{0x10, 0, 0x33, 0x11})
	f.Add([]byte{0x78, 12, 0x78, 12, 0x78, 12, 0x78, 20, 0x78, 12, 7, 12, 0x78, 12, 0x78, 12, 6, 8, 0x78, 12}, []byte{0x40, 0x1f, 0x05, 0x10})
	f.Add([]byte{0x7d, 16, 0x7d, 16, 0x7d, 16, 0x7d, 20, 0x7d, 16, 0x7d, 16}, []byte{0x00, 0x30, 0x07, 0x00})
	f.Add([]byte{0x78, 24, 0x78, 24, 0x78, 16, 0x78, 24, 0x78, 24}, []byte{0x00, 0x00, 0x35, 0x10, 0xe8, 0x03})
	srv := scatterServer(f)
	f.Fuzz(func(t *testing.T, ops, split []byte) {
		stream := scatterStream(ops)
		var splits []int
		for i := 0; i+1 < len(split) && i < 16; i += 2 {
			splits = append(splits, int(binary.LittleEndian.Uint16(split[i:])))
		}
		checkScatter(t, srv, stream, splits)
	})
}

// TestScatterSwapHeld: a value that a scatter value replaces goes to the
// connection's spares (to receive a next value) only while no reply holds
// it: a zero-copy GET reply of another connection, not yet written, still
// sends the old bytes after the SETs of later scatter reads.
func TestScatterSwapHeld(t *testing.T) {
	srv := scatterServer(t)
	key := []byte("key:__rand_int__")
	batch := func(c byte) []byte {
		return bytes.Repeat(encode([]byte("SET"), key, bytes.Repeat([]byte{c}, 4096)), 16)
	}
	var sink bytes.Buffer
	b := newLoopSim(t, srv, &sink, true)
	defer b.close()
	for range 4 { // learn the layout, fill the spares
		b.feed(batch('a'), nil)
	}
	if srv.Stats().Scattered == 0 || len(b.cn.sc.spares) == 0 {
		t.Fatalf("no scatter values (%d) or no spares (%d)", srv.Stats().Scattered, len(b.cn.sc.spares))
	}
	// A's GET reply holds the value's item (zero-copy), unwritten.
	a := srv.newConn(nil)
	defer a.out.release()
	a.in = append(a.in[:0], encode([]byte("GET"), key)...)
	a.w = len(a.in)
	if st := a.process(); st != stInput || !a.out.pending() {
		t.Fatalf("GET: step %d, pending %v", st, a.out.pending())
	}
	for _, c := range []byte("bcd") {
		b.feed(batch(c), nil)
	}
	var got bytes.Buffer
	if err := a.out.flush(&got); err != nil {
		t.Fatal(err)
	}
	if want := "$4096\r\n" + strings.Repeat("a", 4096) + "\r\n"; got.String() != want {
		t.Fatalf("the GET reply changed under later SETs: %.40q...", got.String())
	}
	if n := len(b.cn.sc.spares); n > maxSpares || b.cn.sc.spareBytes > maxSpareBytes {
		t.Fatalf("%d spares of %d bytes", n, b.cn.sc.spareBytes)
	}
}

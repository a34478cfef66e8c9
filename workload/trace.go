package workload

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
)

// Limits of the Twitter trace reader. A line or field beyond them is an
// error (ErrTrace), never an allocation driven by the input.
const (
	// MaxTraceLineBytes is the longest trace line accepted.
	MaxTraceLineBytes = 4096
	// MaxTraceKeyBytes is the longest key accepted.
	MaxTraceKeyBytes = 1024
	// MaxTraceValueBytes is the largest value size accepted (memcached's 1 MiB item limit).
	MaxTraceValueBytes = 1 << 20
	// MaxTraceRequests bounds how many requests TwitterTrace keeps in memory.
	MaxTraceRequests = 50_000_000
)

// TraceOp is the operation column of the Twitter cache trace.
type TraceOp uint8

// The operations of the trace (twitter/cache-trace README).
const (
	TraceGet TraceOp = iota + 1
	TraceGets
	TraceSet
	TraceAdd
	TraceReplace
	TraceCas
	TraceAppend
	TracePrepend
	TraceDelete
	TraceIncr
	TraceDecr
)

var traceOps = map[string]TraceOp{
	"get": TraceGet, "gets": TraceGets, "set": TraceSet, "add": TraceAdd, "replace": TraceReplace,
	"cas": TraceCas, "append": TraceAppend, "prepend": TracePrepend, "delete": TraceDelete,
	"incr": TraceIncr, "decr": TraceDecr,
}

// String returns the trace's name of the operation.
func (o TraceOp) String() string {
	for k, v := range traceOps {
		if v == o {
			return k
		}
	}
	return fmt.Sprintf("traceop(%d)", uint8(o))
}

// KVOp maps a trace operation to a store operation as Cornflakes does
// (cf-kv/src/twitter.rs): get and gets are Get, set and add are Put; the
// others have no counterpart and return OpInvalid.
func (o TraceOp) KVOp() Op {
	switch o {
	case TraceGet, TraceGets:
		return OpGet
	case TraceSet, TraceAdd:
		return OpPut
	}
	return OpInvalid
}

// TraceRecord is one line of the Twitter cache trace:
// time,key,key_size,value_size,client_id,op,ttl.
type TraceRecord struct {
	Time      int64  // seconds since the start of the trace
	Key       []byte // anonymized key; aliases the reader's buffer until the next call
	KeySize   int    // original key size in bytes
	ValueSize int    // value size in bytes
	ClientID  uint64 // anonymized client
	Op        TraceOp
	TTL       int64 // seconds; 0 for reads
}

// TraceReader reads the Twitter cache trace's CSV format (after zstd
// decompression), one record per line. Empty lines and lines starting with
// '#' are skipped, and so is a CSV header line ("time,..." or
// "timestamp,...") on line 1.
type TraceReader struct {
	r    *bufio.Reader
	line int
}

// NewTraceReader returns a reader of r.
func NewTraceReader(r io.Reader) *TraceReader {
	return &TraceReader{r: bufio.NewReaderSize(r, MaxTraceLineBytes)}
}

// Line returns the number of the line last read (1-based).
func (t *TraceReader) Line() int { return t.line }

// Next reads the next record into rec. It returns io.EOF at the end, and an
// error wrapping ErrTrace for a malformed line (the reader may continue with
// the next line after such an error).
func (t *TraceReader) Next(rec *TraceRecord) error {
	for {
		line, err := t.r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			t.line++
			// skip the rest of the overlong line
			for err == bufio.ErrBufferFull {
				_, err = t.r.ReadSlice('\n')
			}
			if err != nil && err != io.EOF {
				return err
			}
			return fmt.Errorf("%w: line %d longer than %d bytes", ErrTrace, t.line, MaxTraceLineBytes)
		}
		if err != nil && err != io.EOF {
			return err
		}
		if len(line) == 0 && err == io.EOF {
			return io.EOF
		}
		t.line++
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 || line[0] == '#' || (t.line == 1 && (bytes.HasPrefix(line, []byte("time,")) || bytes.HasPrefix(line, []byte("timestamp,")))) {
			if err == io.EOF {
				return io.EOF
			}
			continue
		}
		return parseTraceLine(line, t.line, rec)
	}
}

func parseTraceLine(line []byte, n int, rec *TraceRecord) error {
	var f [7][]byte
	rest := line
	for i := range 6 {
		j := bytes.IndexByte(rest, ',')
		if j < 0 {
			return fmt.Errorf("%w: line %d: %d fields, want 7 (time,key,key_size,value_size,client_id,op,ttl)", ErrTrace, n, i+1)
		}
		f[i], rest = rest[:j], rest[j+1:]
	}
	if bytes.IndexByte(rest, ',') >= 0 {
		return fmt.Errorf("%w: line %d: more than 7 fields", ErrTrace, n)
	}
	f[6] = rest
	num := func(i int, name string, lim int64) (int64, error) {
		v, err := strconv.ParseInt(string(bytes.TrimSpace(f[i])), 10, 64)
		if err != nil || v < 0 || v > lim {
			return 0, fmt.Errorf("%w: line %d: %s %q not an integer in [0, %d]", ErrTrace, n, name, f[i], lim)
		}
		return v, nil
	}
	var err error
	if rec.Time, err = num(0, "time", 1<<62); err != nil {
		return err
	}
	key := f[1]
	if len(key) == 0 || len(key) > MaxTraceKeyBytes {
		return fmt.Errorf("%w: line %d: key of %d bytes (want 1..%d)", ErrTrace, n, len(key), MaxTraceKeyBytes)
	}
	rec.Key = key
	ks, err := num(2, "key_size", MaxTraceKeyBytes)
	if err != nil {
		return err
	}
	rec.KeySize = int(ks)
	vs, err := num(3, "value_size", MaxTraceValueBytes)
	if err != nil {
		return err
	}
	rec.ValueSize = int(vs)
	cid, err := strconv.ParseUint(string(bytes.TrimSpace(f[4])), 10, 64)
	if err != nil {
		return fmt.Errorf("%w: line %d: client_id %q not an unsigned integer", ErrTrace, n, f[4])
	}
	rec.ClientID = cid
	op, ok := traceOps[string(bytes.TrimSpace(f[5]))]
	if !ok {
		return fmt.Errorf("%w: line %d: unknown op %q", ErrTrace, n, f[5])
	}
	rec.Op = op
	if rec.TTL, err = num(6, "ttl", 1<<62); err != nil {
		return err
	}
	return nil
}

// TraceConfig configures replay of a real Twitter trace file.
type TraceConfig struct {
	Path        string    // trace file (decompressed CSV); used when Reader is nil
	Reader      io.Reader // alternative source
	MaxRequests int       // requests kept, from the start (default 1000000; max MaxTraceRequests)
	PreloadKeys int       // first unique keys preloaded, with their first size (default 4000000, as the paper)
	ChunkSize   int       // values larger are split into key0,key1,... (default 8192)
	// Strict makes unsupported ops (not get/gets/set/add) an error instead of skipping them.
	Strict bool
}

// TwitterTrace replays a Twitter cache trace: requests in trace order,
// sharded to clients by client_id modulo the client count (as Cornflakes
// does; by line when some client would get nothing), each client looping
// over its share. Preload loads the first PreloadKeys unique keys with the
// value size they first appear with. Keys that are written with another
// size, or are never preloaded, are mutable in the model.
type TwitterTrace struct {
	cfg     TraceConfig
	keys    [][]byte // interned keys
	sizes   []int32  // preload size of each key (-1: not preloaded)
	recs    []traceReq
	model   *Model
	skipped int
}

type traceReq struct {
	key    uint32
	size   int32
	client uint32
	put    bool
}

// NewTwitterTrace reads the trace and builds the workload.
func NewTwitterTrace(c TraceConfig) (*TwitterTrace, error) {
	if c.MaxRequests == 0 {
		c.MaxRequests = 1_000_000
	}
	if c.PreloadKeys == 0 {
		c.PreloadKeys = 4_000_000
	}
	if c.ChunkSize == 0 {
		c.ChunkSize = 8192
	}
	switch {
	case c.MaxRequests < 1 || c.MaxRequests > MaxTraceRequests:
		return nil, fmt.Errorf("%w: trace requests %d out of range [1, %d]", ErrBadSpec, c.MaxRequests, MaxTraceRequests)
	case c.PreloadKeys < 0:
		return nil, fmt.Errorf("%w: trace preload keys %d < 0", ErrBadSpec, c.PreloadKeys)
	case c.ChunkSize < 64 || c.ChunkSize > 1<<20:
		return nil, fmt.Errorf("%w: trace chunk size %d out of range [64, 1 MiB]", ErrBadSpec, c.ChunkSize)
	}
	src := c.Reader
	if src == nil {
		if c.Path == "" {
			return nil, fmt.Errorf("%w: twitter-trace needs path=FILE", ErrBadSpec)
		}
		f, err := os.Open(c.Path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		src = f
	}
	t := &TwitterTrace{cfg: c, model: NewModel()}
	index := map[string]uint32{}
	tr := NewTraceReader(src)
	var rec TraceRecord
	for len(t.recs) < c.MaxRequests {
		err := tr.Next(&rec)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		op := rec.Op.KVOp()
		if op == OpInvalid {
			if c.Strict {
				return nil, fmt.Errorf("%w: line %d: op %s is not supported (get, gets, set, add)", ErrTrace, tr.Line(), rec.Op)
			}
			t.skipped++
			continue
		}
		if rec.ValueSize == 0 && op == OpPut {
			rec.ValueSize = 1 // an empty value carries nothing to check; store one byte
		}
		id, ok := index[string(rec.Key)]
		if !ok {
			id = uint32(len(t.keys))
			index[string(rec.Key)] = id
			t.keys = append(t.keys, bytes.Clone(rec.Key))
			sz := int32(-1)
			if len(t.keys) <= c.PreloadKeys && rec.ValueSize > 0 {
				sz = int32(rec.ValueSize)
			}
			t.sizes = append(t.sizes, sz)
		}
		t.recs = append(t.recs, traceReq{key: id, size: int32(rec.ValueSize), client: uint32(rec.ClientID), put: op == OpPut})
	}
	if len(t.recs) == 0 {
		return nil, fmt.Errorf("%w: no get/set requests in the trace", ErrTrace)
	}
	// model: preloaded keys exact; keys written with another size, or never
	// preloaded, mutable (both the key and its chunk keys).
	maxPut := make([]int32, len(t.keys)) // largest size written with another size than preloaded
	for _, r := range t.recs {
		if r.put && (t.sizes[r.key] < 0 || r.size != t.sizes[r.key]) {
			maxPut[r.key] = max(maxPut[r.key], r.size, t.sizes[r.key])
		}
	}
	var key []byte
	for id, k := range t.keys {
		if t.sizes[id] >= 0 {
			t.forChunks(k, int(t.sizes[id]), func(ck []byte, n int) { t.model.Set(ck, n) })
		}
		if maxPut[id] > 0 {
			// other sizes are written: mark the key and every chunk key it may use
			key = append(key[:0], k...)
			t.model.MarkMutable(key)
			for j := range (int(maxPut[id]) + c.ChunkSize - 1) / c.ChunkSize {
				key = strconv.AppendInt(append(key[:0], k...), int64(j), 10)
				t.model.MarkMutable(key)
			}
		}
	}
	return t, nil
}

// forChunks calls fn with the key of each chunk of a value of size v and the chunk size.
func (t *TwitterTrace) forChunks(k []byte, v int, fn func(ck []byte, n int)) {
	c := t.cfg.ChunkSize
	if v <= c {
		fn(k, v)
		return
	}
	key := make([]byte, 0, len(k)+8)
	for j := 0; j*c < v; j++ {
		key = strconv.AppendInt(append(key[:0], k...), int64(j), 10)
		fn(key, min(c, v-j*c))
	}
}

// Skipped returns how many trace lines were skipped for unsupported ops.
func (t *TwitterTrace) Skipped() int { return t.skipped }

// Requests returns how many requests were loaded.
func (t *TwitterTrace) Requests() int { return len(t.recs) }

// Name implements Workload.
func (t *TwitterTrace) Name() string {
	return fmt.Sprintf("twitter-trace:path=%s,requests=%d,preload=%d,chunk=%d", t.cfg.Path, t.cfg.MaxRequests, t.cfg.PreloadKeys, t.cfg.ChunkSize)
}

// Unit implements Workload.
func (t *TwitterTrace) Unit() string { return UnitRequests }

// Model implements Workload.
func (t *TwitterTrace) Model() *Model { return t.model }

// Preload implements Workload: one Put per chunk key of each preloaded key.
func (t *TwitterTrace) Preload(fn func(*Request) error) error {
	var req Request
	var err error
	for id, k := range t.keys {
		if t.sizes[id] < 0 {
			continue
		}
		t.forChunks(k, int(t.sizes[id]), func(ck []byte, n int) {
			if err == nil {
				err = preloadValue(&req, ck, n, fn)
			}
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// NewStream implements Workload.
func (t *TwitterTrace) NewStream(client, clients int, seed uint64) Stream {
	if clients < 1 {
		clients = 1
	}
	var mine []int32
	byClient := true
	counts := make([]int, clients)
	for _, r := range t.recs {
		counts[int(r.client%uint32(clients))]++
	}
	for _, n := range counts {
		if n == 0 {
			byClient = false
		}
	}
	for i, r := range t.recs {
		if (byClient && int(r.client%uint32(clients)) == client) || (!byClient && i%clients == client) {
			mine = append(mine, int32(i))
		}
	}
	if len(mine) == 0 { // fewer requests than clients: share the whole trace
		for i := range t.recs {
			mine = append(mine, int32(i))
		}
	}
	return &traceStream{t: t, mine: mine, pos: -1}
}

type traceStream struct {
	t       *TwitterTrace
	mine    []int32
	pos     int
	chunk   int // next chunk of the current request
	nchunks int
}

func (s *traceStream) Next(req *Request) {
	t := s.t
	if s.chunk >= s.nchunks {
		s.pos++
		if s.pos >= len(s.mine) {
			s.pos = 0
		}
		r := t.recs[s.mine[s.pos]]
		v := int(r.size)
		if !r.put && t.sizes[r.key] >= 0 {
			v = int(t.sizes[r.key]) // a get's chunks follow the stored object
		}
		s.chunk, s.nchunks = 0, max(1, (v+t.cfg.ChunkSize-1)/t.cfg.ChunkSize)
	}
	r := t.recs[s.mine[s.pos]]
	j := s.chunk
	s.chunk++
	k := t.keys[r.key]
	if r.put {
		req.reset(OpPut)
	} else {
		req.reset(OpGet)
	}
	st := req.beginKey()
	req.buf = append(req.buf, k...)
	if s.nchunks > 1 {
		req.buf = strconv.AppendInt(req.buf, int64(j), 10)
	}
	req.endKey(st)
	if r.put {
		req.addValue(0, 0, min(t.cfg.ChunkSize, int(r.size)-j*t.cfg.ChunkSize))
	}
	req.finish()
}

package workload

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// Workload is a deterministic key-value workload.
type Workload interface {
	// Name returns the canonical spec of the workload (Parse(Name()) rebuilds it).
	Name() string
	// Unit names what Request.Units counts: "requests", or "objects" for cdn.
	Unit() string
	// Preload calls fn with each request (Put, PutList or AppendToList) that
	// loads the initial data set into an empty server, in a fixed order.
	// The Request is reused between calls: fn must not retain it.
	// An error from fn stops the preload and is returned.
	Preload(fn func(*Request) error) error
	// Model returns the reference model of the preloaded data (read-only).
	Model() *Model
	// NewStream returns the request stream of client (0 <= client < clients).
	// The same (client, clients, seed) always yields the same requests.
	NewStream(client, clients int, seed uint64) Stream
}

// Stream produces requests. A Stream is used by one goroutine.
type Stream interface {
	// Next fills req with the next request, reusing req's scratch memory
	// (no allocation once the scratch has grown).
	Next(req *Request)
}

// Unit names.
const (
	UnitRequests = "requests"
	UnitObjects  = "objects"
)

// DefaultPreloadBatchBytes bounds the value bytes of one preload request:
// lists larger than this are loaded as PutList followed by AppendToList.
const DefaultPreloadBatchBytes = 64 << 10

// Names returns the workload names Parse accepts.
func Names() []string {
	return []string{"cdn", "google", "twitter", "twitter-trace", "ycsb"}
}

// Parse builds a workload from a spec "name" or "name:key=value,key=value".
// Keys per workload (defaults in brackets):
//
//	ycsb:          records [100000], shape NxM [1x4096], layout single|list|multi [single for N=1, else list], update [0]
//	google:        keys [100000], values MIN-MAX inclusive [1-7], keysize [64], maxtotal [8192]
//	twitter:       keys [100000], get [0.93], zipf [1.1004], keysize [67], valuesize [2439], chunk [8192]
//	twitter-trace: path (required), requests [1000000], preload [4000000], chunk [8192]
//	cdn:           objects [10000], segment [8000], keysize [64], maxobject [4096000], popularity true|false [true], preloadbatch [65536]
func Parse(spec string) (Workload, error) {
	name, rest, _ := strings.Cut(spec, ":")
	opts, err := parseOpts(rest)
	if err != nil {
		return nil, err
	}
	var w Workload
	switch name {
	case "ycsb":
		var c YCSBConfig
		c.Records = opts.int("records", 0)
		if s, ok := opts.take("shape"); ok {
			c.NumValues, c.ValueSize, err = ParseShape(s)
			if err != nil {
				return nil, err
			}
		}
		if s, ok := opts.take("layout"); ok {
			c.Layout = Layout(s)
		}
		c.UpdateFraction = opts.float("update", 0)
		if opts.err == nil {
			if err := opts.done(); err != nil {
				return nil, err
			}
			w, err = NewYCSB(c)
		}
	case "google":
		var c GoogleConfig
		c.Keys = opts.int("keys", 0)
		if s, ok := opts.take("values"); ok {
			lo, hi, ok := strings.Cut(s, "-")
			if !ok {
				hi = lo
			}
			c.MinValues, err = strconv.Atoi(lo)
			if err == nil {
				c.MaxValues, err = strconv.Atoi(hi)
			}
			if err != nil {
				return nil, fmt.Errorf("%w: google values %q: want MIN-MAX", ErrBadSpec, s)
			}
		}
		c.KeySize = opts.int("keysize", 0)
		c.MaxTotal = opts.int("maxtotal", 0)
		if opts.err == nil {
			if err := opts.done(); err != nil {
				return nil, err
			}
			w, err = NewGoogle(c)
		}
	case "twitter":
		var c TwitterConfig
		c.Keys = opts.int("keys", 0)
		c.GetFraction = opts.float("get", 0)
		c.ZipfS = opts.float("zipf", 0)
		c.MeanKeySize = opts.int("keysize", 0)
		c.MeanValueSize = opts.int("valuesize", 0)
		c.ChunkSize = opts.int("chunk", 0)
		if opts.err == nil {
			if err := opts.done(); err != nil {
				return nil, err
			}
			w, err = NewTwitter(c)
		}
	case "twitter-trace":
		var c TraceConfig
		c.Path, _ = opts.take("path")
		c.MaxRequests = opts.int("requests", 0)
		c.PreloadKeys = opts.int("preload", 0)
		c.ChunkSize = opts.int("chunk", 0)
		if opts.err == nil {
			if err := opts.done(); err != nil {
				return nil, err
			}
			w, err = NewTwitterTrace(c)
		}
	case "cdn":
		var c CDNConfig
		c.Objects = opts.int("objects", 0)
		c.SegmentSize = opts.int("segment", 0)
		c.KeySize = opts.int("keysize", 0)
		c.MaxObjectBytes = opts.int("maxobject", 0)
		c.PreloadBatchBytes = opts.int("preloadbatch", 0)
		if s, ok := opts.take("popularity"); ok {
			b, perr := strconv.ParseBool(s)
			if perr != nil {
				return nil, fmt.Errorf("%w: cdn popularity %q", ErrBadSpec, s)
			}
			c.NoPopularity = !b
		}
		if opts.err == nil {
			if err := opts.done(); err != nil {
				return nil, err
			}
			w, err = NewCDN(c)
		}
	default:
		return nil, fmt.Errorf("%w: unknown workload %q (have %s)", ErrBadSpec, name, strings.Join(Names(), ", "))
	}
	if opts.err != nil {
		return nil, opts.err
	}
	if err != nil {
		return nil, err
	}
	return w, nil
}

// ParseShape parses a value shape "NxM": N values of M bytes.
func ParseShape(s string) (n, m int, err error) {
	a, b, ok := strings.Cut(s, "x")
	if ok {
		n, err = strconv.Atoi(a)
		if err == nil {
			m, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil || n < 1 || m < 1 {
		return 0, 0, fmt.Errorf("%w: shape %q: want NxM, e.g. 2x2048", ErrBadSpec, s)
	}
	return n, m, nil
}

type opts struct {
	m   map[string]string
	err error
}

func parseOpts(s string) (*opts, error) {
	o := &opts{m: map[string]string{}}
	if s == "" {
		return o, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%w: option %q: want key=value", ErrBadSpec, kv)
		}
		if _, dup := o.m[k]; dup {
			return nil, fmt.Errorf("%w: option %q given twice", ErrBadSpec, k)
		}
		o.m[k] = v
	}
	return o, nil
}

func (o *opts) take(k string) (string, bool) {
	v, ok := o.m[k]
	delete(o.m, k)
	return v, ok
}

func (o *opts) int(k string, def int) int {
	v, ok := o.take(k)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil && o.err == nil {
		o.err = fmt.Errorf("%w: option %s=%q: not an integer", ErrBadSpec, k, v)
	}
	return n
}

func (o *opts) float(k string, def float64) float64 {
	v, ok := o.take(k)
	if !ok {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil && o.err == nil {
		o.err = fmt.Errorf("%w: option %s=%q: not a number", ErrBadSpec, k, v)
	}
	return f
}

func (o *opts) done() error {
	if len(o.m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(o.m))
	for k := range o.m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return fmt.Errorf("%w: unknown option(s) %s", ErrBadSpec, strings.Join(keys, ", "))
}

// newRand returns a deterministic generator for (seed, stream).
func newRand(seed, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed^0x243F6A8885A308D3, stream*0x9E3779B97F4A7C15+1))
}

// appendPaddedKey appends prefix+decimal(idx) padded with pad to size bytes
// (Cornflakes' "key_<idx>" padded with 'a'). Longer keys are not truncated.
func appendPaddedKey(dst []byte, prefix string, idx int, size int, pad byte) []byte {
	start := len(dst)
	dst = append(dst, prefix...)
	dst = strconv.AppendInt(dst, int64(idx), 10)
	return appendPad(dst, pad, size-(len(dst)-start))
}

// padA and padX are runs of the padding bytes the key generators use, copied
// from instead of appending byte by byte (a key's padding is tens to
// hundreds of bytes, and every request of the load generator builds one).
var padA, padX = strings.Repeat("a", 256), strings.Repeat("x", 256)

// appendPad appends n (<= 0: none) copies of pad to dst.
func appendPad(dst []byte, pad byte, n int) []byte {
	var run string
	switch pad {
	case 'a':
		run = padA
	case 'x':
		run = padX
	default:
		for ; n > 0; n-- {
			dst = append(dst, pad)
		}
		return dst
	}
	for n > 0 {
		k := min(n, len(run))
		dst = append(dst, run[:k]...)
		n -= k
	}
	return dst
}

// preloadList emits key's elements (sizes) as PutList + AppendToList requests
// of at most batch value bytes each (at least one element per request).
func preloadList(req *Request, key []byte, sizes []uint32, batch int, fn func(*Request) error) error {
	i := 0
	first := true
	for first || i < len(sizes) {
		op := OpAppendToList
		if first {
			op = OpPutList
		}
		req.reset(op)
		req.addKeyBytes(key)
		total := 0
		for i < len(sizes) && (total == 0 || total+int(sizes[i]) <= batch) {
			req.addValue(0, i, int(sizes[i]))
			total += int(sizes[i])
			i++
		}
		req.finish()
		if err := fn(req); err != nil {
			return err
		}
		first = false
	}
	return nil
}

// preloadValue emits Put(key, Fill(key, 0)[:size]).
func preloadValue(req *Request, key []byte, size int, fn func(*Request) error) error {
	req.reset(OpPut)
	req.addKeyBytes(key)
	req.addValue(0, 0, size)
	req.finish()
	return fn(req)
}

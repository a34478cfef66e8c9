package workload

import (
	"fmt"
	"math/rand/v2"
	"strconv"
)

// Layout says how a YCSB record of N values is stored and requested.
type Layout string

// The layouts.
const (
	// LayoutSingle: N must be 1; each key holds one value; Get / Put
	// (Redis "get").
	LayoutSingle Layout = "single"
	// LayoutList: each key holds a list of N values; GetList / PutList
	// (Redis "lrange-N").
	LayoutList Layout = "list"
	// LayoutMulti: each key holds one value; a request names N keys drawn
	// independently from the Zipfian; GetM / PutM (Redis "mget-N").
	LayoutMulti Layout = "multi"
)

// YCSBConfig configures the YCSB-C workload. Zero fields take defaults.
type YCSBConfig struct {
	Records        int     // records loaded (default 100000)
	NumValues      int     // N values per record or per request (default 1)
	ValueSize      int     // M bytes per value (default 4096)
	Layout         Layout  // default: single for N=1, list otherwise
	UpdateFraction float64 // fraction of updates (Put/PutList/PutM of the same bytes); 0 = YCSB-C
}

// YCSB is YCSB-C: Zipfian (theta 0.99) reads over Records keys chosen with
// Java YCSB's ScrambledZipfianGenerator and named "user"+fnvhash64(keynum)
// as CoreWorkload.buildKeyName does (insertorder=hashed, zeropadding=1).
type YCSB struct {
	cfg   YCSBConfig
	zipf  *ScrambledZipfian
	model *Model
	// direct: record i is model entry i (no two key names collide), so a
	// stream records its keys' model indexes (Request.mix).
	direct bool
}

// NewYCSB builds the workload and its model.
func NewYCSB(c YCSBConfig) (*YCSB, error) {
	if c.Records == 0 {
		c.Records = 100_000
	}
	if c.NumValues == 0 {
		c.NumValues = 1
	}
	if c.ValueSize == 0 {
		c.ValueSize = 4096
	}
	if c.Layout == "" {
		c.Layout = LayoutList
		if c.NumValues == 1 {
			c.Layout = LayoutSingle
		}
	}
	switch {
	case c.Records < 1 || c.Records > 1<<30:
		return nil, fmt.Errorf("%w: ycsb records %d out of range [1, 2^30]", ErrBadSpec, c.Records)
	case c.NumValues < 1 || c.NumValues > 64:
		return nil, fmt.Errorf("%w: ycsb %d values per record out of range [1, 64]", ErrBadSpec, c.NumValues)
	case c.ValueSize < 1 || c.ValueSize > 1<<20:
		return nil, fmt.Errorf("%w: ycsb value size %d out of range [1, 1 MiB]", ErrBadSpec, c.ValueSize)
	case c.UpdateFraction < 0 || c.UpdateFraction > 1:
		return nil, fmt.Errorf("%w: ycsb update fraction %v not in [0, 1]", ErrBadSpec, c.UpdateFraction)
	case c.Layout != LayoutSingle && c.Layout != LayoutList && c.Layout != LayoutMulti:
		return nil, fmt.Errorf("%w: ycsb layout %q (want single, list or multi)", ErrBadSpec, c.Layout)
	case c.Layout == LayoutSingle && c.NumValues != 1:
		return nil, fmt.Errorf("%w: ycsb layout single needs 1 value, have %d", ErrBadSpec, c.NumValues)
	}
	y := &YCSB{cfg: c, zipf: NewScrambledZipfian(0, int64(c.Records)), model: NewModel(), direct: true}
	var key []byte
	sizes := make([]int, c.NumValues)
	for i := range sizes {
		sizes[i] = c.ValueSize
	}
	for i := range c.Records {
		key = YCSBKey(key[:0], int64(i))
		var x int32
		if c.Layout == LayoutList {
			x = y.model.set(key, sizes...)
		} else {
			x = y.model.set(key, c.ValueSize)
		}
		y.direct = y.direct && int(x) == i
	}
	return y, nil
}

// YCSBKey appends CoreWorkload.buildKeyName(keynum): "user" + fnvhash64(keynum).
func YCSBKey(dst []byte, keynum int64) []byte {
	dst = append(dst, "user"...)
	return strconv.AppendInt(dst, FNVHash64(keynum), 10)
}

// Config returns the effective configuration.
func (y *YCSB) Config() YCSBConfig { return y.cfg }

// Name implements Workload.
func (y *YCSB) Name() string {
	s := fmt.Sprintf("ycsb:records=%d,shape=%dx%d,layout=%s", y.cfg.Records, y.cfg.NumValues, y.cfg.ValueSize, y.cfg.Layout)
	if y.cfg.UpdateFraction > 0 {
		s += fmt.Sprintf(",update=%g", y.cfg.UpdateFraction)
	}
	return s
}

// Unit implements Workload.
func (y *YCSB) Unit() string { return UnitRequests }

// Model implements Workload.
func (y *YCSB) Model() *Model { return y.model }

// Preload implements Workload: one Put (single, multi) or PutList (list) per record.
func (y *YCSB) Preload(fn func(*Request) error) error {
	var req Request
	var key []byte
	for i := range y.cfg.Records {
		key = YCSBKey(key[:0], int64(i))
		var err error
		if y.cfg.Layout == LayoutList {
			sizes, _ := y.model.Sizes(key)
			err = preloadList(&req, key, sizes, max(DefaultPreloadBatchBytes, y.cfg.NumValues*y.cfg.ValueSize), fn)
		} else {
			err = preloadValue(&req, key, y.cfg.ValueSize, fn)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// NewStream implements Workload.
func (y *YCSB) NewStream(client, clients int, seed uint64) Stream {
	return &ycsbStream{y: y, r: newRand(seed, uint64(client))}
}

type ycsbStream struct {
	y *YCSB
	r *rand.Rand
}

// keynum is CoreWorkload.nextKeynum: redraw samples past the last record
// (the scrambled generator's range is records+1 wide, as in Java).
func (s *ycsbStream) keynum() int64 {
	n := int64(s.y.cfg.Records)
	for range 64 {
		if k := s.y.zipf.Next(s.r); k < n {
			return k
		}
	}
	return n - 1
}

func (s *ycsbStream) Next(req *Request) {
	c := &s.y.cfg
	update := c.UpdateFraction > 0 && s.r.Float64() < c.UpdateFraction
	switch c.Layout {
	case LayoutSingle:
		if update {
			req.reset(OpPut)
		} else {
			req.reset(OpGet)
		}
		s.addKey(req)
		if update {
			req.addValue(0, 0, c.ValueSize)
		}
	case LayoutList:
		if update {
			req.reset(OpPutList)
		} else {
			req.reset(OpGetList)
		}
		s.addKey(req)
		if update {
			for j := range c.NumValues {
				req.addValue(0, j, c.ValueSize)
			}
		}
	case LayoutMulti:
		if update {
			req.reset(OpPutM)
		} else {
			req.reset(OpGetM)
		}
		for range c.NumValues {
			s.addKey(req)
		}
		if update {
			for j := range c.NumValues {
				req.addValue(j, 0, c.ValueSize)
			}
		}
	}
	req.finish()
}

func (s *ycsbStream) addKey(req *Request) {
	st := req.beginKey()
	k := s.keynum()
	req.buf = YCSBKey(req.buf, k)
	x := int32(-1)
	if s.y.direct {
		x = int32(k)
	}
	req.endKeyAt(st, s.y.model, x)
}

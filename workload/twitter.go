package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
)

// Twitter cluster-4 value-size model (an assumption: the trace publishes only
// the mean). A two-part mix of log-uniform pieces:
//   - with probability TwitterSmallShare, log-uniform on [16, 512] B;
//   - otherwise log-uniform on [513, Hi] B, with Hi solved so that the mean
//     is the configured MeanValueSize (2439 B gives Hi ≈ 30.4 kB).
//
// TwitterSmallShare = 0.68 matches the paper's "about 32% of the requests
// query objects larger than 512" (§6.1.4); the small piece's median ~90 B and
// overall median ~200 B sit near the fleet median of 230 B (OSDI'20).
const (
	TwitterSmallShare = 0.68
	twitterSmallLo    = 16
	twitterSmallHi    = 512
	twitterLargeLo    = 513
)

// TwitterConfig configures the synthetic Twitter cluster-4 workload. Zero
// fields take defaults.
type TwitterConfig struct {
	Keys          int     // logical objects (default 100000; the paper preloads 4M)
	GetFraction   float64 // gets; the rest are sets (default 0.93)
	ZipfS         float64 // Zipf exponent over objects, > 1 (default 1.1004)
	MeanKeySize   int     // mean key bytes; keys are uniform in mean±19 (default 67)
	MeanValueSize int     // request-weighted mean value bytes (default 2439)
	ChunkSize     int     // values larger are split into keys key0,key1,... (default 8192)
}

// Twitter is a synthetic Twitter cache cluster-4 workload (Yang et al.
// OSDI'20; stat/2020Mar.md): Zipf(1.1004) popularity over objects, 93% Get /
// 7% Put (a Put rewrites the object's same bytes), mean key 67 B and a
// request-weighted mean value of 2439 B. Values over ChunkSize are split as
// Cornflakes' twitter_preprocess does: floor(v/8192) keys of 8192 B plus a
// remainder key, named key+"0", key+"1", ...; a request for such an object
// becomes one request per chunk, in order.
type Twitter struct {
	cfg    TwitterConfig
	sizes  []int32 // value size of object (rank-1)
	ksizes []uint8 // key size of object
	model  *Model
	hi     float64 // upper end of the large piece
	// first is the model entry of each object's first chunk (its chunks
	// follow it), so a stream records its keys' model indexes
	// (Request.mix); nil when two key names collided.
	first []int32
}

// NewTwitter builds the workload and its model.
func NewTwitter(c TwitterConfig) (*Twitter, error) {
	if c.Keys == 0 {
		c.Keys = 100_000
	}
	if c.GetFraction == 0 {
		c.GetFraction = 0.93
	}
	if c.ZipfS == 0 {
		c.ZipfS = 1.1004
	}
	if c.MeanKeySize == 0 {
		c.MeanKeySize = 67
	}
	if c.MeanValueSize == 0 {
		c.MeanValueSize = 2439
	}
	if c.ChunkSize == 0 {
		c.ChunkSize = 8192
	}
	smallMean := (twitterSmallHi - twitterSmallLo) / math.Log(float64(twitterSmallHi)/twitterSmallLo)
	minMean := TwitterSmallShare*smallMean + (1-TwitterSmallShare)*twitterLargeLo
	switch {
	case c.Keys < 2 || c.Keys > 1<<28:
		return nil, fmt.Errorf("%w: twitter keys %d out of range [2, 2^28]", ErrBadSpec, c.Keys)
	case c.GetFraction < 0 || c.GetFraction > 1:
		return nil, fmt.Errorf("%w: twitter get fraction %v not in [0, 1]", ErrBadSpec, c.GetFraction)
	case !(c.ZipfS > 1) || c.ZipfS > 10:
		return nil, fmt.Errorf("%w: twitter zipf exponent %v not in (1, 10]", ErrBadSpec, c.ZipfS)
	case c.MeanKeySize < 24 || c.MeanKeySize > 200:
		return nil, fmt.Errorf("%w: twitter mean key size %d out of range [24, 200]", ErrBadSpec, c.MeanKeySize)
	case float64(c.MeanValueSize) < minMean+1 || c.MeanValueSize > 1<<20:
		return nil, fmt.Errorf("%w: twitter mean value size %d out of range [%d, 1 MiB]", ErrBadSpec, c.MeanValueSize, int(minMean)+1)
	case c.ChunkSize < 64 || c.ChunkSize > 1<<20:
		return nil, fmt.Errorf("%w: twitter chunk size %d out of range [64, 1 MiB]", ErrBadSpec, c.ChunkSize)
	}
	t := &Twitter{cfg: c, model: NewModel()}
	t.hi = solveLogUniformHi(twitterLargeLo, (float64(c.MeanValueSize)-TwitterSmallShare*smallMean)/(1-TwitterSmallShare))
	t.assignSizes()
	t.ksizes = make([]uint8, c.Keys)
	var key []byte
	t.first = make([]int32, c.Keys)
	next := int32(0) // the entry the next new key gets
	direct := true
	for i := range c.Keys {
		t.first[i] = next
		h := uint64(FNVHash64(int64(i) ^ 0x7417))
		ks := c.MeanKeySize
		if c.MeanKeySize >= 40 {
			ks = c.MeanKeySize - 19 + int(h%39)
		}
		t.ksizes[i] = uint8(ks)
		key = t.appendKey(key[:0], i)
		base := len(key)
		t.forChunks(int(t.sizes[i]), func(j, n, nchunks int) {
			key = key[:base]
			if nchunks > 1 {
				key = strconv.AppendInt(key, int64(j), 10)
			}
			direct = direct && t.model.set(key, n) == next
			next++
		})
	}
	if !direct {
		t.first = nil
	}
	return t, nil
}

// solveLogUniformHi finds hi such that a log-uniform on [lo, hi] has the given mean.
func solveLogUniformHi(lo, mean float64) float64 {
	f := func(hi float64) float64 { return (hi - lo) / math.Log(hi/lo) }
	a, b := lo*1.000001, lo*2
	for f(b) < mean {
		b *= 2
	}
	for range 200 {
		m := (a + b) / 2
		if f(m) < mean {
			a = m
		} else {
			b = m
		}
	}
	return (a + b) / 2
}

// quantileIntegral returns the integral of the size quantile function over [u1, u2).
func (t *Twitter) quantileIntegral(u1, u2 float64) float64 {
	piece := func(lo, hi, u0, w, a, b float64) float64 { // log-uniform [lo,hi] over u in [u0, u0+w)
		a, b = max(a, u0), min(b, u0+w)
		if b <= a {
			return 0
		}
		L := math.Log(hi / lo)
		return lo * w / L * (math.Exp(L*(b-u0)/w) - math.Exp(L*(a-u0)/w))
	}
	p := TwitterSmallShare
	return piece(twitterSmallLo, twitterSmallHi, 0, p, u1, u2) + piece(twitterLargeLo, t.hi, p, 1-p, u1, u2)
}

// assignSizes gives each object a value size such that the popularity-weighted
// (request-weighted) size distribution is the model's and its mean is exact:
// objects are laid along [0,1) in a fixed pseudo-random order, object r taking
// an interval as wide as its request probability; its size is the mean of the
// size quantile function over that interval. Unpopular objects (tiny
// intervals) get effectively independent draws; the few hottest objects get
// the mean of a wider slab instead of one extreme draw that would dominate
// the request-weighted mean.
func (t *Twitter) assignSizes() {
	n := t.cfg.Keys
	p := make([]float64, n)
	h := 0.0
	for k := range n {
		p[k] = math.Pow(float64(k+1), -t.cfg.ZipfS)
		h += p[k]
	}
	order := make([]int32, n)
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		ha, hb := uint64(FNVHash64(int64(a))), uint64(FNVHash64(int64(b)))
		switch {
		case ha < hb:
			return -1
		case ha > hb:
			return 1
		}
		return int(a - b)
	})
	t.sizes = make([]int32, n)
	u := 0.0
	for _, k := range order {
		w := p[k] / h
		u2 := min(u+w, 1)
		s := 0.0
		if u2 > u {
			s = t.quantileIntegral(u, u2) / (u2 - u)
		} else {
			s = twitterSmallLo
		}
		t.sizes[k] = int32(max(1, math.Round(s)))
		u = u2
	}
}

// ExpectedMeanValueSize returns the request-weighted mean object size of the
// model: sum over objects of P(object) * size.
func (t *Twitter) ExpectedMeanValueSize() float64 {
	h, s := 0.0, 0.0
	for k, z := range t.sizes {
		p := math.Pow(float64(k+1), -t.cfg.ZipfS)
		h += p
		s += p * float64(z)
	}
	return s / h
}

// ValueSize returns the value size of object (0-based popularity rank) i.
func (t *Twitter) ValueSize(i int) int { return int(t.sizes[i]) }

func (t *Twitter) appendKey(dst []byte, i int) []byte {
	start := len(dst)
	dst = append(dst, "tw4_"...)
	dst = strconv.AppendInt(dst, int64(i), 10)
	dst = append(dst, '_')
	return appendPad(dst, 'x', int(t.ksizes[i])-(len(dst)-start))
}

// forChunks calls fn for each chunk (index, size, count) of a value of size v.
func (t *Twitter) forChunks(v int, fn func(j, n, nchunks int)) {
	c := t.cfg.ChunkSize
	if v <= c {
		fn(0, v, 1)
		return
	}
	full, rem := v/c, v%c
	nchunks := full
	if rem > 0 {
		nchunks++
	}
	for j := range full {
		fn(j, c, nchunks)
	}
	if rem > 0 {
		fn(full, rem, nchunks)
	}
}

// Config returns the effective configuration.
func (t *Twitter) Config() TwitterConfig { return t.cfg }

// Name implements Workload.
func (t *Twitter) Name() string {
	c := t.cfg
	return fmt.Sprintf("twitter:keys=%d,get=%g,zipf=%g,keysize=%d,valuesize=%d,chunk=%d", c.Keys, c.GetFraction, c.ZipfS, c.MeanKeySize, c.MeanValueSize, c.ChunkSize)
}

// Unit implements Workload.
func (t *Twitter) Unit() string { return UnitRequests }

// Model implements Workload.
func (t *Twitter) Model() *Model { return t.model }

// Preload implements Workload: one Put per chunk key of every object.
func (t *Twitter) Preload(fn func(*Request) error) error {
	var req Request
	var key []byte
	var err error
	for i := range t.cfg.Keys {
		key = t.appendKey(key[:0], i)
		base := len(key)
		t.forChunks(int(t.sizes[i]), func(j, n, nchunks int) {
			if err != nil {
				return
			}
			key = key[:base]
			if nchunks > 1 {
				key = strconv.AppendInt(key, int64(j), 10)
			}
			err = preloadValue(&req, key, n, fn)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// NewStream implements Workload.
func (t *Twitter) NewStream(client, clients int, seed uint64) Stream {
	r := newRand(seed, uint64(client))
	return &twitterStream{t: t, r: r, z: rand.NewZipf(r, t.cfg.ZipfS, 1, uint64(t.cfg.Keys-1))}
}

type twitterStream struct {
	t *Twitter
	r *rand.Rand
	z *rand.Zipf
	// pending chunks of a split object
	obj, next, nchunks int
	put                bool
}

func (s *twitterStream) Next(req *Request) {
	t := s.t
	if s.next >= s.nchunks {
		s.obj = int(s.z.Uint64())
		s.put = s.r.Float64() >= t.cfg.GetFraction
		s.next = 0
		v, c := int(t.sizes[s.obj]), t.cfg.ChunkSize
		s.nchunks = (v + c - 1) / c
	}
	j := s.next
	s.next++
	n := min(t.cfg.ChunkSize, int(t.sizes[s.obj])-j*t.cfg.ChunkSize)
	if s.put {
		req.reset(OpPut)
	} else {
		req.reset(OpGet)
	}
	st := req.beginKey()
	req.buf = t.appendKey(req.buf, s.obj)
	if s.nchunks > 1 {
		req.buf = strconv.AppendInt(req.buf, int64(j), 10)
	}
	x := int32(-1)
	if t.first != nil {
		x = t.first[s.obj] + int32(j)
	}
	req.endKeyAt(st, t.model, x)
	if s.put {
		req.addValue(0, 0, n)
	}
	req.finish()
}

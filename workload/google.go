package workload

import (
	"fmt"
	"math/rand/v2"
)

// SizeBucket is one bucket of a size distribution: sizes Lo..Hi inclusive,
// drawn uniformly inside, chosen with relative Weight.
type SizeBucket struct {
	Lo, Hi int
	Weight float64
}

// GoogleFieldSizes is the Google fleet protobuf bytes-field size distribution
// (Karandikar et al., MICRO'21, Fig. 4c) as transcribed in Cornflakes'
// cf-kv/src/google_protobuf.rs DEFAULT_BUCKETS (weights in percent; they sum
// to 99.96 and are normalised). The last bucket ends at the 8192 B maximum.
var GoogleFieldSizes = []SizeBucket{
	{1, 8, 33.8},
	{9, 16, 15.3},
	{17, 22, 7.6},
	{23, 32, 13.5},
	{33, 64, 10.6},
	{65, 128, 6.1},
	{129, 512, 8.0},
	{513, 4096, 3.7},
	{4097, 8192, 1.36},
}

// bucketSampler draws sizes from weighted buckets.
type bucketSampler struct {
	b   []SizeBucket
	cum []float64 // normalised cumulative weights
}

func newBucketSampler(b []SizeBucket) *bucketSampler {
	s := &bucketSampler{b: b, cum: make([]float64, len(b))}
	total := 0.0
	for _, x := range b {
		total += x.Weight
	}
	acc := 0.0
	for i, x := range b {
		acc += x.Weight
		s.cum[i] = acc / total
	}
	s.cum[len(b)-1] = 1
	return s
}

// bucket returns the bucket index for a uniform u.
func (s *bucketSampler) bucket(u float64) int {
	for i, c := range s.cum {
		if u < c {
			return i
		}
	}
	return len(s.cum) - 1
}

func (s *bucketSampler) draw(r *rand.Rand) int {
	b := s.b[s.bucket(r.Float64())]
	return b.Lo + r.IntN(b.Hi-b.Lo+1)
}

// GoogleConfig configures the Google workload. Zero fields take defaults.
type GoogleConfig struct {
	Keys      int // keys loaded (default 100000)
	MinValues int // fewest list elements per key (default 1)
	MaxValues int // most list elements per key, inclusive (default 7: Cornflakes' UniformOverRange-1-8 excludes 8)
	KeySize   int // key bytes: "key_<i>" padded with 'a' (default 64)
	MaxTotal  int // a list whose total exceeds this is redrawn (default 8192)
}

// Google is Cornflakes' Fig. 6 / Table 1 workload: each key holds a list of
// MinValues..MaxValues elements (uniform count) whose sizes come from
// GoogleFieldSizes, redrawn until the total is <= MaxTotal; requests are
// GetList of a uniformly chosen key.
type Google struct {
	cfg   GoogleConfig
	model *Model
	// direct: key i is model entry i, so a stream records its keys' model
	// indexes (Request.mix).
	direct bool
}

// NewGoogle builds the workload and its model (list shapes derive from the
// key index only, so they do not depend on any seed).
func NewGoogle(c GoogleConfig) (*Google, error) {
	if c.Keys == 0 {
		c.Keys = 100_000
	}
	if c.MinValues == 0 {
		c.MinValues = 1
	}
	if c.MaxValues == 0 {
		c.MaxValues = max(7, c.MinValues)
	}
	if c.KeySize == 0 {
		c.KeySize = 64
	}
	if c.MaxTotal == 0 {
		c.MaxTotal = 8192
	}
	switch {
	case c.Keys < 1 || c.Keys > 1<<30:
		return nil, fmt.Errorf("%w: google keys %d out of range [1, 2^30]", ErrBadSpec, c.Keys)
	case c.MinValues < 1 || c.MaxValues < c.MinValues || c.MaxValues > 64:
		return nil, fmt.Errorf("%w: google values %d-%d (want 1 <= min <= max <= 64)", ErrBadSpec, c.MinValues, c.MaxValues)
	case c.KeySize < 1 || c.KeySize > 1024:
		return nil, fmt.Errorf("%w: google key size %d out of range [1, 1024]", ErrBadSpec, c.KeySize)
	case c.MaxTotal < 8*c.MinValues || c.MaxTotal > 1<<20:
		// the smallest bucket is 1-8 B, so a total of 8*MinValues is always reachable quickly
		return nil, fmt.Errorf("%w: google max total %d out of range [%d, 1 MiB]", ErrBadSpec, c.MaxTotal, 8*c.MinValues)
	}
	g := &Google{cfg: c, model: NewModel(), direct: true}
	s := newBucketSampler(GoogleFieldSizes)
	var key []byte
	sizes := make([]int, 0, c.MaxValues)
	for i := range c.Keys {
		r := newRand(0x600613, uint64(i))
		for {
			n := c.MinValues + r.IntN(c.MaxValues-c.MinValues+1)
			sizes = sizes[:0]
			total := 0
			for range n {
				z := min(s.draw(r), c.MaxTotal)
				sizes = append(sizes, z)
				total += z
			}
			if total <= c.MaxTotal {
				break
			}
		}
		key = GoogleKey(key[:0], i, c.KeySize)
		g.direct = g.direct && int(g.model.set(key, sizes...)) == i
	}
	return g, nil
}

// GoogleKey appends Cornflakes' key for index i: "key_<i>" padded with 'a'.
func GoogleKey(dst []byte, i, size int) []byte { return appendPaddedKey(dst, "key_", i, size, 'a') }

// Config returns the effective configuration.
func (g *Google) Config() GoogleConfig { return g.cfg }

// Name implements Workload.
func (g *Google) Name() string {
	return fmt.Sprintf("google:keys=%d,values=%d-%d,keysize=%d,maxtotal=%d", g.cfg.Keys, g.cfg.MinValues, g.cfg.MaxValues, g.cfg.KeySize, g.cfg.MaxTotal)
}

// Unit implements Workload.
func (g *Google) Unit() string { return UnitRequests }

// Model implements Workload.
func (g *Google) Model() *Model { return g.model }

// Preload implements Workload: one PutList per key.
func (g *Google) Preload(fn func(*Request) error) error {
	var req Request
	var key []byte
	for i := range g.cfg.Keys {
		key = GoogleKey(key[:0], i, g.cfg.KeySize)
		sizes, _ := g.model.Sizes(key)
		if err := preloadList(&req, key, sizes, max(DefaultPreloadBatchBytes, g.cfg.MaxTotal), fn); err != nil {
			return err
		}
	}
	return nil
}

// NewStream implements Workload.
func (g *Google) NewStream(client, clients int, seed uint64) Stream {
	return &googleStream{g: g, r: newRand(seed, uint64(client))}
}

type googleStream struct {
	g *Google
	r *rand.Rand
}

func (s *googleStream) Next(req *Request) {
	req.reset(OpGetList)
	st := req.beginKey()
	i := s.r.IntN(s.g.cfg.Keys)
	req.buf = GoogleKey(req.buf, i, s.g.cfg.KeySize)
	x := int32(-1)
	if s.g.direct {
		x = int32(i)
	}
	req.endKeyAt(st, s.g.model, x)
	req.finish()
}

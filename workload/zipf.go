package workload

import (
	"math"
	"math/rand/v2"
)

// YCSB's Zipfian constants (site.ycsb.generator.ZipfianGenerator and
// ScrambledZipfianGenerator).
const (
	// ZipfianConstant is YCSB's theta.
	ZipfianConstant = 0.99
	// ScrambledItemCount is ScrambledZipfianGenerator.ITEM_COUNT: the
	// scrambled generator samples a Zipfian over this many items and then
	// hashes the result into the record range.
	ScrambledItemCount int64 = 10_000_000_000
	// ScrambledZetan is ScrambledZipfianGenerator.ZETAN = zeta(1e10, 0.99).
	ScrambledZetan = 26.46902820178302
)

// Zipfian is YCSB's ZipfianGenerator (Gray et al., "Quickly generating
// billion-record synthetic databases"): it returns integers in
// [base, base+items) where base is the most popular.
type Zipfian struct {
	base      int64
	items     int64
	theta     float64
	alpha     float64
	zetan     float64
	eta       float64
	halfPowTh float64 // 0.5^theta
}

// Zeta returns sum_{i=1..n} 1/i^theta.
func Zeta(n int64, theta float64) float64 {
	s := 0.0
	for i := int64(1); i <= n; i++ {
		s += 1 / math.Pow(float64(i), theta)
	}
	return s
}

// NewZipfian returns YCSB's ZipfianGenerator(min, max, theta): items
// min..max inclusive. It computes zeta(n) by summation (O(n)).
func NewZipfian(min, max int64, theta float64) *Zipfian {
	items := max - min + 1
	return newZipfianZetan(min, items, theta, Zeta(items, theta))
}

func newZipfianZetan(base, items int64, theta, zetan float64) *Zipfian {
	zeta2 := 1 + math.Pow(0.5, theta) // zeta(2, theta)
	return &Zipfian{
		base:      base,
		items:     items,
		theta:     theta,
		alpha:     1 / (1 - theta),
		zetan:     zetan,
		eta:       (1 - math.Pow(2/float64(items), 1-theta)) / (1 - zeta2/zetan),
		halfPowTh: math.Pow(0.5, theta),
	}
}

// Value maps a uniform u in [0,1) to a Zipfian sample exactly as
// ZipfianGenerator.nextLong(items) does.
func (z *Zipfian) Value(u float64) int64 {
	uz := u * z.zetan
	if uz < 1 {
		return z.base
	}
	if uz < 1+z.halfPowTh {
		return z.base + 1
	}
	return z.base + int64(float64(z.items)*math.Pow(z.eta*u-z.eta+1, z.alpha))
}

// Next draws a sample using r.
func (z *Zipfian) Next(r *rand.Rand) int64 { return z.Value(r.Float64()) }

// ScrambledZipfian is YCSB's ScrambledZipfianGenerator(min, max) with the
// default constant 0.99: a Zipfian over ScrambledItemCount+1 items whose
// sample is hashed with FNVHash64 into [min, max]. Popular items are spread
// over the key space instead of clustered at min.
type ScrambledZipfian struct {
	gen       *Zipfian
	min       int64
	itemcount int64
}

// NewScrambledZipfian returns ScrambledZipfianGenerator(min, max).
func NewScrambledZipfian(min, max int64) *ScrambledZipfian {
	// Java: new ZipfianGenerator(0, ITEM_COUNT, 0.99, ZETAN), i.e.
	// items = ITEM_COUNT - 0 + 1.
	return &ScrambledZipfian{
		gen:       newZipfianZetan(0, ScrambledItemCount+1, ZipfianConstant, ScrambledZetan),
		min:       min,
		itemcount: max - min + 1,
	}
}

// Value maps a uniform u in [0,1) to a scrambled sample:
// min + fnvhash64(zipf(u)) % itemcount (Java's % keeps the sign; a negative
// result can only come from fnvhash64 returning math.MinInt64, which Value
// folds into range).
func (s *ScrambledZipfian) Value(u float64) int64 {
	v := s.min + FNVHash64(s.gen.Value(u))%s.itemcount
	if v < s.min {
		v += s.itemcount
	}
	return v
}

// Next draws a sample using r.
func (s *ScrambledZipfian) Next(r *rand.Rand) int64 { return s.Value(r.Float64()) }

// ZipfPMF returns the probability of rank k (1-based) under a Zipf law with
// exponent s over n ranks: k^-s / H(n, s).
func ZipfPMF(k, n int64, s float64) float64 {
	return math.Pow(float64(k), -s) / Zeta(n, s)
}

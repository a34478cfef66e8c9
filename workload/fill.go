package workload

import "encoding/binary"

// FNV-1a 64-bit parameters (also the constants of Java YCSB's fnvhash64).
const (
	fnvOffset64 uint64 = 0xCBF29CE484222325
	fnvPrime64  uint64 = 1099511628211
)

// FNVHash64 is Java YCSB's Utils.fnvhash64: FNV-1a over the 8 bytes of v,
// least significant byte first, then Math.abs of the result as a signed
// 64-bit integer. Like Java, the absolute value of math.MinInt64 stays
// negative; it is returned as int64 so callers see exactly Java's value.
func FNVHash64(v int64) int64 {
	h := fnvOffset64
	u := uint64(v)
	for range 8 {
		h ^= u & 0xff
		u >>= 8 // Java uses >> (arithmetic); the low 8 bytes are the same either way
		h *= fnvPrime64
	}
	s := int64(h)
	if s < 0 {
		s = -s // Math.abs: -MinInt64 == MinInt64 in two's complement, as in Java
	}
	return s
}

// fnv1a hashes b (FNV-1a 64), used to seed value contents from a key.
func fnv1a(b []byte) uint64 {
	h := fnvOffset64
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime64
	}
	return h
}

// splitmixGamma is splitmix64's state increment.
const splitmixGamma = 0x9E3779B97F4A7C15

func splitmix(x *uint64) uint64 {
	*x += splitmixGamma
	return splitmixMix(*x)
}

// splitmixMix is splitmix64's output function of a state.
func splitmixMix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

func fillSeed(key []byte, index int) uint64 { return seedOf(fnv1a(key), index) }

// seedOf is fillSeed from the key's FNV-1a hash (a Model keeps it per key).
func seedOf(keyHash uint64, index int) uint64 {
	return keyHash ^ (uint64(index)+1)*0xD6E8FEB86659FD93
}

// Fill writes the deterministic content of element index of key into dst:
// a splitmix64 stream seeded by FNV-1a(key) and index. A value of any length
// is a prefix of the same stream, so Verify checks a value of any size.
func Fill(dst []byte, key []byte, index int) {
	x := fillSeed(key, index)
	i := 0
	// Four words per iteration, as in verifySeed: independent mixes.
	g := uint64(splitmixGamma) // a variable: its multiples wrap, as the state does
	for ; i+32 <= len(dst); i += 32 {
		w := dst[i : i+32 : i+32]
		binary.LittleEndian.PutUint64(w[0:], splitmixMix(x+g))
		binary.LittleEndian.PutUint64(w[8:], splitmixMix(x+2*g))
		binary.LittleEndian.PutUint64(w[16:], splitmixMix(x+3*g))
		binary.LittleEndian.PutUint64(w[24:], splitmixMix(x+4*g))
		x += 4 * g
	}
	for ; i+8 <= len(dst); i += 8 {
		binary.LittleEndian.PutUint64(dst[i:], splitmix(&x))
	}
	if i < len(dst) {
		var tmp [8]byte
		binary.LittleEndian.PutUint64(tmp[:], splitmix(&x))
		copy(dst[i:], tmp[:])
	}
}

// Verify reports whether v is the content Fill produces for (key, index).
func Verify(v []byte, key []byte, index int) bool { return verifySeed(v, fillSeed(key, index)) }

// verifySeed is Verify from the value's stream seed (fillSeed).
func verifySeed(v []byte, seed uint64) bool {
	x := seed
	i := 0
	// Four words per iteration: word k's state is the seed plus (k+1)
	// increments, so the four mixes are independent, and one branch
	// covers 32 bytes.
	g := uint64(splitmixGamma) // a variable: its multiples wrap, as the state does
	for ; i+32 <= len(v); i += 32 {
		w := v[i : i+32 : i+32]
		d := binary.LittleEndian.Uint64(w[0:]) ^ splitmixMix(x+g)
		d |= binary.LittleEndian.Uint64(w[8:]) ^ splitmixMix(x+2*g)
		d |= binary.LittleEndian.Uint64(w[16:]) ^ splitmixMix(x+3*g)
		d |= binary.LittleEndian.Uint64(w[24:]) ^ splitmixMix(x+4*g)
		if d != 0 {
			return false
		}
		x += 4 * g
	}
	for ; i+8 <= len(v); i += 8 {
		if binary.LittleEndian.Uint64(v[i:]) != splitmix(&x) {
			return false
		}
	}
	if i < len(v) {
		var tmp [8]byte
		binary.LittleEndian.PutUint64(tmp[:], splitmix(&x))
		for j := i; j < len(v); j++ {
			if v[j] != tmp[j-i] {
				return false
			}
		}
	}
	return true
}

// VerifySpot reports whether v's first, middle and last 8-byte words (the
// last one possibly partial) are the content Fill produces for (key,
// index) at their offsets: a check of constant cost that catches a value
// of the wrong key, element or offset, but not every corrupted byte (see
// Verify).
func VerifySpot(v []byte, key []byte, index int) bool {
	return verifySpotSeed(v, fillSeed(key, index))
}

// verifySpotSeed is VerifySpot from the value's stream seed (fillSeed).
func verifySpotSeed(v []byte, seed uint64) bool {
	n := len(v)
	if n < 8 {
		return n == 0 || spotWord(v, seed, 0)
	}
	// Straight-line: the three words are independent loads and mixes
	// (values the generator checks in place are often in another core's
	// cache: their misses overlap), one branch at the end.
	g := uint64(splitmixGamma) // a variable: its multiples wrap, as the state does
	last := (n - 1) / 8
	mid := last / 2 // a full word: 8*mid+8 <= n
	d := binary.LittleEndian.Uint64(v) ^ splitmixMix(seed+g)
	d |= binary.LittleEndian.Uint64(v[8*mid:]) ^ splitmixMix(seed+uint64(mid+1)*g)
	// The last word holds r = 1..8 bytes, at 8*last: the top r bytes of
	// the value's last 8, compared with the low r bytes of its stream word.
	sh := uint(64 - 8*(n-8*last))
	d |= binary.LittleEndian.Uint64(v[n-8:])>>sh ^ splitmixMix(seed+uint64(last+1)*g)<<sh>>sh
	return d == 0
}

// spotWord checks word k of v (bytes 8k up to 8k+8 or the end) against
// Fill's stream: word k is splitmix's (k+1)-th output from the seed.
func spotWord(v []byte, seed uint64, k int) bool {
	want := splitmixMix(seed + uint64(k+1)*uint64(splitmixGamma))
	off := 8 * k
	if off+8 <= len(v) {
		return binary.LittleEndian.Uint64(v[off:]) == want
	}
	var tmp [8]byte
	binary.LittleEndian.PutUint64(tmp[:], want)
	for j := off; j < len(v); j++ {
		if v[j] != tmp[j-off] {
			return false
		}
	}
	return true
}

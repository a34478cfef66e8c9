package resp

import (
	"math/big"
	"strings"
)

// Redis computes INCRBYFLOAT and HINCRBYFLOAT in C's long double: on
// x86-64 the x87 extended format, a 64-bit significand (an explicit
// leading bit) and a 15-bit exponent. A big.Float of precision 64 rounding
// to nearest even adds exactly as the x87 unit does, parses decimal
// strings as glibc's strtold (correctly rounded) and formats as its
// printf("%.17Lf"); values beyond the long double range are errors, as
// Redis's overflow to infinity.

// ldPrec is the long double significand's bits; ldMaxExp bounds the
// exponent of a finite long double and below ldMinExp a value rounds to
// zero (big.Float's MantExp convention: mantissa in [0.5, 1); the
// smallest subnormal is 2^-16445).
const (
	maxLDChars = 5 * 1024 // Redis's MAX_LONG_DOUBLE_CHARS
	ldPrec     = 64
	ldMaxExp   = 16384
	ldMinExp   = -16445
)

// parseLD parses b as Redis's string2ld accepts it (validLD;
// a finite value beyond the long double range is refused, as strtold's
// overflow and underflow to zero); ok false: not a float. "inf" is ±Inf.
func parseLD(b []byte) (*big.Float, bool) {
	ok, zero := validLD(b)
	if !ok {
		return nil, false
	}
	if zero {
		return new(big.Float).SetPrec(ldPrec), true
	}
	x, _, err := new(big.Float).SetPrec(ldPrec).SetMode(big.ToNearestEven).Parse(string(b), 0)
	if err != nil || x.IsInf() { // "inf", "infinity": strtold's infinity
		return new(big.Float).SetInf(b[0] == '-'), true
	}
	if e := x.MantExp(nil); x.Sign() != 0 && (e > ldMaxExp || e < ldMinExp) {
		return nil, false // strtold's ERANGE to ±HUGE_VALL or to zero: string2ld refuses it
	}
	return x, true
}

// addLD returns a+b rounded to a long double; ok false when the sum is
// infinite (Redis: "increment would produce NaN or Infinity").
func addLD(a, b *big.Float) (*big.Float, bool) {
	if a.IsInf() || b.IsInf() {
		return nil, false // inf-inf is NaN, inf+x is inf: both refused
	}
	z := new(big.Float).SetPrec(ldPrec).SetMode(big.ToNearestEven).Add(a, b)
	if z.MantExp(nil) > ldMaxExp {
		return nil, false
	}
	return z, true
}

// formatLD formats x as Redis's ld2string in LD_STR_HUMAN mode: "%.17Lf",
// then the trailing zeros of the fraction and a bare '.' removed, "-0" as
// "0".
func formatLD(x *big.Float) string {
	s := x.Text('f', 17)
	if strings.IndexByte(s, '.') >= 0 {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// validLD reports whether all of b is what glibc's strtold parses and
// string2ld keeps: an optional sign, then a decimal significand (digits
// with an optional '.', at least one digit) with an optional e exponent,
// a hexadecimal one ("0x", hex digits, optional '.') with an optional p
// exponent, or "inf"/"infinity" (any case). No spaces, no NaN, no
// underscores; at most maxLDChars bytes (string2ld's buffer). An
// exponent of more than 5 digits is out of the long double range: such a
// string is valid only with a zero significand (zero reports it; the
// value is then 0, and big.Float is not asked to scale by it).
func validLD(b []byte) (ok, zero bool) {
	if len(b) >= maxLDChars {
		return false, false
	}
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		b = b[1:]
	}
	if s := strings.ToLower(string(b)); s == "inf" || s == "infinity" {
		return true, false
	}
	isDigit := func(c byte) bool { return c >= '0' && c <= '9' }
	isHex := func(c byte) bool { return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'f') }
	digit, exp := isDigit, byte('e')
	if len(b) > 2 && b[0] == '0' && b[1]|0x20 == 'x' {
		b, digit, exp = b[2:], isHex, 'p'
	}
	i, n, nonzero := 0, 0, false
	for i < len(b) && digit(b[i]) {
		nonzero = nonzero || b[i] != '0'
		i, n = i+1, n+1
	}
	if i < len(b) && b[i] == '.' {
		i++
		for i < len(b) && digit(b[i]) {
			nonzero = nonzero || b[i] != '0'
			i, n = i+1, n+1
		}
	}
	if n == 0 {
		return false, false
	}
	if i < len(b) && b[i]|0x20 == exp {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		for i < len(b) && b[i] == '0' && i+1 < len(b) && isDigit(b[i+1]) {
			i++ // leading zeros of the exponent
		}
		j := i
		for i < len(b) && isDigit(b[i]) {
			i++
		}
		if i == j || i < len(b) {
			return false, false
		}
		if i-j > 5 {
			return !nonzero, !nonzero
		}
	}
	return i == len(b), false
}

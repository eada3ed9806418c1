package grammar

// Numbers with minimum / maximum / exclusiveMinimum / exclusiveMaximum.
//
// A bounded number is written without an exponent: an integer part of at
// most maxIntDigits digits and, for type number, at most maxFracDigits
// fraction digits. Every such number is an integer count of "grid units"
// (1 for integers, 10^-maxFracDigits for numbers), so the bounds become two
// integers lo..hi of grid units and the language is exactly the numbers
// in that closed range: the digit automaton of the range. Its state is the
// text written so far; a byte is taken only if some completion of the new
// text is still in range (the completions of a prefix are a few intervals
// of grid units, compared exactly with math/big), so generation never
// reaches a dead end, and the number may end only on a value in range.

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
)

type numBounds struct {
	scale  int      // fraction digits of a grid unit: 0 (integer) or maxFracDigits
	lo, hi *big.Int // in grid units; nil: unbounded
}

var ten = big.NewInt(10)

func pow10(n int) *big.Int { return new(big.Int).Exp(ten, big.NewInt(int64(n)), nil) }

// readBounds reads the four keywords; nil when none is present.
func readBounds(s map[string]any, integer bool, path string) (*numBounds, error) {
	if !has(s, "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum") {
		return nil, nil
	}
	nb := &numBounds{}
	if !integer {
		nb.scale = maxFracDigits
	}
	unit := new(big.Rat).SetInt(pow10(nb.scale))
	value := func(key string) (*big.Rat, error) {
		num, ok := s[key].(json.Number)
		r, good := new(big.Rat).SetString(string(num))
		if !ok || !good {
			return nil, &SchemaError{at(path, key), "must be a number"}
		}
		return r.Mul(r, unit), nil
	}
	// Draft 4 wrote exclusiveMinimum/Maximum as booleans beside
	// minimum/maximum.
	exclusive := func(key string) (bool, error) {
		v, ok := s[key]
		if !ok {
			return false, nil
		}
		if b, isBool := v.(bool); isBool {
			return b, nil
		}
		return false, nil
	}
	for _, side := range []struct {
		incl, excl string
		lower      bool
	}{{"minimum", "exclusiveMinimum", true}, {"maximum", "exclusiveMaximum", false}} {
		var best *big.Int
		tighter := func(v *big.Int) {
			if best == nil || (side.lower && v.Cmp(best) > 0) || (!side.lower && v.Cmp(best) < 0) {
				best = v
			}
		}
		oldExcl, err := exclusive(side.excl)
		if err != nil {
			return nil, err
		}
		if _, ok := s[side.incl]; ok {
			r, err := value(side.incl)
			if err != nil {
				return nil, err
			}
			tighter(gridBound(r, side.lower, oldExcl))
		} else if oldExcl {
			return nil, &SchemaError{at(path, side.excl), "true without " + side.incl}
		}
		if v, ok := s[side.excl]; ok {
			if _, isBool := v.(bool); !isBool {
				r, err := value(side.excl)
				if err != nil {
					return nil, err
				}
				tighter(gridBound(r, side.lower, true))
			}
		}
		if side.lower {
			nb.lo = best
		} else {
			nb.hi = best
		}
	}
	// The largest magnitude the grammar writes.
	top := new(big.Int).Sub(pow10(maxIntDigits+nb.scale), big.NewInt(1))
	bottom := new(big.Int).Neg(top)
	if nb.lo != nil && nb.lo.Cmp(top) > 0 {
		return nil, &SchemaError{path, fmt.Sprintf("the minimum is beyond the largest number written (%d integer digits)", maxIntDigits)}
	}
	if nb.hi != nil && nb.hi.Cmp(bottom) < 0 {
		return nil, &SchemaError{path, fmt.Sprintf("the maximum is beyond the smallest number written (%d integer digits)", maxIntDigits)}
	}
	if nb.lo != nil && nb.hi != nil && nb.lo.Cmp(nb.hi) > 0 {
		what := "number"
		if integer {
			what = "integer"
		}
		return nil, &SchemaError{path, "no " + what + " lies between the minimum and the maximum"}
	}
	return nb, nil
}

// gridBound is the closed bound, in whole grid units, of x >= r (lower) or
// x <= r, or the strict x > r / x < r when excl.
func gridBound(r *big.Rat, lower, excl bool) *big.Int {
	q, m := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int)) // floor
	exact := m.Sign() == 0
	switch {
	case lower && (excl || !exact):
		return q.Add(q, big.NewInt(1)) // floor+1
	case !lower && excl && exact:
		return q.Sub(q, big.NewInt(1))
	}
	return q
}

// numParts splits a bounded number's text.
func numParts(text string) (neg bool, intPart, frac string, dot bool) {
	neg = strings.HasPrefix(text, "-")
	text = strings.TrimPrefix(text, "-")
	intPart, frac, dot = strings.Cut(text, ".")
	return
}

func digitsInt(s string) *big.Int {
	v, _ := new(big.Int).SetString(s, 10)
	if v == nil {
		return new(big.Int)
	}
	return v
}

// feasible reports whether some completion of text (in number substate st)
// lies in range.
func (nb *numBounds) feasible(text string, st uint8) bool {
	neg, ip, frac, _ := numParts(text)
	one := big.NewInt(1)
	check := func(a, b *big.Int) bool { // magnitudes a..b
		lo, hi := a, b
		if neg {
			lo, hi = new(big.Int).Neg(b), new(big.Int).Neg(a)
		}
		if nb.lo != nil && nb.lo.Cmp(lo) > 0 {
			lo = nb.lo
		}
		if nb.hi != nil && nb.hi.Cmp(hi) < 0 {
			hi = nb.hi
		}
		return lo.Cmp(hi) <= 0
	}
	unit := pow10(nb.scale)
	switch st {
	case nSign:
		return check(new(big.Int), new(big.Int).Sub(pow10(maxIntDigits+nb.scale), one))
	case nZero, nDot:
		a := new(big.Int).Mul(digitsInt(ip), unit)
		return check(a, new(big.Int).Sub(new(big.Int).Add(a, unit), one))
	case nInt:
		iv := digitsInt(ip)
		for j := 0; j <= maxIntDigits-len(ip); j++ {
			w := pow10(j + nb.scale)
			a := new(big.Int).Mul(iv, w)
			b := new(big.Int).Sub(new(big.Int).Add(a, w), one)
			if check(a, b) {
				return true
			}
		}
		return false
	case nFrac:
		w := pow10(nb.scale - len(frac))
		a := new(big.Int).Mul(digitsInt(ip), unit)
		a.Add(a, new(big.Int).Mul(digitsInt(frac), w))
		return check(a, new(big.Int).Sub(new(big.Int).Add(a, w), one))
	}
	return false
}

// inRange reports whether the complete number text is in range.
func (nb *numBounds) inRange(text string) bool {
	neg, ip, frac, _ := numParts(text)
	v := new(big.Int).Mul(digitsInt(ip), pow10(nb.scale))
	if frac != "" {
		v.Add(v, new(big.Int).Mul(digitsInt(frac), pow10(nb.scale-len(frac))))
	}
	if neg {
		v.Neg(v)
	}
	return (nb.lo == nil || nb.lo.Cmp(v) <= 0) && (nb.hi == nil || v.Cmp(nb.hi) <= 0)
}

package cache

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseSize parses a byte size for flags such as --prefix-cache: a plain
// number of bytes ("1048576"), or a number with a binary unit: K, M, G, T,
// with or without "B"/"iB" ("512M", "1.5GiB", "64kb" — all powers of 1024).
// "0", "off" and "" mean 0 (cache disabled).
func ParseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "" || t == "off" || t == "none" {
		return 0, nil
	}
	mult := 1.0
	num := t
	for _, u := range []struct {
		suffix string
		mult   float64
	}{{"tib", 1 << 40}, {"gib", 1 << 30}, {"mib", 1 << 20}, {"kib", 1 << 10},
		{"tb", 1 << 40}, {"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10},
		{"t", 1 << 40}, {"g", 1 << 30}, {"m", 1 << 20}, {"k", 1 << 10}, {"b", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("size %q: want a number of bytes with an optional unit K, M, G or T", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("size %q is negative", s)
	}
	b := v * mult
	if b >= math.MaxInt64 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return int64(b), nil
}

package cache

import "testing"

func TestParseSize(t *testing.T) {
	good := map[string]int64{
		"": 0, "0": 0, "off": 0, "1048576": 1 << 20, "512M": 512 << 20, "512mb": 512 << 20,
		"1.5GiB": 3 << 29, "64k": 64 << 10, " 2 G ": 2 << 30, "1t": 1 << 40, "100B": 100,
	}
	for in, want := range good {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"abc", "-1", "-5M", "1X", "M", "NaN", "inf", "1e30G"} {
		if v, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, v)
		}
	}
}

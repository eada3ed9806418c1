//go:build linux

package runtime

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// The huge-page copy must keep every matrix byte for byte, including
// matrices that start and end off page boundaries.
func TestMoveToHugePagesKeepsBytes(t *testing.T) {
	t.Setenv("WOOLLY_HUGEPAGES", "1")
	const size = 20<<20 + 12345
	want := make([]byte, size)
	rand.New(rand.NewSource(1)).Read(want)
	path := filepath.Join(t.TempDir(), "w.bin")
	if err := os.WriteFile(path, want, 0o600); err != nil {
		t.Fatal(err)
	}
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	mapped, err := unix.Mmap(int(fh.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mapped)
	// Output and one layer of odd-sized, unaligned slices of the mapping.
	cuts := []int{0, 100, 5<<20 + 7, 5<<20 + 9, 9<<20 + 1, 12 << 20, 15<<20 + 3000, 18 << 20, size}
	w := &Weights{Layers: make([]Layer, 1)}
	l := &w.Layers[0]
	mats := []*Mat{&w.Output, &l.Wq, &l.Wk, &l.Wv, &l.Wo, &l.Wgate, &l.Wup, &l.Wdown}
	for i, m := range mats {
		m.Data = mapped[cuts[i]:cuts[i+1]]
	}
	release := moveToHugePages(w)
	if release == nil {
		t.Skip("transparent huge pages unavailable")
	}
	for i, m := range mats {
		if &m.Data[0] == &mapped[cuts[i]] {
			t.Errorf("matrix %d still in the file mapping", i)
		}
		if !bytes.Equal(m.Data, want[cuts[i]:cuts[i+1]]) {
			t.Errorf("matrix %d: bytes differ after the copy", i)
		}
	}
	// The dropped file pages read back from the page cache.
	if !bytes.Equal(mapped, want) {
		t.Error("file mapping changed")
	}
	if err := release(); err != nil {
		t.Error(err)
	}
}

// A dense model's matrices move to huge pages by default too, and
// WOOLLY_HUGEPAGES=0 keeps every matrix in the file mapping.
func TestMoveToHugePagesDefault(t *testing.T) {
	if thp, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil || bytes.Contains(thp, []byte("[never]")) {
		t.Skip("transparent huge pages unavailable")
	}
	for _, env := range []string{"0", ""} {
		t.Setenv("WOOLLY_HUGEPAGES", env)
		data := make([]byte, 20<<20)
		w := &Weights{Layers: make([]Layer, 1)}
		w.Output.Data = data
		release := moveToHugePages(w)
		moved := release != nil
		if moved {
			if err := release(); err != nil {
				t.Error(err)
			}
		}
		switch {
		case env == "0" && moved:
			t.Fatal("WOOLLY_HUGEPAGES=0: weights were copied out of the mapping")
		case env == "0" && &w.Output.Data[0] != &data[0]:
			t.Fatal("WOOLLY_HUGEPAGES=0: output matrix moved")
		case env == "" && !moved:
			t.Fatal("default: the weights were not moved to huge pages")
		case env == "" && &w.Output.Data[0] == &data[0]:
			t.Fatal("default: the output matrix stayed in the file mapping")
		}
	}
}

// A mixture-of-experts model's matrices move to huge pages by default, and
// WOOLLY_HUGEPAGES=0 keeps them in the mapping.
func TestMoveToHugePagesMoE(t *testing.T) {
	for _, env := range []string{"", "0"} {
		t.Setenv("WOOLLY_HUGEPAGES", env)
		data := make([]byte, 24<<20)
		for i := range data {
			data[i] = byte(i * 7)
		}
		want := bytes.Clone(data) // (the move drops the source pages: this is heap memory, they read back as zeros)
		w := &Weights{Layers: make([]Layer, 1)}
		w.Output.Data = data[:4<<20]
		l := &w.Layers[0]
		l.ExpGate = []Mat{{Data: data[4<<20 : 12<<20]}, {Data: data[12<<20 : 20<<20]}}
		l.ExpUp = []Mat{{Data: data[20<<20:]}}
		release := moveToHugePages(w)
		moved := release != nil
		if env == "0" && moved {
			release()
			t.Fatal("WOOLLY_HUGEPAGES=0: weights were copied")
		}
		if env == "" {
			if !moved {
				t.Skip("transparent huge pages unavailable")
			}
			if &l.ExpGate[1].Data[0] == &data[12<<20] || !bytes.Equal(l.ExpGate[1].Data, want[12<<20:20<<20]) {
				t.Error("expert matrix not moved, or its bytes differ")
			}
			if err := release(); err != nil {
				t.Error(err)
			}
		}
	}
}

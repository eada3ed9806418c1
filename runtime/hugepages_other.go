//go:build !linux

package runtime

// moveToHugePages leaves the weights in the file mapping (see the Linux
// version).
func moveToHugePages(w *Weights) func() error { return nil }

// wantHugePages is false: no transparent huge pages here.
func wantHugePages() bool { return false }

// adviseHugePages does nothing here.
func adviseHugePages(b []byte) {}

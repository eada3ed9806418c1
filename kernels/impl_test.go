package kernels

import (
	"os"
	"slices"
	"testing"
)

// TestExpectedImpl lets CI assert which kernel set actually ran: with
// WOOLLY_EXPECT_IMPL=neon-dotprod (say) the test fails unless that is the
// default set, so an emulator run without the SIMD kernels cannot pass
// silently. Without the variable it only checks the set list.
func TestExpectedImpl(t *testing.T) {
	av := Available()
	if len(av) == 0 || av[0] != "ref" {
		t.Fatalf("Available() = %v, want \"ref\" first", av)
	}
	if !slices.Contains(av, Impl()) {
		t.Fatalf("Impl() = %q is not in Available() = %v", Impl(), av)
	}
	want := os.Getenv("WOOLLY_EXPECT_IMPL")
	if want == "" {
		t.Skipf("WOOLLY_EXPECT_IMPL not set; active kernel set %q of %v", Impl(), av)
	}
	if os.Getenv("WOOLLY_KERNELS") == "" && Impl() != av[len(av)-1] {
		t.Errorf("default kernel set is %q, want the best available %q", Impl(), av[len(av)-1])
	}
	if Impl() != want {
		t.Fatalf("active kernel set is %q (available %v), want %q", Impl(), av, want)
	}
	t.Logf("active kernel set %q (available %v)", Impl(), av)
}

//go:build !cgo

package kernels

// Without cgo the C kernels are not built. This line makes the build stop
// here with one error that says so, instead of "undefined: kernels.X" in
// every package that calls them.
var _ = Woolly_needs_cgo__build_with_CGO_ENABLED_1_and_a_C_compiler

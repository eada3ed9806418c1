// Package csrc compiles Woolly's C kernels (kernels.h). It exports nothing to
// Go: package kernels includes ../csrc/kernels.h and calls the C functions,
// which the linker takes from this package. Keeping the C sources in a
// package of their own lets the Go build cache track edits to them.
//
// ISA extensions are enabled per function with target attributes
// (*_avx2_amd64.c); never add -march or -mfma here.
package csrc

/*
#cgo CFLAGS: -O2 -std=c11
#cgo LDFLAGS: -lm
*/
import "C"

// Package dotprod compiles Woolly's arm64 kernels that need the dotprod
// extension (vdotq_s32). The whole package is built with
// -march=armv8.2-a+dotprod because clang only exposes the intrinsic when the
// feature is on for the whole file; the kernels are chosen at run time, and
// only on CPUs that report dotprod (see csrc/dispatch_arm64.c). On other
// architectures the package is empty.
//
// Like package csrc, it only compiles C; package kernels is the one caller.
package dotprod

// #cgo CFLAGS: -O2 -std=c11
// #cgo arm64 CFLAGS: -march=armv8.2-a+dotprod
import "C"

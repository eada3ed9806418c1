package csrc

import _ "embed" // for the build-cache dependency below

// dot_neon_arm64.c includes dotprod/dot_body_arm64.h, a file of another
// package directory, which the Go build cache does not hash for this
// package. Embedding it makes edits to the shared kernel body rebuild csrc
// too (the linker drops the unused string).
//
//go:embed dotprod/dot_body_arm64.h
var dotBodyArm64 string

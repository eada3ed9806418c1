// Package ggml holds the facts of the ggml tensor types that GGUF files
// store, in pure Go: type ids and names, block sizes, the activation type
// each weight type's dot product takes, llama.cpp's file-type names
// (general.file_type), and the f16/bf16 <-> f32 conversions.
//
// It is the one owner of these facts: loader, quant, synth and kernels use
// it, and kernels' tests check the C tables in csrc (block structs,
// k_act_type, k_row_bytes, k_f16_to_f32) against it. It builds without cgo.
package ggml

package kernels

/*
#include "../csrc/kernels.h"
*/
import "C"

import "fmt"

// Packing describes a weight matrix that Pack has repacked into groups of
// Rows() rows interleaved for the kernel set that packed it (one activation
// load feeds a whole group; each group is one sequential stream). A packed
// group takes exactly the bytes of the rows it replaces, so row addressing
// is unchanged for whole groups; rows after the last whole group stay as
// they are. The zero Packing is "not packed".
type Packing struct {
	impl int // C impl id of the set that packed it
	rows int // G; 0: not packed
}

// Rows is the number of rows per packed group (0: not packed).
func (p Packing) Rows() int { return p.rows }

// PackRows is the group size the active kernel set packs weight type t in,
// or 0 when it keeps t unpacked.
func PackRows(t Type) int {
	if !t.Known() || t == Q8_K {
		return 0
	}
	return int(C.k_pack_rows(C.int(implID()), C.int(t)))
}

// Pack copies nrows rows of type t (n elements, rowBytes apart) from src to
// dst in the active kernel set's packed layout: whole groups of PackRows(t)
// rows interleaved, the rows after them copied as they are. dst must hold
// as many bytes as src's rows and must not overlap src.
func Pack(t Type, n int, src []byte, rowBytes, nrows int, dst []byte) (Packing, error) {
	g := PackRows(t)
	if g == 0 {
		return Packing{}, fmt.Errorf("kernels.Pack: kernel set %s has no packed layout for %v", Impl(), t)
	}
	if _, _, err := checkWeights("Pack", t, n, src, rowBytes, 0, nrows); err != nil {
		return Packing{}, err
	}
	need := need2D(nrows, rowBytes, rowBytes)
	if int64(len(src)) < need {
		return Packing{}, fmt.Errorf("kernels.Pack: src has %d bytes, %d rows of %d need %d", len(src), nrows, rowBytes, need)
	}
	if int64(len(dst)) < need {
		return Packing{}, fmt.Errorf("kernels.Pack: dst has %d bytes, %d rows need %d", len(dst), nrows, need)
	}
	if nrows > 0 && overlaps(src[:need], dst[:need]) {
		return Packing{}, fmt.Errorf("kernels.Pack: dst overlaps src")
	}
	p := Packing{impl: implID(), rows: g}
	if nrows == 0 {
		return p, nil
	}
	if C.k_pack(C.int(p.impl), C.int(t), C.int64_t(n), bptr(src), C.size_t(rowBytes), C.int64_t(nrows), bptr(dst)) != 0 {
		return Packing{}, fmt.Errorf("kernels.Pack: %v rejected by the C kernel", t)
	}
	return p, nil
}

func overlaps(a, b []byte) bool {
	pa, pb := uintptrOf(a), uintptrOf(b)
	return pa < pb+uintptr(len(b)) && pb < pa+uintptr(len(a))
}

// checkPacked validates the packing and row range of a packed product.
func checkPacked(op string, p Packing, wt Type, nrows, r0, r1 int) error {
	if p.rows == 0 {
		return fmt.Errorf("kernels.%s: matrix is not packed", op)
	}
	// Under the set that packed it the layout is the active one (Pack made p
	// only after that set packed wt): ask C, a cgo call per product, only
	// when the active set is another one.
	if impl := implID(); p.impl != impl && C.k_pack_same(C.int(p.impl), C.int(impl), C.int(wt)) == 0 {
		return fmt.Errorf("kernels.%s: %v matrix packed by another kernel set than the active %s (repack it)", op, wt, Impl())
	}
	if r1 > nrows {
		return fmt.Errorf("kernels.%s: rows [%d, %d) past the matrix's %d rows", op, r0, r1, nrows)
	}
	if r0%p.rows != 0 || (r1%p.rows != 0 && r1 != nrows) {
		return fmt.Errorf("kernels.%s: rows [%d, %d) split a packed group of %d rows", op, r0, r1, p.rows)
	}
	return nil
}

// MatVecPacked is MatVec over a matrix of nrows rows packed by Pack (p):
// r0 must be a multiple of p.Rows(), r1 too or nrows. The results are the
// bits MatVec gives on the unpacked rows.
func MatVecPacked(p Packing, wt Type, n int, w []byte, rowBytes, nrows int, a []byte, y []float32, r0, r1 int) {
	matVec("MatVecPacked", &p, nrows, wt, n, w, rowBytes, a, y, r0, r1)
}

// MatMulQPacked is MatMulQ over a matrix of nrows rows packed by Pack (p),
// with MatVecPacked's row-range rule; the results are MatMulQ's bits.
func MatMulQPacked(p Packing, wt Type, n int, w []byte, rowBytes, nrows int, r0, r1 int, a []byte, aRowBytes int, ntok int,
	y []float32, yStride int) {
	matMul("MatMulQPacked", &p, nrows, wt, n, w, rowBytes, r0, r1, a, aRowBytes, ntok, y, yStride)
}

func uintptrOf(b []byte) uintptr {
	if len(b) == 0 {
		return 0
	}
	return uintptr(bptr(b))
}

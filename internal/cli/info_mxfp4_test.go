package cli

import (
	"strings"
	"testing"

	"github.com/woolly-llm/woolly/kernels"
	"github.com/woolly-llm/woolly/loader"
)

// `woolly info` names MXFP4 tensors and the MXFP4_MOE file type; an MXFP4
// tensor whose rows are not whole blocks is one clear error.
func TestInfoMXFP4(t *testing.T) {
	w := loader.NewWriter()
	w.SetString("general.architecture", "gpt-oss")
	w.SetUint32("general.file_type", 38)
	if err := w.AddTensor("blk.0.ffn_up_exps.weight", kernels.MXFP4, []int64{64, 4, 2}, make([]byte, 8*2*17)); err != nil {
		t.Fatal(err)
	}
	text := infoOf(t, w)
	for _, want := range []string{"MXFP4_MOE (38)", "MXFP4: 1", "blk.0.ffn_up_exps.weight"} {
		if !strings.Contains(text, want) {
			t.Errorf("info output lacks %q:\n%s", want, text)
		}
	}
	found := false
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "blk.0.ffn_up_exps.weight" && f[1] == "MXFP4" && f[len(f)-1] == "272" {
			found = true
		}
	}
	if !found {
		t.Errorf("no tensor line naming MXFP4 with 272 bytes:\n%s", text)
	}

	// rows of 48 values: not a whole number of 32-element blocks
	bad := loader.NewWriter()
	bad.SetString("general.architecture", "gpt-oss")
	if err := bad.AddTensor("w", kernels.MXFP4, []int64{48, 2}, make([]byte, 51)); err == nil {
		t.Error("the writer accepted an MXFP4 row of 48")
	} else if !strings.Contains(err.Error(), "MXFP4: row length 48 is not a multiple of the block size 32") {
		t.Errorf("writer error %q", err)
	}
}

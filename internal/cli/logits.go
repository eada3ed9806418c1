package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// f32 marshals a float32 with the shortest text that parses back to it.
type f32 float32

func (v f32) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, float64(v), 'g', -1, 32), nil
}

// parseTokenIDs parses "1,2,3".
func parseTokenIDs(s string) ([]int32, error) {
	var ids []int32
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		v, err := strconv.ParseInt(p, 10, 32)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("bad token id %q", p)
		}
		ids = append(ids, int32(v))
	}
	if len(ids) == 0 {
		return nil, errors.New("no token ids")
	}
	return ids, nil
}

// topLogits returns the n largest entries of row, sorted by logit
// descending, ties by id.
func topLogits(row []float32, n int) [][2]any {
	idx := make([]int, len(row))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool {
		x, y := row[idx[a]], row[idx[b]]
		return x > y || (x == y && idx[a] < idx[b])
	})
	n = min(n, len(row))
	out := make([][2]any, n)
	for i := 0; i < n; i++ {
		out[i] = [2]any{idx[i], f32(row[idx[i]])}
	}
	return out
}

func runLogits(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("logits", stderr)
	model := modelFlag(fs)
	tokens := fs.String("tokens", "", "comma-separated token `ids` to evaluate")
	prompt := fs.String("p", "", "prompt `text` (tokenized as run does)")
	top := fs.Int("top", 10, "entries per position")
	threads := threadsFlag(fs)
	attn := attentionFlag(fs)
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseModelFlags(fs, args, model); err != nil {
		return err
	}
	if (*tokens == "") == (*prompt == "") {
		return usageError(fs, "give exactly one of --tokens ID,ID,... and -p TEXT")
	}
	if *top < 1 {
		return usageError(fs, "--top %d: must be at least 1", *top)
	}
	if err := checkThreads(fs, *threads); err != nil {
		return err
	}
	m, err := loadForEval(*model, *threads, *attn)
	if err != nil {
		return err
	}
	defer m.Close()
	var ids []int32
	if *tokens != "" {
		if ids, err = parseTokenIDs(*tokens); err != nil {
			return err
		}
	} else {
		tk := m.Tokenizer()
		if ids, err = tk.Encode(*prompt, tk.AddBOS(), true); err != nil {
			return err
		}
		if len(ids) == 0 {
			return errors.New("the prompt has no tokens")
		}
	}
	// One sequence, evaluated whole: at most the model's training context.
	if limit := m.Info().ContextLength; limit > 0 && len(ids) > limit {
		what := "-p"
		if *tokens != "" {
			what = "--tokens"
		}
		return fmt.Errorf("%s has %d tokens, more than the model's context of %d", what, len(ids), limit)
	}
	s, err := m.NewSession(len(ids))
	if err != nil {
		return err
	}
	logits, err := s.Eval(ids, true)
	if err != nil {
		return err
	}
	nv := len(logits) / len(ids)
	type position struct {
		Top [][2]any `json:"top"`
	}
	out := struct {
		Tokens    []int32    `json:"tokens"`
		Positions []position `json:"positions"`
	}{Tokens: ids}
	for i := range ids {
		out.Positions = append(out.Positions, position{topLogits(logits[i*nv:(i+1)*nv], *top)})
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(out)
	}
	tk := m.Tokenizer()
	var b strings.Builder
	for i, id := range ids {
		fmt.Fprintf(&b, "%d\t%d\t%q\t", i, id, tk.Piece(id))
		for j, e := range out.Positions[i].Top {
			if j > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%d:%s", e[0], strconv.FormatFloat(float64(e[1].(f32)), 'g', -1, 32))
		}
		b.WriteByte('\n')
	}
	_, err = io.WriteString(stdout, b.String())
	return err
}

// shortF64 widens a float32 default to the float64 with the same shortest
// decimal text (0.8, not 0.800000011920929), so flag help prints it as
// written; converting back to float32 gives the same value.
func shortF64(v float32) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(float64(v), 'g', -1, 32), 64)
	return f
}

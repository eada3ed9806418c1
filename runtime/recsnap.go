package runtime

// Checkpoints of the recurrent state. A Gated DeltaNet layer keeps one state
// for the whole sequence, which cannot be rolled back to an earlier position
// the way attention KV rows can be cut off. So that a follow-up request that
// shares only part of a conversation (a chat template that renders the last
// assistant turn differently once it is history, say) need not re-evaluate
// the whole prompt, Generate keeps copies of the state at checkpoint
// positions: every recCheckpointEvery tokens of a prompt, recTailCheckpoint
// tokens before its end and at its end (the prompt's pieces are split
// there). The one just before the end serves the common chat case of a
// template whose generation prompt (an opened thinking block, say) is not
// how the assistant turn renders once it is history. A later prompt that diverges
// at position p restores the last checkpoint at or before p, cuts the KV
// rows there and evaluates from it. The state at a position depends only on
// the tokens before it, so the result is the same as evaluating from scratch.
//
// Memory is bounded: a session keeps its recMaxCheckpoints most recent
// checkpoints (older ones are dropped). For Qwen3.5-0.8B's shapes (18 linear
// layers, 16 value heads of 128, 6144 conv channels of 3 taps) a checkpoint
// is 18 * (16*128*128 + 6144*3) * 4 bytes = 20,201,472 bytes (19.3 MiB, the
// f16 KV rows of about 1,640 positions), so at most 77 MiB per session.
// Snapshots in the model's prefix cache carry the session's checkpoints
// (shared, they are never modified) and count their bytes.

import (
	"fmt"
	"strconv"
	"strings"
)

// recCheckpointEvery is the spacing of the prompt checkpoints (llama.cpp's
// chunk size for this layer's prompt form).
const recCheckpointEvery = 64

// recTailCheckpoint is how many tokens before the end of a prompt the
// second-to-last checkpoint is taken.
const recTailCheckpoint = 8

// recMaxCheckpoints is the number of checkpoints a session keeps.
const recMaxCheckpoints = 4

// recCheckpoint is the recurrent state after the first pos tokens. It is
// immutable once taken.
type recCheckpoint struct {
	pos int
	rec *recurrentState
}

// checkpoint keeps a copy of the recurrent state at the current position
// (nothing for models without one, an empty sequence, or a position that
// already has one), dropping the oldest beyond recMaxCheckpoints.
func (s *Session) checkpoint() {
	if s.rec == nil || s.pos == 0 {
		return
	}
	if k := len(s.ckpts); k > 0 && s.ckpts[k-1].pos >= s.pos {
		return
	}
	s.ckpts = append(s.ckpts, recCheckpoint{pos: s.pos, rec: s.rec.clone()})
	if k := len(s.ckpts) - recMaxCheckpoints; k > 0 {
		s.ckpts = append(s.ckpts[:0], s.ckpts[k:]...)
	}
}

// recPoint is the longest prefix of at most n positions the session can
// keep without evaluating: n itself when there is no recurrent state or n
// is the current position, else the last checkpoint at or before n (0 when
// there is none).
func (s *Session) recPoint(n int) int {
	if s.rec == nil || n == s.pos {
		return n
	}
	return lastCheckpoint(s.ckpts, n).pos
}

// lastCheckpoint is the checkpoint with the largest position at most n (the
// zero checkpoint, position 0, when there is none).
func lastCheckpoint(cs []recCheckpoint, n int) recCheckpoint {
	for i := len(cs) - 1; i >= 0; i-- {
		if cs[i].pos <= n {
			return cs[i]
		}
	}
	return recCheckpoint{}
}

// rollbackRec sets the recurrent state to the one after the first pos
// tokens, which must be 0, the current position or a checkpoint's, and drops
// the checkpoints after it.
func (s *Session) rollbackRec(pos int) error {
	if pos == s.pos {
		return nil
	}
	if pos == 0 {
		s.rec.clear()
		s.ckpts = s.ckpts[:0]
		return nil
	}
	c := lastCheckpoint(s.ckpts, pos)
	if c.pos != pos {
		return fmt.Errorf("truncate to %d: %s keeps a recurrent state that can be rolled back only to 0, %d or a checkpoint (%s)", pos, s.model.cfg.Arch, s.pos, s.checkpointList())
	}
	s.rec.copyFrom(c.rec)
	i := 0
	for i < len(s.ckpts) && s.ckpts[i].pos <= pos {
		i++
	}
	s.ckpts = s.ckpts[:i]
	return nil
}

func (s *Session) checkpointList() string {
	if len(s.ckpts) == 0 {
		return "none kept"
	}
	var b strings.Builder
	for i, c := range s.ckpts {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(c.pos))
	}
	return b.String()
}

// Checkpoints are the positions at which the session keeps a copy of its
// recurrent state (none for models without one): positions Truncate and a
// later Generate can go back to without evaluating from the start.
func (s *Session) Checkpoints() []int {
	out := make([]int, len(s.ckpts))
	for i, c := range s.ckpts {
		out[i] = c.pos
	}
	return out
}

// isCheckpoint reports whether Generate keeps a checkpoint at position pos
// of a prompt that ends at end.
func isCheckpoint(pos, end int) bool {
	return pos == end || pos == end-recTailCheckpoint || pos%recCheckpointEvery == 0
}

// recPieceEnd shortens a prompt piece of n tokens starting at the session's
// position so that it ends at the first checkpoint position inside it whose
// checkpoint will be among those kept once the prompt (ending at end) is
// evaluated: the 64-token boundaries within the last
// recCheckpointEvery*(recMaxCheckpoints-2) tokens before end, and
// recTailCheckpoint tokens before end.
func (s *Session) recPieceEnd(n, end int) int {
	if s.rec == nil {
		return n
	}
	first := max(s.pos, end-recCheckpointEvery*(recMaxCheckpoints-2))
	next := (first/recCheckpointEvery + 1) * recCheckpointEvery
	if tail := end - recTailCheckpoint; tail > s.pos && tail < next {
		next = tail
	}
	if next-s.pos < n {
		return next - s.pos
	}
	return n
}

package cli

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress reports a long write (quantize, synth) on stderr: a bar when
// stderr is a terminal, otherwise a plain line every few seconds (never
// carriage-return frames in a pipe or a log file), nothing when off.
type progress struct {
	mu    sync.Mutex
	desc  string
	w     io.Writer
	off   bool
	tty   bool
	bar   *progressbar.ProgressBar // tty only, made at the first update
	every time.Duration            // plain mode: at most one line per this
	start time.Time
	last  time.Time // last plain line
	now   func() time.Time
}

// newProgress picks the form for w: a bar if w is a terminal.
func newProgress(w io.Writer, desc string, off bool) *progress {
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	return &progress{desc: desc, w: w, off: off, tty: tty, every: 5 * time.Second, now: time.Now}
}

// update records done of total bytes.
func (p *progress) update(done, total int64) {
	if p.off {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if p.start.IsZero() {
		p.start, p.last = now, now
	}
	if p.tty {
		if p.bar == nil {
			p.bar = progressbar.NewOptions64(total,
				progressbar.OptionSetWriter(p.w),
				progressbar.OptionSetDescription(p.desc),
				progressbar.OptionShowBytes(true),
				progressbar.OptionSetWidth(30),
				progressbar.OptionThrottle(200*time.Millisecond),
				progressbar.OptionSetPredictTime(true),
			)
		}
		p.bar.Set64(done)
		return
	}
	if now.Sub(p.last) < p.every && done < total {
		return
	}
	p.last = now
	// The rate is over the whole run so far: steady, unlike a rate between
	// two nearby writes.
	rate := 0.0
	if el := now.Sub(p.start).Seconds(); el > 0 {
		rate = float64(done) / el / (1 << 20)
	}
	pct := 100.0
	if total > 0 {
		pct = 100 * float64(done) / float64(total)
	}
	fmt.Fprintf(p.w, "%s: %.0f%% (%.1f of %.1f MiB, %.1f MiB/s)\n", p.desc, pct,
		float64(done)/(1<<20), float64(total)/(1<<20), rate)
}

// finish ends the bar's line (terminal only).
func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Finish()
		fmt.Fprintln(p.w)
	}
}
